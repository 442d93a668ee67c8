/* Profiles (profile.h): the Chrome trace-event writer, streamed with stdio
 * (a million-record trace is hundreds of MB: it is never built in memory),
 * and the summary, as text or as JSON through cJSON. */
#include "profile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "../isa/asm.h"
#include "../isa/json_write.h"
#include "../isa/opcodes.h"
#include "../isa/strbuf.h"

#define QUEUE_TID_BASE 16
#define NONE UINT32_MAX

static int is_xfer(const nx_sim_record *rec) { return rec->engine == NX_ENG_SP && rec->queue >= 0; }

/* A zeroed log slot of an instruction that never ran (after an `end`): queue
 * 0 off the SP, which no real record has. Skipped everywhere. */
static int is_blank(const nx_sim_record *rec) { return rec->queue == 0 && rec->engine != NX_ENG_SP; }

static uint32_t track_tid(const nx_sim_record *rec) {
    return is_xfer(rec) ? QUEUE_TID_BASE + (uint32_t)rec->queue : rec->engine;
}

static const char *mnemonic(unsigned opcode) {
    const nx_opcode_info *info = nx_opcode_lookup(opcode);
    return info ? info->mnemonic : "?";
}

static const nx_insn *rec_insn(const nx_program *prog, const nx_sim_record *rec) {
    if (is_blank(rec) || rec->core >= prog->cores || rec->engine >= NX_ENG_COUNT) return NULL;
    const nx_stream *s = &prog->stream[rec->core][rec->engine];
    return rec->index < s->count ? &s->insns[rec->index] : NULL;
}

/* A finite number for JSON (NaN/Inf are not JSON). */
static double finite_or_zero(double v) { return isfinite(v) ? v : 0.0; }

/* ---- track layout: where each record's slice is drawn ---- */

typedef struct placed {
    double t;        /* start */
    uint32_t track;  /* core * 65536 + tid */
    uint32_t index;
    uint32_t id;
} placed;

static int placed_cmp(const void *pa, const void *pb) {
    const placed *a = pa, *b = pb;
    if (a->track != b->track) return a->track < b->track ? -1 : 1;
    if (a->t != b->t) return a->t < b->t ? -1 : 1;
    if (a->index != b->index) return a->index < b->index ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

typedef struct layout {
    placed *order;   /* records by track, then start (blanks left out) */
    size_t count;
    double *s, *e;   /* drawn slice per record */
    double *ws;      /* start of its wait slice, or NAN */
    double *bind;    /* a time inside its slice and outside its children's */
} layout;

/* Slices on a track must nest. A record is a child of the current top-level
 * slice when it lies wholly inside it; otherwise it starts the next
 * top-level slice and the current one is cut at its start. Children are cut
 * at the next child's start and at their parent's (possibly cut) end. */
static void layout_track(const nx_sim_record *log, layout *L, size_t lo, size_t hi) {
    double prev_end = -INFINITY;
    size_t i = lo;
    while (i < hi) {
        uint32_t a = L->order[i].id;
        double s = log[a].t_start_ns, e = log[a].t_end_ns;
        if (!(e >= s)) e = s;
        size_t j = i + 1;
        while (j < hi && log[L->order[j].id].t_start_ns >= s && log[L->order[j].id].t_end_ns <= e) j++;
        if (j < hi && log[L->order[j].id].t_start_ns < e) e = log[L->order[j].id].t_start_ns;
        L->s[a] = s;
        L->e[a] = e;
        /* flows bind to the deepest slice at their time: pick a point of
         * the parent before its first child, or after its last one */
        L->bind[a] = (s + e) / 2;
        if (j > i + 1) {
            double first = log[L->order[i + 1].id].t_start_ns;
            double last = log[L->order[j - 1].id].t_end_ns;
            L->bind[a] = first > s ? (s + first) / 2 : last < e ? (last + e) / 2 : s;
        }
        double ready = log[a].t_ready_ns;
        if (ready < prev_end) ready = prev_end;
        L->ws[a] = ready < s ? ready : NAN;
        for (size_t k = i + 1; k < j; k++) {
            uint32_t c = L->order[k].id;
            double cs = log[c].t_start_ns, ce = log[c].t_end_ns;
            if (ce > e) ce = e;
            if (k + 1 < j && log[L->order[k + 1].id].t_start_ns < ce) ce = log[L->order[k + 1].id].t_start_ns;
            L->s[c] = cs;
            L->e[c] = ce > cs ? ce : cs;
            L->ws[c] = NAN;
            L->bind[c] = (L->s[c] + L->e[c]) / 2;
        }
        prev_end = e;
        i = j;
    }
}

static void layout_free(layout *L) {
    free(L->order);
    free(L->s);
    free(L->e);
    free(L->ws);
    free(L->bind);
}

static int layout_build(const nx_sim_result *r, layout *L) {
    size_t n = r->log_count ? r->log_count : 1;
    L->order = malloc(n * sizeof *L->order);
    L->s = malloc(n * sizeof *L->s);
    L->e = malloc(n * sizeof *L->e);
    L->ws = malloc(n * sizeof *L->ws);
    L->bind = malloc(n * sizeof *L->bind);
    if (!L->order || !L->s || !L->e || !L->ws || !L->bind) return -1;
    L->count = 0;
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (is_blank(rec)) continue;
        L->order[L->count++] = (placed){rec->t_start_ns, (uint32_t)rec->core * 65536u + track_tid(rec),
                                        rec->index, (uint32_t)i};
    }
    qsort(L->order, L->count, sizeof *L->order, placed_cmp);
    for (size_t lo = 0; lo < L->count;) {
        size_t hi = lo + 1;
        while (hi < L->count && L->order[hi].track == L->order[lo].track) hi++;
        layout_track(r->log, L, lo, hi);
        lo = hi;
    }
    return 0;
}

/* ---- flows: which increment satisfied which wait ---- */

typedef struct inc_entry {
    uint32_t core_sem;  /* core * 256 + sem */
    uint32_t id;
    uint64_t seq;
    uint64_t total;     /* semaphore value after this increment */
} inc_entry;

static int inc_cmp(const void *pa, const void *pb) {
    const inc_entry *a = pa, *b = pb;
    if (a->core_sem != b->core_sem) return a->core_sem < b->core_sem ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

typedef struct flow {
    uint32_t from, to;  /* record ids */
    uint32_t sem;       /* semaphore index, or NONE for a barrier */
} flow;

typedef struct flows {
    flow *v;
    size_t n, cap;
} flows;

static int flows_add(flows *f, uint32_t from, uint32_t to, uint32_t sem) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? f->cap * 2 : 256;
        flow *grown = realloc(f->v, cap * sizeof *grown);
        if (!grown) return -1;
        f->v = grown;
        f->cap = cap;
    }
    f->v[f->n++] = (flow){from, to, sem};
    return 0;
}

/* Semaphores only grow, so the increment that satisfied "sem >= V" is the
 * first whose running total reaches V (numbered no later than the wait). */
static int find_sem_flows(const nx_program *prog, const nx_sim_result *r, flows *out) {
    size_t n_inc = 0;
    int have_issue_records = 0;
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        const nx_insn *insn = rec_insn(prog, rec);
        if (!insn) continue;
        if (rec->inc_seq && insn->inc_sem != NX_SEM_NONE && insn->opcode != NX_OP_CORE_BARRIER) n_inc++;
        if (rec->engine == NX_ENG_SP && rec->queue < 0 &&
            (insn->opcode == NX_OP_DMA_COPY || insn->opcode == NX_OP_DMA_TRANSPOSE))
            have_issue_records = 1;
    }
    inc_entry *inc = malloc((n_inc ? n_inc : 1) * sizeof *inc);
    if (!inc) return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        const nx_insn *insn = rec_insn(prog, rec);
        if (insn && rec->inc_seq && insn->inc_sem != NX_SEM_NONE && insn->opcode != NX_OP_CORE_BARRIER)
            inc[k++] = (inc_entry){(uint32_t)rec->core * 256u + insn->inc_sem, (uint32_t)i, rec->inc_seq,
                                   insn->inc_amount};
    }
    qsort(inc, n_inc, sizeof *inc, inc_cmp);
    for (size_t j = 1; j < n_inc; j++)
        if (inc[j].core_sem == inc[j - 1].core_sem) inc[j].total += inc[j - 1].total;
    int status = 0;
    for (size_t i = 0; i < r->log_count && status == 0; i++) {
        const nx_sim_record *rec = &r->log[i];
        const nx_insn *insn = rec_insn(prog, rec);
        if (!insn || !rec->wait_seq || insn->wait_sem == NX_SEM_NONE || insn->opcode == NX_OP_CORE_BARRIER)
            continue;
        if (is_xfer(rec) && have_issue_records) continue; /* its wait is the issue's */
        uint32_t key = (uint32_t)rec->core * 256u + insn->wait_sem;
        size_t lo = 0, hi = n_inc;
        while (lo < hi) { /* first entry of key whose total reaches the value */
            size_t mid = lo + (hi - lo) / 2;
            if (inc[mid].core_sem < key || (inc[mid].core_sem == key && inc[mid].total < insn->wait_value))
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < n_inc && inc[lo].core_sem == key && inc[lo].seq <= rec->wait_seq)
            status = flows_add(out, inc[lo].id, (uint32_t)i, insn->wait_sem);
    }
    free(inc);
    return status;
}

/* The k-th core_barrier of each core (by start time) meets the k-th of every
 * other core: an arrow from each to the others. */
static int find_barrier_flows(const nx_sim_result *r, uint32_t cores, flows *out) {
    size_t n = 0;
    for (size_t i = 0; i < r->log_count; i++) n += r->log[i].opcode == NX_OP_CORE_BARRIER && !is_blank(&r->log[i]);
    if (n == 0 || cores < 2) return 0;
    placed *v = malloc(n * sizeof *v);
    if (!v) return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->log_count; i++)
        if (r->log[i].opcode == NX_OP_CORE_BARRIER && !is_blank(&r->log[i]))
            v[k++] = (placed){r->log[i].t_start_ns, r->log[i].core, r->log[i].index, (uint32_t)i};
    qsort(v, n, sizeof *v, placed_cmp); /* by core, then start */
    size_t begin[NX_MAX_CORES + 1] = {0};
    for (size_t i = 0; i < n; i++)
        if (v[i].track < NX_MAX_CORES) begin[v[i].track + 1]++;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) begin[c + 1] += begin[c];
    int status = 0;
    for (uint32_t a = 0; a < NX_MAX_CORES && status == 0; a++)
        for (uint32_t b = 0; b < NX_MAX_CORES && status == 0; b++) {
            if (a == b) continue;
            size_t na = begin[a + 1] - begin[a], nb = begin[b + 1] - begin[b];
            for (size_t j = 0; j < na && j < nb && status == 0; j++)
                status = flows_add(out, v[begin[a] + j].id, v[begin[b] + j].id, NONE);
        }
    free(v);
    return status;
}

/* ---- writing ----
 * A trace has hundreds of bytes per record and may have millions of them, so
 * events are assembled by hand (no printf on the hot path) in an nx_strbuf
 * (isa/strbuf.h) written out whenever it passes 64 KiB, and the operand text
 * of an instruction is reused when the next record runs an identical
 * instruction (loops, issue + transfer pairs). */

#define W_FLUSH_BYTES (1u << 16)

typedef struct wbuf {
    FILE *f;
    int bad;
    nx_insn cached;      /* the instruction whose args text is in `args` */
    int cache_valid;
    nx_strbuf args;      /* the cached instruction's args text */
    nx_strbuf out;       /* text not yet written to f */
} wbuf;

static void w_flush(wbuf *w) {
    if (w->out.failed) w->bad = 1;
    if (w->out.len && fwrite(w->out.s, 1, w->out.len, w->f) != w->out.len) w->bad = 1;
    nx_sb_clear(&w->out);
}

static void w_mem(wbuf *w, const char *s, size_t len) {
    nx_sb_append(&w->out, s, len);
    if (w->out.len >= W_FLUSH_BYTES) w_flush(w);
}

static void w_str(wbuf *w, const char *s) { w_mem(w, s, strlen(s)); }

static void w_u64(wbuf *w, uint64_t v) {
    char t[24];
    int i = (int)sizeof t;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    w_mem(w, t + i, sizeof t - (size_t)i);
}

/* v / 1000 with exactly three decimals ("12.345", "-0.007"). */
static void w_fixed3(wbuf *w, int64_t v) {
    uint64_t u = v < 0 ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
    if (v < 0) w_mem(w, "-", 1);
    w_u64(w, u / 1000);
    char frac[4] = {'.', (char)('0' + u / 100 % 10), (char)('0' + u / 10 % 10), (char)('0' + u % 10)};
    w_mem(w, frac, 4);
}

/* A JSON number's worth of a double, rounded to an integer (0 if not finite
 * or out of range). */
static int64_t whole(double v) {
    v = finite_or_zero(v);
    return v > 9e18 || v < -9e18 ? 0 : (int64_t)llround(v);
}

static void w_json(wbuf *w, const char *s) {
    nx_json_string(&w->out, s);
    if (w->out.len >= W_FLUSH_BYTES) w_flush(w);
}

/* ,"key":value with value a time in ns drawn as microseconds at 1 ns
 * resolution (ts and dur): thousandths of a microsecond are nanoseconds. */
static void w_us(wbuf *w, const char *key, int64_t ns) {
    w_str(w, ",\"");
    w_str(w, key);
    w_str(w, "\":");
    w_fixed3(w, ns);
}

/* Times are drawn at 1 ns resolution; rounding start and end (not the
 * duration) keeps nested slices nested and neighbours apart. */
static void w_span(wbuf *w, double start_ns, double end_ns) {
    int64_t s = whole(start_ns), e = whole(end_ns);
    w_us(w, "ts", s);
    w_us(w, "dur", e > s ? e - s : 0);
}

static void w_head(wbuf *w, const char *name, const char *cat, const char *ph, uint32_t pid, uint32_t tid) {
    w_str(w, ",\n{\"name\":");
    w_json(w, name);
    w_str(w, ",\"cat\":\"");
    w_str(w, cat);
    w_str(w, "\",\"ph\":\"");
    w_str(w, ph);
    w_str(w, "\",\"pid\":");
    w_u64(w, pid);
    w_str(w, ",\"tid\":");
    w_u64(w, tid);
}

static void w_meta(wbuf *w, int *first, const char *what, uint32_t pid, int tid, const char *key,
                   const char *text, uint64_t number) {
    w_str(w, *first ? "\n{\"name\":\"" : ",\n{\"name\":\"");
    w_str(w, what);
    w_str(w, "\",\"ph\":\"M\",\"pid\":");
    w_u64(w, pid);
    if (tid >= 0) {
        w_str(w, ",\"tid\":");
        w_u64(w, (uint64_t)tid);
    }
    w_str(w, ",\"args\":{\"");
    w_str(w, key);
    w_str(w, "\":");
    if (text)
        w_json(w, text);
    else
        w_u64(w, number);
    w_str(w, "}}");
    *first = 0;
}

static void write_metadata(wbuf *w, const nx_machine *m, const nx_sim_result *r, int *first) {
    uint8_t used[NX_MAX_CORES][QUEUE_TID_BASE + 256];
    memset(used, 0, sizeof used);
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (!is_blank(rec)) used[rec->core][track_tid(rec)] = 1; /* records were checked */
    }
    uint32_t qpe = m->dma_queues_per_engine ? m->dma_queues_per_engine : 1;
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        int any = 0;
        for (uint32_t t = 0; t < QUEUE_TID_BASE + 256; t++) any |= used[c][t];
        if (!any) continue;
        char name[64];
        snprintf(name, sizeof name, "core %u", c);
        w_meta(w, first, "process_name", c + 1, -1, "name", name, 0);
        w_meta(w, first, "process_sort_index", c + 1, -1, "sort_index", NULL, c);
        for (uint32_t t = 0; t < QUEUE_TID_BASE + 256; t++) {
            if (!used[c][t]) continue;
            if (t < QUEUE_TID_BASE) {
                snprintf(name, sizeof name, "%s", nx_engine_name((nx_engine)t));
            } else {
                uint32_t q = t - QUEUE_TID_BASE;
                snprintf(name, sizeof name, "dma q%u (engine %u, queue %u)", q, q / qpe, q % qpe);
            }
            w_meta(w, first, "thread_name", c + 1, (int)t, "name", name, 0);
            w_meta(w, first, "thread_sort_index", c + 1, (int)t, "sort_index", NULL, t);
        }
    }
}

static void write_wait_slice(wbuf *w, const nx_sim_record *rec, const nx_insn *insn, double ws) {
    char name[64];
    const char *cat = "wait";
    if (insn && insn->opcode == NX_OP_CORE_BARRIER) {
        snprintf(name, sizeof name, "wait barrier");
    } else if (rec->waited && insn && insn->wait_sem != NX_SEM_NONE) {
        snprintf(name, sizeof name, "wait sem%u>=%" PRIu32, insn->wait_sem, insn->wait_value);
    } else {
        snprintf(name, sizeof name, "stall");
        cat = "stall";
    }
    w_head(w, name, cat, "X", rec->core + 1u, track_tid(rec));
    w_span(w, ws, rec->t_start_ns);
    w_str(w, "}");
}

/* The args an instruction contributes: operands, wait, increment. */
static void format_insn_args(wbuf *w, const nx_insn *insn) {
    const nx_opcode_info *info = nx_opcode_lookup(insn->opcode);
    nx_strbuf *a = &w->args;
    nx_sb_clear(a);
    for (unsigned k = 0; info && k < NX_MAX_OPERANDS; k++) {
        if (!info->slot[k].name || insn->op[k].kind == NX_OPK_NONE) continue;
        char text[512];
        nx_format_operand(text, sizeof text, &insn->op[k]);
        /* operand text is plain ASCII without quotes or backslashes */
        nx_sb_printf(a, ",\"%s\":\"%s\"", info->slot[k].name, text);
    }
    if (insn->wait_sem != NX_SEM_NONE)
        nx_sb_printf(a, ",\"wait\":\"sem%u>=%" PRIu32 "\"", insn->wait_sem, insn->wait_value);
    if (insn->inc_sem != NX_SEM_NONE)
        nx_sb_printf(a, ",\"inc\":\"sem%u+%" PRIu32 "\"", insn->inc_sem, insn->inc_amount);
    if (a->failed) w->bad = 1;
    w->cached = *insn;
    w->cache_valid = 1;
}

static void write_slice(wbuf *w, const nx_machine *m, const nx_program *prog, const nx_sim_record *rec,
                        double s, double e) {
    const nx_insn *insn = rec_insn(prog, rec);
    w_head(w, mnemonic(rec->opcode), is_xfer(rec) ? "dma" : nx_engine_name((nx_engine)rec->engine),
           "X", rec->core + 1u, track_tid(rec));
    w_span(w, s, e);
    w_str(w, ",\"args\":{\"index\":");
    w_u64(w, rec->index);
    if (insn) {
        if (!w->cache_valid || memcmp(&w->cached, insn, sizeof *insn) != 0) format_insn_args(w, insn);
        w_mem(w, w->args.s ? w->args.s : "", w->args.len);
    }
    if (is_xfer(rec)) {
        w_str(w, ",\"queue\":");
        w_u64(w, (uint64_t)rec->queue);
    } else {
        double ghz = m->clock_ghz[rec->engine];
        int64_t cycles = whole((rec->t_end_ns - rec->t_start_ns) * ghz), busy = whole(rec->busy_ns * ghz);
        w_str(w, ",\"cycles\":");
        w_u64(w, cycles > 0 ? (uint64_t)cycles : 0);
        w_str(w, ",\"busy_cycles\":");
        w_u64(w, busy > 0 ? (uint64_t)busy : 0);
    }
    w_str(w, ",\"bytes\":");
    w_u64(w, rec->bytes);
    w_str(w, ",\"flops\":");
    w_u64(w, rec->flops);
    w_str(w, ",\"start_ns\":");
    w_fixed3(w, whole(rec->t_start_ns * 1000.0));
    w_str(w, ",\"end_ns\":");
    w_fixed3(w, whole(rec->t_end_ns * 1000.0));
    w_str(w, "}}");
}

/* One end of a flow, at the record's bind time (see layout_track). */
static void write_flow_end(wbuf *w, const char *ph, size_t id, uint32_t sem, const nx_sim_record *rec,
                           double bind) {
    char name[32];
    if (sem == NONE)
        snprintf(name, sizeof name, "barrier");
    else
        snprintf(name, sizeof name, "sem%u", sem);
    w_head(w, name, "sync", ph, rec->core + 1u, track_tid(rec));
    w_str(w, ",\"id\":");
    w_u64(w, id);
    w_us(w, "ts", whole(bind));
    if (ph[0] == 'f') w_str(w, ",\"bp\":\"e\"");
    w_str(w, "}");
}

static int write_events(wbuf *w, const nx_machine *m, const nx_program *prog, const nx_sim_result *r,
                        const layout *L, const flows *fl) {
    int first = 1;
    w_str(w, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"nxsim\",\"machine\":");
    char machine[sizeof prog->machine + 1];
    memcpy(machine, prog->machine, sizeof prog->machine);
    machine[sizeof prog->machine] = '\0';
    w_json(w, machine);
    w_str(w, ",\"total_ns\":");
    w_fixed3(w, whole(r->total_ns * 1000.0));
    w_str(w, "},\n\"traceEvents\":[");
    write_metadata(w, m, r, &first);
    if (first) /* an empty run: keep the array well formed */
        w_meta(w, &first, "process_name", 1, -1, "name", "core 0", 0);
    for (size_t i = 0; i < L->count; i++) {
        uint32_t id = L->order[i].id;
        const nx_sim_record *rec = &r->log[id];
        if (!isnan(L->ws[id])) write_wait_slice(w, rec, rec_insn(prog, rec), L->ws[id]);
        write_slice(w, m, prog, rec, L->s[id], L->e[id]);
    }
    for (size_t i = 0; i < fl->n; i++) {
        const flow *f = &fl->v[i];
        write_flow_end(w, "s", i + 1, f->sem, &r->log[f->from], L->bind[f->from]);
        write_flow_end(w, "f", i + 1, f->sem, &r->log[f->to], L->bind[f->to]);
    }
    w_str(w, "\n]}\n");
    w_flush(w);
    nx_sb_free(&w->out);
    nx_sb_free(&w->args);
    return w->bad || ferror(w->f) ? -1 : 0;
}

/* The permissions fopen would give a new file: 0666 less the umask, read
 * from /proc (umask(2) cannot be read without changing it); 022 if unknown. */
static mode_t new_file_mode(void) {
    unsigned mask = 022;
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[128];
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "Umask: %o", &mask) == 1) break;
        fclose(f);
    }
    return (mode_t)(0666 & ~mask);
}

int nx_profile_write_trace(const char *path, const nx_machine *m, const nx_program *prog,
                           const nx_sim_result *r, nx_error *err) {
    if (!r->log && (r->log_count > 0 || r->instructions > 0))
        return nx_fail(err, "profile %s: the run kept no log (run with keep_log = 1)", path);
    if (r->log_count >= NONE) return nx_fail(err, "profile %s: %zu records is too many", path, r->log_count);
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (is_blank(rec)) continue;
        if (rec->core >= prog->cores || rec->core >= NX_MAX_CORES || rec->engine >= NX_ENG_COUNT ||
            rec->queue >= 256 || (rec->queue >= 0 && rec->engine != NX_ENG_SP))
            return nx_fail(err, "profile %s: log record %zu names core %u engine %u queue %d, not in the program",
                           path, i, rec->core, rec->engine, rec->queue);
    }
    layout L = {0};
    flows fl = {0};
    if (layout_build(r, &L) != 0 || find_sem_flows(prog, r, &fl) != 0 ||
        find_barrier_flows(r, prog->cores, &fl) != 0) {
        layout_free(&L);
        free(fl.v);
        return nx_fail(err, "profile %s: out of memory", path);
    }
    size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp) {
        layout_free(&L);
        free(fl.v);
        return nx_fail(err, "profile %s: out of memory", path);
    }
    snprintf(tmp, len + 16, "%s.tmp.XXXXXX", path);
    int status = -1;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        nx_fail(err, "profile %s: cannot create a temporary file beside it: %s", path, strerror(errno));
    } else {
        FILE *f = fdopen(fd, "w");
        wbuf *w = f ? malloc(sizeof *w) : NULL;
        if (!f || !w) {
            nx_fail(err, "profile %s: %s", path, f ? "out of memory" : strerror(errno));
            if (f) fclose(f);
            else close(fd);
        } else {
            memset(w, 0, sizeof *w);
            w->f = f;
            int bad = fchmod(fd, new_file_mode()) != 0;
            bad |= write_events(w, m, prog, r, &L, &fl);
            bad |= fflush(f) != 0;
            bad |= fsync(fileno(f)) != 0;
            int saved = errno;
            bad |= fclose(f) != 0;
            free(w);
            if (bad)
                nx_fail(err, "profile %s: write failed: %s", path, strerror(saved ? saved : errno));
            else if (rename(tmp, path) != 0)
                nx_fail(err, "profile %s: cannot rename the temporary file: %s", path, strerror(errno));
            else
                status = 0;
        }
        if (status != 0) unlink(tmp);
    }
    free(tmp);
    layout_free(&L);
    free(fl.v);
    return status;
}

/* ---- peak and summary ---- */

void nx_profile_peak_of(const nx_machine *m, const nx_program *prog, nx_profile_peak *out) {
    double flops_by_dtype[NX_DT_COUNT] = {0};
    double fp32_flops = 0, total = 0;
    for (uint32_t c = 0; c < prog->cores && c < NX_MAX_CORES; c++) {
        const nx_stream *s = &prog->stream[c][NX_ENG_PE];
        int stationary_fp32 = 0;
        for (uint32_t i = 0; i < s->count; i++) {
            const nx_insn *in = &s->insns[i];
            if (in->opcode == NX_OP_LOAD_STATIONARY) stationary_fp32 = in->op[0].dtype == NX_DT_FP32;
            if (in->opcode != NX_OP_MULTIPLY_MOVING || in->op[1].dtype >= NX_DT_COUNT) continue;
            double fl = 2.0 * in->op[1].partition_count * (double)in->op[0].partition_count *
                        (double)nx_operand_free_elems(&in->op[1]);
            flops_by_dtype[in->op[1].dtype] += fl;
            if (stationary_fp32 || in->op[1].dtype == NX_DT_FP32) fp32_flops += fl;
            total += fl;
        }
    }
    int best = -1;
    for (int d = 0; d < NX_DT_COUNT; d++)
        if (flops_by_dtype[d] > 0 && (best < 0 || flops_by_dtype[d] > flops_by_dtype[best])) best = d;
    out->dtype = best < 0 ? "none" : nx_dtype_name((nx_dtype)best);
    out->fp32_rate = total > 0 && fp32_flops * 2 > total;
    if (out->fp32_rate) out->dtype = "fp32";
    double per_core = (double)m->geo.pe_rows * m->geo.pe_cols * 2.0 * m->clock_ghz[NX_ENG_PE] / 1000.0;
    out->tflops = per_core * (prog->cores ? prog->cores : 1);
    if (out->fp32_rate && m->pe_fp32_factor) out->tflops /= m->pe_fp32_factor;
}

static double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

static double achieved_tflops(const nx_sim_result *r) {
    return r->total_ns > 0 ? (double)r->flops / r->total_ns / 1000.0 : 0.0;
}

int nx_profile_summary(FILE *out, const nx_machine *m, const nx_program *prog, const nx_sim_result *r) {
    uint32_t cores = prog->cores < NX_MAX_CORES ? prog->cores : NX_MAX_CORES;
    fprintf(out, "simulated: %.3f ns on %s, %u core%s, %" PRIu64 " instructions\n", r->total_ns,
            prog->machine[0] ? prog->machine : m->geo.name, cores, cores == 1 ? "" : "s", r->instructions);
    fprintf(out, "in engine cycles:");
    for (unsigned e = 0; e < NX_ENG_COUNT; e++)
        fprintf(out, " %s %.0f (%g GHz)%s", nx_engine_name((nx_engine)e), r->total_ns * m->clock_ghz[e],
                m->clock_ghz[e], e + 1 < NX_ENG_COUNT ? "," : "\n");
    uint32_t qpe = m->dma_queues_per_engine ? m->dma_queues_per_engine : 1;
    for (uint32_t c = 0; c < cores; c++) {
        fprintf(out, "\ncore %u\n", c);
        fprintf(out, "  %-6s %12s %14s %7s %14s\n", "engine", "instructions", "busy cycles", "busy %",
                "stall cycles");
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_sim_engine_stats *s = &r->engine[c][e];
            fprintf(out, "  %-6s %12" PRIu64 " %14.0f %6.1f%% %14.0f\n", nx_engine_name((nx_engine)e),
                    s->instructions, s->busy_ns * m->clock_ghz[e], pct(s->busy_ns, r->total_ns),
                    s->stall_ns * m->clock_ghz[e]);
        }
        int header = 0;
        for (unsigned q = 0; q < 256; q++) {
            if (!r->dma_queue_transfers[c][q] && !r->dma_queue_bytes[c][q]) continue;
            if (!header) {
                fprintf(out, "  %-22s %10s %14s %10s\n", "dma queue", "transfers", "bytes", "GB/s");
                header = 1;
            }
            char name[32];
            snprintf(name, sizeof name, "q%u (engine %u.%u)", q, q / qpe, q % qpe);
            fprintf(out, "  %-22s %10" PRIu64 " %14" PRIu64 " %10.2f\n", name, r->dma_queue_transfers[c][q],
                    r->dma_queue_bytes[c][q], r->total_ns > 0 ? (double)r->dma_queue_bytes[c][q] / r->total_ns : 0.0);
        }
    }
    nx_profile_peak peak;
    nx_profile_peak_of(m, prog, &peak);
    double got = achieved_tflops(r);
    fprintf(out, "\nFLOPs %" PRIu64 ": %.3f TFLOPS achieved of %.3f peak (%.1f%%); peak = %u x %u x 2 x %g GHz x %u core%s%s, dominant matmul dtype %s\n",
            r->flops, got, peak.tflops, pct(got, peak.tflops), m->geo.pe_rows, m->geo.pe_cols,
            m->clock_ghz[NX_ENG_PE], prog->cores ? prog->cores : 1, prog->cores == 1 ? "" : "s",
            peak.fp32_rate ? " / fp32 factor" : "", peak.dtype);
    return ferror(out) ? -1 : 0;
}

static cJSON *summary_object(const nx_machine *m, const nx_program *prog, const nx_sim_result *r) {
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    uint32_t cores = prog->cores < NX_MAX_CORES ? prog->cores : NX_MAX_CORES;
    cJSON_AddStringToObject(root, "machine", prog->machine[0] ? prog->machine : m->geo.name);
    cJSON_AddNumberToObject(root, "cores", cores);
    cJSON_AddNumberToObject(root, "total_ns", r->total_ns);
    cJSON_AddNumberToObject(root, "instructions", (double)r->instructions);
    cJSON *cyc = cJSON_AddObjectToObject(root, "total_cycles");
    cJSON *clk = cJSON_AddObjectToObject(root, "clock_ghz");
    for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
        cJSON_AddNumberToObject(cyc, nx_engine_name((nx_engine)e), round(r->total_ns * m->clock_ghz[e]));
        cJSON_AddNumberToObject(clk, nx_engine_name((nx_engine)e), m->clock_ghz[e]);
    }
    cJSON *arr = cJSON_AddArrayToObject(root, "per_core");
    uint32_t qpe = m->dma_queues_per_engine ? m->dma_queues_per_engine : 1;
    for (uint32_t c = 0; c < cores; c++) {
        cJSON *core = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, core);
        cJSON_AddNumberToObject(core, "core", c);
        cJSON *engines = cJSON_AddObjectToObject(core, "engines");
        for (unsigned e = 0; e < NX_ENG_COUNT; e++) {
            const nx_sim_engine_stats *s = &r->engine[c][e];
            cJSON *o = cJSON_AddObjectToObject(engines, nx_engine_name((nx_engine)e));
            cJSON_AddNumberToObject(o, "instructions", (double)s->instructions);
            cJSON_AddNumberToObject(o, "busy_ns", s->busy_ns);
            cJSON_AddNumberToObject(o, "busy_cycles", round(s->busy_ns * m->clock_ghz[e]));
            cJSON_AddNumberToObject(o, "busy_pct", pct(s->busy_ns, r->total_ns));
            cJSON_AddNumberToObject(o, "stall_ns", s->stall_ns);
            cJSON_AddNumberToObject(o, "stall_cycles", round(s->stall_ns * m->clock_ghz[e]));
        }
        cJSON *queues = cJSON_AddArrayToObject(core, "dma_queues");
        for (unsigned q = 0; q < 256; q++) {
            if (!r->dma_queue_transfers[c][q] && !r->dma_queue_bytes[c][q]) continue;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(queues, o);
            cJSON_AddNumberToObject(o, "queue", q);
            cJSON_AddNumberToObject(o, "engine", q / qpe);
            cJSON_AddNumberToObject(o, "transfers", (double)r->dma_queue_transfers[c][q]);
            cJSON_AddNumberToObject(o, "bytes", (double)r->dma_queue_bytes[c][q]);
            cJSON_AddNumberToObject(o, "bytes_per_ns",
                                    r->total_ns > 0 ? (double)r->dma_queue_bytes[c][q] / r->total_ns : 0.0);
        }
    }
    nx_profile_peak peak;
    nx_profile_peak_of(m, prog, &peak);
    cJSON_AddNumberToObject(root, "flops", (double)r->flops);
    cJSON_AddNumberToObject(root, "tflops_achieved", achieved_tflops(r));
    cJSON_AddNumberToObject(root, "tflops_peak", peak.tflops);
    cJSON_AddStringToObject(root, "peak_dtype", peak.dtype);
    cJSON_AddBoolToObject(root, "peak_fp32_rate", peak.fp32_rate);
    return root;
}

int nx_profile_summary_json(FILE *out, const nx_machine *m, const nx_program *prog,
                            const nx_sim_result *r) {
    cJSON *root = summary_object(m, prog, r);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return -1;
    int bad = fputs(text, out) < 0 || fputc('\n', out) == EOF;
    cJSON_free(text);
    return bad || ferror(out) ? -1 : 0;
}
