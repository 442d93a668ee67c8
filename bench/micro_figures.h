/* The documented micro-figures (docs/parts/fidelity.md, docs/parts/
 * hardware.md), each measured on the SystemC model by a small program and
 * printed beside its published value by nxsim-bench-tutorial:
 *   dma-32k-one-engine       one DMA engine moves A[4, 4096] bf16 (32 KiB) on
 *                            trn2 in 1416 ns (NKI DMA overview, example 1);
 *   dma-128x128-spread       A[128, 128] bf16 runs as 16 transfers of 2 KiB,
 *                            one per DMA engine (example 2): the tutorial
 *                            kernels' load helper, traced;
 *   act-dependent-chain      serially dependent tiny ScalarE instructions
 *                            189 ns apart on v2 (NKI performance guide);
 *   dve-dependent-chain      the VectorE static overhead of about 100 cycles
 *                            for dependent tiny instructions (architecture
 *                            guide), on trn1 and trn2;
 *   fast-load-stationary     LoadStationary about 4x quicker than a
 *                            MultiplyMoving of the same free size
 *                            (architecture guide), on trn1.
 * Each case prints one line
 *   micro NAME: simulated S UNIT, published P UNIT, ratio R
 * Figures only: the exit status reports failures to run, never a ratio. */
#ifndef NXSIM_BENCH_MICRO_FIGURES_H
#define NXSIM_BENCH_MICRO_FIGURES_H

/* Runs every micro-figure case; 0, or -1 after printing why a case could
 * not run. */
int nx_bench_micro_figures(void);

#endif
