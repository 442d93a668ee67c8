/* The state of one trace of select_and_scatter_kernel, shared by its files:
 * leaf.c (the call and the pipeline), tiles.c (bands, units, tiles),
 * dma.c (loads, stores, planes no window reaches), stages.c (the compute
 * of a tile). Internal to kernels/select_and_scatter/. */
#ifndef NXSIM_KERNELS_SELECT_AND_SCATTER_STATE_H
#define NXSIM_KERNELS_SELECT_AND_SCATTER_STATE_H

#include <stdint.h>

#include "plan.h"
#include "select_and_scatter.h"

#define SAS_SLOTS 3             /* SBUF slots the tiles rotate over */
#define SAS_PIECE_BYTES 65536   /* target bytes per DMA piece */
#define SAS_MAX_PIECES 8

/* Buffers of a slot. The window maxima and the scatter's partial products
 * share their space: POOL reads the maxima for the mask before it writes the
 * products, in its own stream order, and the next tile of the slot computes
 * its maxima (DVE) after that scatter in emission order. */
enum { B_XIN, B_XPAD, B_SRC, B_MX, B_EQ, B_SEL, B_OPAD, B_OUT, B_COUNT, B_GTMP = B_MX };

typedef struct sas_unit {
    uint64_t op_plane, src_plane; /* plane indices in the operand / source */
    uint32_t bh, bw;              /* row band, column band */
} sas_unit;

typedef struct sas_tile {
    uint32_t first, count; /* units */
    uint32_t ch, cw;       /* classes */
} sas_tile;

typedef struct sas_state {
    nx_kctx *k;
    nx_dtype dt;
    uint64_t es;
    uint64_t H, W, SH, SW;
    uint64_t x_off, s_off, o_off; /* HBM bytes */
    nx_sas_params prm;
    sas_dim dh, dw;
    sas_dim_plan ph, pw;
    int64_t K, wh, ww, sh, sw;
    int init_zero;
    uint32_t p;
    sas_unit *units;
    uint32_t nunits;
    sas_tile *tiles;
    uint32_t ntiles;
    uint64_t cap[B_COUNT]; /* elements per buffer */
    nx_tile buf[SAS_SLOTS][B_COUNT];
    nx_tile konst;         /* [p x 3] of the dtype: 0, the padding fill, init_value */
    uint32_t lanes, load_lanes, next_load, next_store;
} sas_state;

/* The masks are bytes; window positions (0..K) are exact in bf16 up to 256. */
static inline nx_dtype sas_buf_dtype(const sas_state *s, int b) {
    return b == B_EQ ? NX_DT_UINT8 : b == B_SEL ? (s->K < 256 ? NX_DT_BF16 : NX_DT_FP32) : s->dt;
}

static inline int sas_has_windows(const sas_state *s, const sas_tile *t) {
    return s->ph.geo[t->ch].nwin && s->pw.geo[t->cw].nwin;
}

/* ---- views (stages.c) ---- */

/* np partitions of tile t from element `off`, nd free dims (outermost first). */
nx_operand sas_view(const nx_tile *t, uint32_t np, uint64_t off, uint32_t nd, const int32_t *st, const uint32_t *ct);
/* The 2-D view [c0 (stride s0), c1 (stride s1)]. */
nx_operand sas_v2(const nx_tile *t, uint32_t np, uint64_t off, int32_t s0, uint32_t c0, int32_t s1, uint32_t c1);
/* Constant `which` (0: zero, 1: the padding fill, 2: init_value) broadcast to rows x cols. */
nx_operand sas_konst(const sas_state *s, uint32_t np, int which, uint32_t rows, uint32_t cols);

/* ---- planning (tiles.c): bands that fit SBUF, units, tiles ---- */
int sas_plan_units(sas_state *s, const uint64_t *shape, const uint64_t *src_shape, nx_error *err);

/* ---- transfers (dma.c) ---- */
int sas_emit_loads(sas_state *s, uint32_t ti, nx_error *err);
int sas_emit_store(sas_state *s, uint32_t ti, nx_error *err);
int sas_fill_unhit_planes(sas_state *s, const uint64_t *shape, const uint64_t *src_shape, nx_error *err);

/* ---- the compute of tile ti (stages.c), in pipeline order ---- */
int sas_emit_init(sas_state *s, uint32_t ti, nx_error *err);    /* ACT: output buffer before the scatter */
int sas_emit_pad(sas_state *s, uint32_t ti, nx_error *err);     /* ACT: the padded operand */
int sas_emit_max_eq(sas_state *s, uint32_t ti, nx_error *err);  /* DVE window max, POOL mask */
int sas_emit_select(sas_state *s, uint32_t ti, nx_error *err);  /* DVE: the first maximum */
int sas_emit_scatter(sas_state *s, uint32_t ti, nx_error *err); /* POOL: the multiply-adds */
int sas_emit_out(sas_state *s, uint32_t ti, nx_error *err);     /* ACT: the owned part out */

#endif
