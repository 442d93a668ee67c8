/* Profiles (profile.h), the trace: where each record's slice is drawn, which
 * increment satisfied which wait, and the Chrome trace-event writer,
 * streamed through stdio (a million-record trace is hundreds of MB: it is
 * never built in memory) into an atomically committed file. The summaries
 * are profile_summary.c. */
#include "profile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

#include "../isa/asm.h"
#include "../isa/fileio.h"
#include "../isa/json_write.h"
#include "../isa/opcodes.h"
#include "../isa/strbuf.h"
#include "log.h"

#define QUEUE_TID_BASE 16
#define NONE UINT32_MAX
/* One key per (core, semaphore) for the flow search. */
#define SEM_KEY(core, sem) ((uint32_t)(core) * (NX_MAX_SEMAPHORES + 1u) + (sem))

static uint32_t track_tid(const nx_sim_record *rec) {
    return nx_sim_record_is_transfer(rec) ? QUEUE_TID_BASE + (uint32_t)rec->queue : rec->engine;
}

/* A finite number for JSON (NaN/Inf are not JSON). */
static double finite_or_zero(double v) { return isfinite(v) ? v : 0.0; }

/* ---- track layout: where each record's slice is drawn ---- */

typedef struct placed {
    double t;        /* start */
    uint64_t track;  /* core << 32 | tid (tids reach 16 + 65535) */
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
        if (nx_sim_record_is_blank(rec)) continue;
        L->order[L->count++] = (placed){rec->t_start_ns, (uint64_t)rec->core << 32 | track_tid(rec),
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
    uint32_t core_sem;  /* SEM_KEY(core, sem) */
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
        nx_insn scratch;
        const nx_insn *insn = nx_sim_record_insn(prog, rec, &scratch);
        if (!insn) continue;
        if (rec->inc_seq && insn->inc_sem != NX_SEM_NONE && insn->opcode != NX_OP_CORE_BARRIER) n_inc++;
        if (rec->engine == NX_ENG_SP && rec->queue < 0 && nx_opcode_is_dma(insn->opcode))
            have_issue_records = 1;
    }
    inc_entry *inc = malloc((n_inc ? n_inc : 1) * sizeof *inc);
    if (!inc) return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        nx_insn scratch;
        const nx_insn *insn = nx_sim_record_insn(prog, rec, &scratch);
        if (insn && rec->inc_seq && insn->inc_sem != NX_SEM_NONE && insn->opcode != NX_OP_CORE_BARRIER)
            inc[k++] = (inc_entry){SEM_KEY(rec->core, insn->inc_sem), (uint32_t)i, rec->inc_seq,
                                   insn->inc_amount};
    }
    qsort(inc, n_inc, sizeof *inc, inc_cmp);
    for (size_t j = 1; j < n_inc; j++)
        if (inc[j].core_sem == inc[j - 1].core_sem) inc[j].total += inc[j - 1].total;
    int status = 0;
    for (size_t i = 0; i < r->log_count && status == 0; i++) {
        const nx_sim_record *rec = &r->log[i];
        nx_insn scratch;
        const nx_insn *insn = nx_sim_record_insn(prog, rec, &scratch);
        if (!insn || !rec->wait_seq || insn->wait_sem == NX_SEM_NONE || insn->opcode == NX_OP_CORE_BARRIER)
            continue;
        if (nx_sim_record_is_transfer(rec) && have_issue_records) continue; /* its wait is the issue's */
        for (uint32_t s = insn->wait_sem; s < insn->wait_sem + nx_insn_wait_sems(insn) && status == 0; s++) {
            uint32_t key = SEM_KEY(rec->core, s); /* a span: an arrow from each semaphore's increment */
            size_t lo = 0, hi = n_inc;
            while (lo < hi) { /* first entry of key whose total reaches the value */
                size_t mid = lo + (hi - lo) / 2;
                if (inc[mid].core_sem < key || (inc[mid].core_sem == key && inc[mid].total < insn->wait_value))
                    lo = mid + 1;
                else
                    hi = mid;
            }
            if (lo < n_inc && inc[lo].core_sem == key && inc[lo].seq <= rec->wait_seq)
                status = flows_add(out, inc[lo].id, (uint32_t)i, s);
        }
    }
    free(inc);
    return status;
}

/* The k-th core_barrier of each core (by start time) meets the k-th of every
 * other core: an arrow from each to the others. */
static int find_barrier_flows(const nx_sim_result *r, uint32_t cores, flows *out) {
    size_t n = 0;
    for (size_t i = 0; i < r->log_count; i++) n += r->log[i].opcode == NX_OP_CORE_BARRIER && !nx_sim_record_is_blank(&r->log[i]);
    if (n == 0 || cores < 2) return 0;
    placed *v = malloc(n * sizeof *v);
    if (!v) return -1;
    size_t k = 0;
    for (size_t i = 0; i < r->log_count; i++)
        if (r->log[i].opcode == NX_OP_CORE_BARRIER && !nx_sim_record_is_blank(&r->log[i]))
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

/* used: NX_MAX_CORES x tids bytes, 1 for each track with a record. */
static void write_metadata(wbuf *w, const nx_machine *m, const uint8_t *used, uint32_t tids, int *first) {
    for (uint32_t c = 0; c < NX_MAX_CORES; c++) {
        const uint8_t *u = used + (size_t)c * tids;
        int any = 0;
        for (uint32_t t = 0; t < tids; t++) any |= u[t];
        if (!any) continue;
        char name[64];
        snprintf(name, sizeof name, "core %u", c);
        w_meta(w, first, "process_name", c + 1, -1, "name", name, 0);
        w_meta(w, first, "process_sort_index", c + 1, -1, "sort_index", NULL, c);
        for (uint32_t t = 0; t < tids; t++) {
            if (!u[t]) continue;
            if (t < QUEUE_TID_BASE) {
                snprintf(name, sizeof name, "%s", nx_engine_name((nx_engine)t));
            } else {
                uint32_t q = t - QUEUE_TID_BASE;
                snprintf(name, sizeof name, "dma q%u (engine %u, queue %u)", q, nx_dma_queue_engine(&m->geo, q),
                         nx_dma_queue_slot(&m->geo, q));
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
    } else if (rec->waited && insn && insn->wait_sem != NX_SEM_NONE && insn->wait_span) {
        snprintf(name, sizeof name, "wait sem%u..%u>=%" PRIu32, insn->wait_sem,
                 insn->wait_sem + insn->wait_span - 1, insn->wait_value);
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
    if (insn->wait_sem != NX_SEM_NONE && insn->wait_span)
        nx_sb_printf(a, ",\"wait\":\"sem%u..%u>=%" PRIu32 "\"", insn->wait_sem,
                     insn->wait_sem + insn->wait_span - 1, insn->wait_value);
    else if (insn->wait_sem != NX_SEM_NONE)
        nx_sb_printf(a, ",\"wait\":\"sem%u>=%" PRIu32 "\"", insn->wait_sem, insn->wait_value);
    if (insn->inc_sem != NX_SEM_NONE)
        nx_sb_printf(a, ",\"inc\":\"sem%u+%" PRIu32 "\"", insn->inc_sem, insn->inc_amount);
    if (a->failed) w->bad = 1;
    w->cached = *insn;
    w->cache_valid = 1;
}

static void write_slice(wbuf *w, const nx_machine *m, const nx_program *prog, const nx_sim_record *rec,
                        double s, double e) {
    nx_insn scratch;
    const nx_insn *insn = nx_sim_record_insn(prog, rec, &scratch);
    w_head(w, nx_opcode_mnemonic(rec->opcode), nx_sim_record_is_transfer(rec) ? "dma" : nx_engine_name((nx_engine)rec->engine),
           "X", rec->core + 1u, track_tid(rec));
    w_span(w, s, e);
    w_str(w, ",\"args\":{\"index\":");
    w_u64(w, rec->index);
    if (insn) {
        if (!w->cache_valid || memcmp(&w->cached, insn, sizeof *insn) != 0) format_insn_args(w, insn);
        w_mem(w, w->args.s ? w->args.s : "", w->args.len);
    }
    const nx_src_loc *src = nx_program_insn_src(prog, rec->core, (nx_engine)rec->engine, rec->index);
    if (src) { /* where the kernel emitted it (kernels/author/author.h) */
        char where[320];
        snprintf(where, sizeof where, "%s:%u", src->file, src->line);
        w_str(w, ",\"source\":");
        w_json(w, where);
        w_str(w, ",\"function\":");
        w_json(w, src->func);
    }
    if (nx_sim_record_is_transfer(rec)) {
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
                        const layout *L, const flows *fl, const uint8_t *used, uint32_t tids) {
    int first = 1;
    w_str(w, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"nxsim\",\"machine\":");
    char machine[sizeof prog->machine + 1];
    memcpy(machine, prog->machine, sizeof prog->machine);
    machine[sizeof prog->machine] = '\0';
    w_json(w, machine);
    w_str(w, ",\"total_ns\":");
    w_fixed3(w, whole(r->total_ns * 1000.0));
    w_str(w, "},\n\"traceEvents\":[");
    write_metadata(w, m, used, tids, &first);
    if (first) /* an empty run: keep the array well formed */
        w_meta(w, &first, "process_name", 1, -1, "name", "core 0", 0);
    for (size_t i = 0; i < L->count; i++) {
        uint32_t id = L->order[i].id;
        const nx_sim_record *rec = &r->log[id];
        nx_insn scratch;
        if (!isnan(L->ws[id])) write_wait_slice(w, rec, nx_sim_record_insn(prog, rec, &scratch), L->ws[id]);
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

int nx_profile_write_trace_to(FILE *f, const char *path, const nx_machine *m, const nx_program *prog,
                              const nx_sim_result *r, nx_error *err) {
    if (!r->log && (r->log_count > 0 || r->instructions > 0))
        return nx_fail(err, "profile %s: the run kept no log (run with keep_log = 1)", path);
    if (r->log_count >= NONE) return nx_fail(err, "profile %s: %zu records is too many", path, r->log_count);
    nx_error lerr;
    uint32_t queues = nx_geometry_dma_queues(&m->geo);
    if (nx_sim_log_check(prog, r->log, r->log_count, queues, &lerr) != 0)
        return nx_fail(err, "profile %s: %s", path, lerr.msg);
    /* one track per engine and per DMA queue of the machine */
    uint32_t tids = QUEUE_TID_BASE + queues;
    uint8_t *used = calloc((size_t)NX_MAX_CORES * tids, 1);
    layout L = {0};
    flows fl = {0};
    if (!used || layout_build(r, &L) != 0 || find_sem_flows(prog, r, &fl) != 0 ||
        find_barrier_flows(r, prog->cores, &fl) != 0) {
        free(used);
        layout_free(&L);
        free(fl.v);
        return nx_fail(err, "profile %s: out of memory", path);
    }
    for (size_t i = 0; i < r->log_count; i++) {
        const nx_sim_record *rec = &r->log[i];
        if (!nx_sim_record_is_blank(rec)) used[(size_t)rec->core * tids + track_tid(rec)] = 1; /* checked above */
    }
    int status = -1;
    wbuf *w = malloc(sizeof *w);
    if (!w) {
        nx_fail(err, "profile %s: out of memory", path);
    } else {
        memset(w, 0, sizeof *w);
        w->f = f;
        errno = 0;
        if (write_events(w, m, prog, r, &L, &fl, used, tids) != 0) {
            int e = errno;
            nx_fail(err, "profile %s: cannot write: %s", path, strerror(e ? e : EIO));
        } else {
            status = 0;
        }
    }
    free(w);
    free(used);
    layout_free(&L);
    free(fl.v);
    return status;
}

int nx_profile_write_trace(const char *path, const nx_machine *m, const nx_program *prog,
                           const nx_sim_result *r, nx_error *err) {
    nx_atomic_file af;
    nx_error ferr; /* the file's own message ("PATH: ..."), prefixed below */
    if (nx_atomic_open(&af, path, &ferr) != 0) return nx_fail(err, "profile %s", ferr.msg);
    if (nx_profile_write_trace_to(af.f, path, m, prog, r, err) != 0) {
        nx_atomic_abort(&af);
        return -1;
    }
    if (nx_atomic_commit(&af, &ferr) != 0) return nx_fail(err, "profile %s", ferr.msg);
    return 0;
}
