/* The tiling of select_and_scatter_kernel (docs/parts/kernels.md), as data:
 * the output of each (n, c) plane is cut into bands of owned rows (and, only
 * when a row of the plane does not fit SBUF, of owned columns). A band
 * computes every window that touches its owned part (windows near a band
 * edge are computed by both neighbours) and stores only what it owns, so
 * bands never accumulate into each other. A band's geometry relative to its
 * first window (how many windows, where padding falls, which rows it owns)
 * is its class; bands of the same class run the same instructions, so a
 * tile puts up to 128 bands of one class (from any planes) on partitions.
 * Interior bands of all planes share one class. */
#ifndef NXSIM_KERNELS_SELECT_AND_SCATTER_PLAN_H
#define NXSIM_KERNELS_SELECT_AND_SCATTER_PLAN_H

#include <stdint.h>

#include "isa/error.h"

/* One spatial dim: size, window, stride, padding low, source count. */
typedef struct sas_dim {
    int64_t len, win, stride, lo, nsrc;
} sas_dim;

/* The class part of a band along one dim (all in rows of that dim). */
typedef struct sas_geo {
    uint32_t nwin;       /* windows (source rows); 0: no window touches the band */
    uint32_t nx;         /* local operand rows: padded [A0, A0 + nx), A0 = first window's start */
    uint32_t ra0, ra1;   /* the real (unpadded) ones among [0, nx) */
    uint32_t no;         /* rows of the band's output buffer */
    uint32_t xoff;       /* output-buffer row of local operand row 0 */
    uint32_t own0, nown; /* the owned rows in the output buffer */
} sas_geo;

typedef struct sas_band {
    int64_t y0;      /* first owned row of the dim */
    int64_t yreal0;  /* first real operand row loaded */
    int64_t r_lo;    /* first source row */
    uint32_t cls;    /* its geometry: sas_dim_plan.geo[cls] */
} sas_band;

typedef struct sas_dim_plan {
    sas_band *bands;
    uint32_t nbands;
    sas_geo *geo;
    uint32_t ngeo;
} sas_dim_plan;

/* Bands of `rows` owned rows (the last one shorter) along d. */
int sas_plan_dim(const sas_dim *d, int64_t rows, sas_dim_plan *out, nx_error *err);
void sas_dim_plan_free(sas_dim_plan *p);

/* Windows [*a, *b) of a band of geometry g whose window offset i (0..win-1)
 * falls on a real row. */
void sas_valid_windows(const sas_geo *g, const sas_dim *d, int64_t i, uint32_t *a, uint32_t *b);
/* 1 if some window of the band covers only padding rows. */
int sas_has_padding_only_window(const sas_geo *g, const sas_dim *d);

#endif
