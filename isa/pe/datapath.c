/* The PE matmul datapath (datapath.h): kernel choice and the driver every
 * kernel shares. Per multiply the driver packs the stationary tile into
 * MR-column blocks A[M/MR][K][MR], converts the moving tile once to fp32
 * panels of NR columns (contiguous K x NR each, or column ranges of
 * padded rows for access patterns only the generic converter reads),
 * decides per output tile whether the fused tile may run, and walks the
 * tiles panel by panel, so a panel stays in L1 while every stationary block
 * passes over it. Full tiles are written straight into dst when its rows are
 * contiguous host-order floats (PSUM on a little-endian host), else into a
 * staging copy of dst. */
#include "datapath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../pe_input.h"
#include "../workers.h"
#include "tiles.h"
#include "isa/intmath.h"

/* ---- kernels ---- */

static const char *const kernel_names[NX_PE_KERNEL_COUNT] = {"scalar", "vector", "avx2", "avx512"};

const char *nx_pe_kernel_name(nx_pe_kernel k) {
    return (unsigned)k < NX_PE_KERNEL_COUNT ? kernel_names[k] : NULL;
}

static const nx_pe_tiles *kernel_tiles(nx_pe_kernel k) {
    switch (k) {
    case NX_PE_KERNEL_SCALAR: return &nx_pe_tiles_scalar;
    case NX_PE_KERNEL_VECTOR: return &nx_pe_tiles_vector;
    case NX_PE_KERNEL_AVX2: return nx_pe_tiles_avx2;
    case NX_PE_KERNEL_AVX512: return nx_pe_tiles_avx512;
    default: return NULL;
    }
}

/* What the CPU lacks for kernel k ("" if nothing). */
static const char *cpu_lacks(nx_pe_kernel k) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (k == NX_PE_KERNEL_AVX2 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
        return "AVX2 and FMA";
    if (k == NX_PE_KERNEL_AVX512 && !__builtin_cpu_supports("avx512f")) return "AVX-512F";
#else
    (void)k;
#endif
    return "";
}

int nx_pe_kernel_available(nx_pe_kernel k) { return kernel_tiles(k) != NULL && cpu_lacks(k)[0] == 0; }

/* "avx512, avx2, vector, scalar" or the available ones, fastest first */
static void list_kernels(char *out, size_t size, int available_only) {
    size_t n = 0;
    out[0] = 0;
    for (int k = NX_PE_KERNEL_COUNT - 1; k >= 0; k--) {
        if (available_only && !nx_pe_kernel_available((nx_pe_kernel)k)) continue;
        int w = snprintf(out + n, size - n, "%s%s", n ? ", " : "", kernel_names[k]);
        if (w < 0 || (size_t)w >= size - n) return;
        n += (size_t)w;
    }
}

int nx_pe_kernel_choose(const char *name, nx_pe_kernel *out, nx_error *err) {
    char list[64];
    if (name == NULL || name[0] == 0) {
        for (int k = NX_PE_KERNEL_COUNT - 1; k >= 0; k--)
            if (nx_pe_kernel_available((nx_pe_kernel)k)) {
                *out = (nx_pe_kernel)k;
                return 0;
            }
        return nx_fail(err, "no matmul kernel is available"); /* unreachable: scalar always is */
    }
    for (int k = 0; k < NX_PE_KERNEL_COUNT; k++) {
        if (strcmp(name, kernel_names[k]) != 0) continue;
        list_kernels(list, sizeof list, 1);
        if (kernel_tiles((nx_pe_kernel)k) == NULL)
            return nx_fail(err, "matmul kernel '%s' is not in this build (available: %s)", name, list);
        if (cpu_lacks((nx_pe_kernel)k)[0])
            return nx_fail(err, "matmul kernel '%s' needs %s, which this CPU lacks (available: %s)", name,
                           cpu_lacks((nx_pe_kernel)k), list);
        *out = (nx_pe_kernel)k;
        return 0;
    }
    list_kernels(list, sizeof list, 0);
    return nx_fail(err, "unknown matmul kernel '%.40s' (one of %s)", name, list);
}

int nx_pe_kernel_active(nx_pe_kernel *out, nx_error *err) {
    if (nx_pe_kernel_choose(getenv("NXSIM_MM_KERNEL"), out, err) != 0) {
        nx_fail_prefix(err, "NXSIM_MM_KERNEL");
        return -1;
    }
    return 0;
}

/* ---- when the fused tile may run ----
 *
 * fma(a, b, p) equals p + (a * b) bit for bit when the product a * b is
 * exact: it needs at most 24 significant bits and must lie in fp32's normal
 * range (a product below 2^-126 would be rounded to a subnormal, one at or
 * above 2^128 would overflow). Zero, infinite and NaN operands make the two
 * agree as well (+-0, +-Inf and NaN products are exact; a NaN result is made
 * canonical either way). A PE input format's nonzero finite values have at
 * most `sig` significant bits and magnitudes in [2^lo, 2^hi)
 * (docs/parts/dtypes.md): */
typedef struct pe_format {
    int sig, lo, hi;
} pe_format;

static int pe_format_of(nx_dtype dt, pe_format *f) {
    switch (dt) {
    case NX_DT_FP32: *f = (pe_format){24, -149, 128}; return 0;
    case NX_DT_BF16: *f = (pe_format){8, -133, 128}; return 0;
    case NX_DT_FP16: *f = (pe_format){11, -24, 16}; return 0;
    case NX_DT_FP8_E4M3: *f = (pe_format){4, -9, 9}; return 0;
    case NX_DT_FP8_E5M2: *f = (pe_format){3, -16, 16}; return 0;
    default: return -1;
    }
}

typedef enum fuse_rule {
    FUSE_NEVER,    /* products can need more than 24 bits (an fp32 input) */
    FUSE_ALWAYS,   /* every product is exact (fp16 and fp8 inputs) */
    FUSE_BOUNDED   /* exact within a range of exponents (bf16): bound each tile's operands */
} fuse_rule;

static fuse_rule fuse_rule_of(nx_dtype a, nx_dtype b) {
    pe_format fa, fb;
    if (pe_format_of(a, &fa) != 0 || pe_format_of(b, &fb) != 0 || fa.sig + fb.sig > 24) return FUSE_NEVER;
    if (fa.lo + fb.lo >= -126 && fa.hi + fb.hi <= 128) return FUSE_ALWAYS;
    return FUSE_BOUNDED;
}

/* The biased exponent fields E of a set of fp32 values, nonzero finite ones
 * only: a normal value lies in [2^(E-127), 2^(E-126)), a subnormal one in
 * [2^-149, 2^-126) (counted as lo = -22, hi = 0). Every product of a value
 * of one set and one of another is then in
 * [2^(lo_a + lo_b - 254), 2^(hi_a + hi_b - 252)): normal and finite when
 * lo_a + lo_b >= 128 and hi_a + hi_b <= 380. An empty set passes. */
typedef struct exp_range {
    int32_t lo, hi;
} exp_range;

/* From a kernel's scan of the set (tiles.h). */
static exp_range exp_range_of(uint32_t lo_bits, uint32_t hi_bits) {
    exp_range r = {1000, -1000};
    if (lo_bits < 0x7f800000u) {
        int32_t e = (int32_t)(lo_bits >> 23);
        r.lo = e == 0 ? -22 : e;
    }
    if (hi_bits != 0) r.hi = (int32_t)(hi_bits >> 23);
    return r;
}

static int products_exact(exp_range a, exp_range b) { return a.lo + b.lo >= 128 && a.hi + b.hi <= 380; }

/* ---- the multiply ---- */

typedef struct plan {
    const nx_pe_tiles *t;
    uint32_t K, M, N, mr, nr, blocks, panels;
    int acc;
    fuse_rule rule;
    const float *ap;          /* [blocks][K][mr] */
    const exp_range *a_exp;   /* [blocks], FUSE_BOUNDED only */
    /* moving converted to fp32, zero past N: panel pn at bp + pn * panel_stride,
     * row k of it at + k * ldb */
    const float *bp;
    uint64_t ldb, panel_stride;
    const exp_range *b_exp;   /* [panels], FUSE_BOUNDED only */
    /* or, when no tile fuses and the kernel can (separate_load), read from
     * the moving rows by each panel's first block into one panel buffer */
    const nx_view *mv;
    float *panel;
    float *c;                 /* output row m at c + m * ldc */
    int64_t ldc;
    /* or, panel-major moving converted by the task that runs the panels
     * (so threads share the conversion and each panel is still in cache
     * when its blocks read it): bp and b_exp written through these */
    float *pack_out;
    exp_range *b_exp_out;
} plan;

/* An edge tile: the kernel's full tile into tmp (the padding of A and B
 * makes the extra outputs harmless), then the rows x cols part into c. */
static void edge_tile(const plan *p, nx_pe_tile_fn *fn, const float *a, const float *b, uint64_t ldb, float *c,
                      uint32_t rows, uint32_t cols) {
    float tmp[NX_PE_MR_MAX * NX_PE_NR_MAX];
    const uint32_t qnan = NX_PE_QNAN_BITS;
    fn(p->K, a, b, ldb, tmp, p->nr, 0);
    for (uint32_t i = 0; i < rows; i++) {
        float *row = c + (int64_t)i * p->ldc;
        for (uint32_t j = 0; j < cols; j++) {
            float v = tmp[i * p->nr + j];
            if (p->acc) v = row[j] + v;
            if (v != v) memcpy(&v, &qnan, sizeof v);
            row[j] = v;
        }
    }
}

/* Rows [k0, k1) of `bytes` at src + k * step towards L2 (into L1 they
 * would be evicted by the stationary blocks streaming through first). */
static void prefetch_rows(const uint8_t *src, int64_t step, uint32_t k0, uint32_t k1, uint32_t bytes) {
    for (uint32_t k = k0; k < k1; k++)
        for (uint32_t off = 0; off < bytes; off += 64) __builtin_prefetch(src + (int64_t)k * step + off, 0, 2);
}

/* The moving's panels [panel0, panel1) converted into bp (zero past N),
 * and with FUSE_BOUNDED their exponent ranges. */
static void pack_panels(const plan *p, uint32_t panel0, uint32_t panel1) {
    const size_t es = nx_dtype_size((nx_dtype)p->mv->dtype);
    const uint32_t n0 = panel0 * p->nr, n1 = panel1 * p->nr < p->N ? panel1 * p->nr : p->N;
    float *out = p->pack_out + panel0 * p->panel_stride;
    p->t->pack(p->mv->base + n0 * es, p->mv->partition_step, p->mv->dtype == NX_DT_BF16, p->K, n1 - n0, p->nr,
               p->ldb, p->panel_stride, out);
    for (uint32_t pn = panel0; p->b_exp_out && pn < panel1; pn++) {
        uint32_t lo, hi;
        p->t->scan(p->pack_out + pn * p->panel_stride, p->K, p->nr, p->ldb, &lo, &hi);
        p->b_exp_out[pn] = exp_range_of(lo, hi);
    }
}

/* n-panels [panel0, panel1), every stationary block over each */
static void run_panels(const plan *p, uint32_t panel0, uint32_t panel1) {
    if (p->pack_out && panel0 < panel1) pack_panels(p, panel0, panel1);
    for (uint32_t pn = panel0; pn < panel1; pn++) {
        uint32_t n0 = pn * p->nr, cols = p->N - n0 < p->nr ? p->N - n0 : p->nr;
        const float *b = p->bp + pn * p->panel_stride;
        uint64_t ldb = p->ldb;
        const exp_range b_exp = p->b_exp ? p->b_exp[pn] : (exp_range){0, 0};
        uint32_t blk = 0;
        if (p->panel) {
            const size_t es = nx_dtype_size((nx_dtype)p->mv->dtype);
            const uint8_t *src = p->mv->base + n0 * es;
            const int bf16 = p->mv->dtype == NX_DT_BF16;
            b = p->panel, ldb = p->nr;
            if (cols == p->nr && p->M >= p->mr) {
                p->t->separate_load(p->K, p->ap, src, p->mv->partition_step, bf16, p->panel, p->c + n0, p->ldc,
                                    p->acc);
                blk = 1;
            } else {
                p->t->pack(src, p->mv->partition_step, bf16, p->K, cols, p->nr, p->nr, 0, p->panel);
            }
        }
        for (uint32_t first = blk; blk < p->blocks; blk++) {
            uint32_t m0 = blk * p->mr, rows = p->M - m0 < p->mr ? p->M - m0 : p->mr;
            /* moving rows are SBUF partitions, far apart: each is a new
             * stream for the hardware prefetcher, so the next panel's share
             * of them is fetched a slice per block, under this panel's
             * arithmetic, for its first block to find */
            if (p->panel && pn + 1 < panel1 && p->blocks > first) {
                const size_t es = nx_dtype_size((nx_dtype)p->mv->dtype);
                const uint32_t n1 = n0 + p->nr, w = p->N - n1 < p->nr ? p->N - n1 : p->nr, span = p->blocks - first;
                prefetch_rows(p->mv->base + n1 * es, p->mv->partition_step, (blk - first) * p->K / span,
                              (blk - first + 1) * p->K / span, (uint32_t)(w * es));
            }
            int fused = p->rule == FUSE_ALWAYS || (p->rule == FUSE_BOUNDED && products_exact(p->a_exp[blk], b_exp));
            nx_pe_tile_fn *fn = fused ? p->t->fused : p->t->separate;
            const float *a = p->ap + (uint64_t)blk * p->K * p->mr;
            float *c = p->c + (int64_t)m0 * p->ldc + n0;
            if (rows == p->mr && cols == p->nr)
                fn(p->K, a, b, ldb, c, p->ldc, p->acc);
            else
                edge_tile(p, fn, a, b, ldb, c, rows, cols);
        }
    }
}

/* With worker threads, a multiply of at least this many multiply-adds is
 * shared out (smaller ones cost less than waking the threads: a 128 x 128
 * x 64 multiply is about 20 us on one AVX2 core). */
#define SPLIT_MIN_MACS (1u << 20)

/* Threads share out the panels: task i runs a contiguous range of them
 * (neighbouring panels keep the next-panel prefetch useful), each with its
 * own panel buffer when panels are read by their first block. The tiles of
 * different panels write disjoint columns of dst. */
typedef struct panel_split {
    const plan *p;
    float *panels;         /* tasks x panel_floats, or NULL */
    uint64_t panel_floats;
    uint32_t tasks;
} panel_split;

static void panel_task(void *arg, unsigned i) {
    const panel_split *s = arg;
    plan q = *s->p;
    if (q.panel) q.panel = s->panels + i * s->panel_floats;
    run_panels(&q, (uint32_t)((uint64_t)q.panels * i / s->tasks), (uint32_t)((uint64_t)q.panels * (i + 1) / s->tasks));
}

/* Every panel, over the workers when the multiply is large. */
static void run_all_panels(const plan *p, nx_workers *w, float *panels, uint64_t panel_floats, uint32_t tasks) {
    panel_split s = {p, panels, panel_floats, tasks};
    if (tasks < 2) run_panels(p, 0, p->panels);
    else nx_workers_run(w, tasks, panel_task, &s);
}

/* The stationary tile -> ap[block][k][mr], zero past M; with `range`,
 * each block's exponent range. */
static void pack_stationary(const nx_pe_matmul *mm, const nx_pe_tiles *t, uint32_t K, uint32_t M, float *ap,
                            exp_range *range) {
    t->blocks(mm->stationary, mm->stationary_ld, K, M, ap);
    for (uint32_t blk = 0; range && blk < (M + t->mr - 1) / t->mr; blk++) {
        uint32_t lo, hi;
        t->scan(ap + (uint64_t)blk * K * t->mr, 1, K * t->mr, 0, &lo, &hi);
        range[blk] = exp_range_of(lo, hi);
    }
}

/* 1 if every partition's elements are one contiguous run in order. */
static int row_is_contiguous(const nx_view *v) {
    int64_t expect = (int64_t)nx_dtype_size((nx_dtype)v->dtype);
    for (uint32_t k = v->ndims; k-- > 0;) {
        if (v->count[k] == 1) continue;
        if (v->stride_bytes[k] != expect) return 0;
        expect *= v->count[k];
    }
    return 1;
}

/* Copies dst row m (fp32, any access pattern) to or from c, element order
 * row-major. */
static void dst_row_xfer(const nx_view *dst, uint32_t m, float *c, int to_dst) {
    uint8_t *row = dst->base + (int64_t)m * dst->partition_step;
    int64_t step[NX_MAX_FREE_DIMS];
    uint32_t count[NX_MAX_FREE_DIMS];
    uint32_t pad = NX_MAX_FREE_DIMS - dst->ndims;
    for (uint32_t k = 0; k < NX_MAX_FREE_DIMS; k++) {
        step[k] = k < pad ? 0 : dst->stride_bytes[k - pad];
        count[k] = k < pad ? 1 : dst->count[k - pad];
    }
    uint64_t e = 0;
    for (uint32_t i0 = 0; i0 < count[0]; i0++)
        for (uint32_t i1 = 0; i1 < count[1]; i1++)
            for (uint32_t i2 = 0; i2 < count[2]; i2++)
                for (uint32_t i3 = 0; i3 < count[3]; i3++, e++) {
                    uint8_t *p = row + (int64_t)i0 * step[0] + (int64_t)i1 * step[1] +
                                 (int64_t)i2 * step[2] + (int64_t)i3 * step[3];
                    if (to_dst) nx_dtype_store(NX_DT_FP32, p, c[e]);
                    else c[e] = (float)nx_dtype_load(NX_DT_FP32, p);
                }
}

static int little_endian_host(void) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return 1;
#else
    return 0;
#endif
}

/* 1 if the kernel's own vectorised converter reads v: contiguous fp32 or
 * bf16 rows on a little-endian host. */
static int fast_rows(const nx_pe_tiles *t, const nx_view *v) {
    return little_endian_host() && t->pack && (v->dtype == NX_DT_FP32 || v->dtype == NX_DT_BF16) &&
           row_is_contiguous(v);
}

void nx_pe_convert(nx_pe_kernel kernel, const nx_view *v, uint32_t rows, float *out, uint64_t ld) {
    const nx_pe_tiles *t = kernel_tiles(kernel);
    uint32_t n = (uint32_t)v->free_elems;
    if (t && n && fast_rows(t, v))
        t->pack(v->base, v->partition_step, v->dtype == NX_DT_BF16, rows, n, n, ld, 0, out);
    else
        nx_pe_rows_to_f32(v, rows, out, ld);
}

int nx_pe_matmul_run(nx_pe_kernel kernel, const nx_pe_matmul *mm, nx_error *err) {
    const nx_view *mv = mm->moving, *dst = mm->dst;
    plan p;
    memset(&p, 0, sizeof p);
    p.t = kernel_tiles(kernel);
    if (p.t == NULL || !nx_pe_kernel_available(kernel))
        return nx_fail(err, "matmul kernel %d is not available", (int)kernel);
    p.K = mv->partitions, p.M = dst->partitions, p.N = (uint32_t)mv->free_elems;
    p.mr = p.t->mr, p.nr = p.t->nr;
    p.acc = mm->accumulate != 0;
    p.rule = p.t->fused ? fuse_rule_of(mm->stationary_dtype, (nx_dtype)mv->dtype) : FUSE_NEVER;
    if (p.K == 0 || p.M == 0 || p.N == 0) return 0;
    p.blocks = (p.M + p.mr - 1) / p.mr;
    p.panels = (p.N + p.nr - 1) / p.nr;
    /* dst rows hold host-order floats the tiles can update in place when
     * each row is one aligned contiguous run on a little-endian host */
    int in_place = little_endian_host() && row_is_contiguous(dst) &&
                   dst->partition_step % (int64_t)sizeof(float) == 0 && (uintptr_t)dst->base % sizeof(float) == 0;
    /* contiguous fp32 / bf16 moving rows are converted row by row (each
     * read front to back) into contiguous K x nr panels; any other moving
     * through the generic converter into rows of ldb floats, a panel then
     * being a column range of them (+16: keeps the rows off a power-of-two
     * stride, L1 set conflicts, and 64-byte aligned) */
    const int panel_major = fast_rows(p.t, mv);
    const int by_first_block = panel_major && p.rule == FUSE_NEVER && p.t->separate_load;
    const uint64_t npad = (uint64_t)p.panels * p.nr;
    p.ldb = panel_major ? p.nr : nx_round_up_u64(npad + 16, 16);
    p.panel_stride = panel_major ? (uint64_t)p.K * p.nr : p.nr;
    uint64_t nb = by_first_block ? (uint64_t)p.K * p.nr
                  : panel_major  ? p.panels * p.panel_stride
                                 : (uint64_t)p.K * p.ldb;
    nb = nx_round_up_u64(nb, 16);
    /* two tasks a thread: a thread that starts late (woken, or descheduled
     * on a shared host) leaves its second task to the others */
    uint32_t tasks = nx_workers_threads(mm->workers) * 2;
    if ((uint64_t)p.K * p.M * p.N < SPLIT_MIN_MACS) tasks = 1;
    if (tasks > p.panels) tasks = p.panels;
    const uint64_t panel_floats = nb; /* by_first_block: one panel buffer per task */
    if (by_first_block) nb *= tasks;
    uint64_t na = nx_round_up_u64((uint64_t)p.blocks * p.mr * p.K, 16);
    uint64_t nc = in_place ? 0 : nx_round_up_u64((uint64_t)p.M * p.N, 16);
    uint64_t nexp = p.rule == FUSE_BOUNDED ? (uint64_t)p.blocks + p.panels : 0;
    uint64_t bytes = (nb + na + nc) * sizeof(float) + nexp * sizeof(exp_range);
    float *buf = aligned_alloc(64, nx_round_up_u64(bytes, 64));
    if (buf == NULL)
        return nx_fail(err, "out of memory for %llu bytes of PE scratch", (unsigned long long)bytes);
    float *bp = buf, *ap = bp + nb, *cbuf = ap + na;
    exp_range *a_exp = nexp ? (exp_range *)(void *)(cbuf + nc) : NULL;
    /* moving is SBUF and dst PSUM (the PE's memory rules): they never
     * overlap, so moving may be read while dst is written */
    if (by_first_block) {
        p.mv = mv, p.panel = bp;
        /* the first panel's rows arrive while the stationary is cut into blocks */
        prefetch_rows(mv->base, mv->partition_step, 0, p.K,
                      (uint32_t)((p.N < p.nr ? p.N : p.nr) * nx_dtype_size((nx_dtype)mv->dtype)));
    } else if (panel_major) {
        p.mv = mv, p.pack_out = bp; /* converted by run_panels, a task's range at a time */
    } else {
        nx_pe_rows_to_f32(mv, p.K, bp, p.ldb);
        for (uint32_t k = 0; k < p.K; k++) memset(bp + k * p.ldb + p.N, 0, (npad - p.N) * sizeof(float));
    }
    pack_stationary(mm, p.t, p.K, p.M, ap, a_exp);
    p.ap = ap, p.a_exp = a_exp;
    exp_range *b_exp = a_exp ? a_exp + p.blocks : NULL;
    if (p.pack_out) {
        p.b_exp_out = b_exp;
    } else {
        for (uint32_t pn = 0; b_exp && pn < p.panels; pn++) {
            uint32_t lo, hi;
            p.t->scan(bp + pn * p.panel_stride, p.K, p.nr, p.ldb, &lo, &hi);
            b_exp[pn] = exp_range_of(lo, hi);
        }
    }
    p.bp = bp, p.b_exp = b_exp;
    if (in_place) {
        p.c = (float *)(void *)dst->base;
        p.ldc = dst->partition_step / (int64_t)sizeof(float);
        run_all_panels(&p, mm->workers, p.panel, panel_floats, tasks);
    } else {
        p.c = cbuf;
        p.ldc = p.N;
        if (p.acc)
            for (uint32_t m = 0; m < p.M; m++) dst_row_xfer(dst, m, cbuf + (uint64_t)m * p.N, 0);
        run_all_panels(&p, mm->workers, p.panel, panel_floats, tasks);
        for (uint32_t m = 0; m < p.M; m++) dst_row_xfer(dst, m, cbuf + (uint64_t)m * p.N, 1);
    }
    free(buf);
    return 0;
}
