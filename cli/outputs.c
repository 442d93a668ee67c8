/* The output files of a run (cli/outputs.h). */
#include "outputs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "isa/npy.h"
#include "sim/profile.h"
#include "tensors.h"

int cli_outputs_init(cli_outputs *o, int max) {
    memset(o, 0, sizeof *o);
    o->items = calloc((size_t)max + 1, sizeof *o->items);
    if (!o->items) {
        cli_message("out of memory");
        return -1;
    }
    o->max = max;
    return 0;
}

static cli_output *next_item(cli_outputs *o, const char *path) {
    if (o->count >= o->max) return NULL;
    cli_output *it = &o->items[o->count++];
    memset(it, 0, sizeof *it);
    it->path = path;
    return it;
}

void cli_outputs_add(cli_outputs *o, const char *path, const nx_tensor_decl *decl, const uint8_t *data) {
    cli_output *it = next_item(o, path);
    if (!it) return;
    it->decl = decl;
    it->data = data;
}

void cli_outputs_add_stream(cli_outputs *o, const char *path, const char *what, cli_stream_fn fn,
                            const void *ctx) {
    cli_output *it = next_item(o, path);
    if (!it) return;
    it->what = what;
    it->stream = fn;
    it->ctx = ctx;
}

static int write_trace(FILE *f, const char *path, const void *ctx, nx_error *err) {
    const cli_profile_src *s = ctx;
    return nx_profile_write_trace_to(f, path, s->m, s->prog, s->sim, err);
}

static int write_timeline(FILE *f, const char *path, const void *ctx, nx_error *err) {
    const cli_profile_src *s = ctx;
    return nx_profile_write_timeline_to(f, path, s->m, s->prog, s->sim, err);
}

void cli_outputs_add_profile(cli_outputs *o, const char *trace, const char *timeline, const cli_profile_src *src) {
    if (trace) cli_outputs_add_stream(o, trace, "profile", write_trace, src);
    if (timeline) cli_outputs_add_stream(o, timeline, "timeline", write_timeline, src);
}

const char *cli_outputs_stage(cli_outputs *o, const char *path, const char *tmp) {
    cli_output *it = next_item(o, path);
    if (!it) {
        cli_message("%s: too many outputs", path);
        return NULL;
    }
    nx_error err;
    it->owned_path = strdup(path);
    it->path = it->owned_path;
    int rc = !it->owned_path ? nx_fail(&err, "out of memory")
             : tmp          ? nx_atomic_open_at(&it->af, path, tmp, &err)
                            : nx_atomic_open(&it->af, path, &err);
    if (rc != 0) {
        cli_message("%s", err.msg);
        free(it->owned_path);
        o->count--;
        return NULL;
    }
    it->staged = 1;
    it->open = 1;
    return it->af.tmp;
}

int cli_outputs_serialize(cli_outputs *o) {
    nx_error err;
    for (int k = 0; k < o->count; k++) {
        cli_output *it = &o->items[k];
        if (!it->decl) continue;
        nx_npy view = cli_tensor_view(it->decl, it->data);
        if (nx_npy_serialize(&view, &it->bytes, &it->len, &err) != 0) {
            nx_quoted q;
            cli_message("%s: %s", nx_quote(&q, it->path, NX_QUOTE_PATH), err.msg);
            return -1;
        }
    }
    return 0;
}

static void abort_open(cli_outputs *o) {
    for (int k = 0; k < o->count; k++) {
        if (!o->items[k].open) continue;
        nx_atomic_abort(&o->items[k].af);
        o->items[k].open = 0;
    }
}

/* A file's own message ("PATH: cannot create: ...") prefixed by what the
 * output is ("timeline PATH: ..."), as the profile writers say it. */
static int file_error(const cli_output *it, nx_error *err) {
    if (!it->what) return -1;
    nx_error own = *err;
    return nx_fail(err, "%s %s", it->what, own.msg);
}

/* One output into its temporary. */
static int stage(cli_output *it, nx_error *err) {
    if (!it->open) {
        if (nx_atomic_open(&it->af, it->path, err) != 0) return file_error(it, err);
        it->open = 1;
    }
    if (it->stream) return it->stream(it->af.f, it->path, it->ctx, err);
    if (it->decl && it->len > 0 && fwrite(it->bytes, 1, it->len, it->af.f) != it->len) {
        nx_quoted q;
        return nx_fail(err, "%s: cannot write: %s", nx_quote(&q, it->path, NX_QUOTE_PATH),
                       strerror(errno ? errno : EIO));
    }
    return 0;
}

int cli_outputs_write(cli_outputs *o) {
    nx_error err;
    /* 1: every byte into the temporaries; everything that can fail for a
     * replaced file (write, flush, fsync) happens here */
    for (int k = 0; k < o->count; k++) {
        cli_output *it = &o->items[k];
        if (stage(it, &err) != 0 || (nx_atomic_sync(&it->af, &err) != 0 && file_error(it, &err))) {
            if (!it->af.f) it->open = 0; /* sync aborted it */
            cli_message("%s", err.msg);
            abort_open(o);
            return -1;
        }
    }
    /* 2: written-through outputs get their bytes (a device may refuse them:
     * /dev/full), then 3: the replaced files are renamed into place */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < o->count; k++) {
            cli_output *it = &o->items[k];
            if (!it->open || it->af.through != (pass == 0)) continue;
            it->open = 0;
            if (nx_atomic_commit(&it->af, &err) != 0) {
                file_error(it, &err);
                cli_message("%s", err.msg);
                abort_open(o);
                return -1;
            }
        }
    }
    return 0;
}

void cli_outputs_free(cli_outputs *o) {
    abort_open(o);
    for (int k = 0; o->items && k < o->count; k++) {
        free(o->items[k].bytes);
        free(o->items[k].owned_path);
    }
    free(o->items);
    memset(o, 0, sizeof *o);
}
