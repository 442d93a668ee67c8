/* The cost model (sim/cost.h): per-instruction cycles per engine, and every
 * DMA timing figure: a transfer's fixed phase, bytes and efficiency, the
 * bandwidth split, a transfer's duration alone and the DMA bound. Every figure comes from the
 * machine description; docs/parts/model.md states each formula. */
#include "cost.h"

#include <stdlib.h>

#include "../isa/opcodes.h"

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t ceil_div(uint64_t a, uint64_t b) { return b == 0 ? a : (a + b - 1) / b; }

void nx_pe_cost_reset(nx_pe_cost_state *pe) {
    pe->stationary_dtype = NX_DT_BF16;
    pe->prev_multiply = 0;
    pe->fold_open = 0;
}

static int is_memory(const nx_operand *op) {
    return op->kind == NX_OPK_HBM || op->kind == NX_OPK_SBUF || op->kind == NX_OPK_PSUM;
}

uint64_t nx_cost_stream_elems(const nx_insn *insn) {
    uint64_t n = 1;
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        const nx_operand *op = &insn->op[s];
        if (is_memory(op) || op->kind == NX_OPK_PATTERN) n = max_u64(n, nx_operand_free_elems(op));
    }
    return n;
}

/* The streamed tensor inputs: read-only memory slots as long as the stream
 * (per-partition scalars, values lists and initial values are not streamed). */
static unsigned streamed_inputs(const nx_insn *insn, const nx_opcode_info *info, uint64_t n) {
    unsigned k = 0;
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        const nx_operand *op = &insn->op[s];
        if (!info->slot[s].name || info->slot[s].access != NX_ACCESS_READ || !is_memory(op)) continue;
        if (nx_operand_free_elems(op) == n) k++;
    }
    return k;
}

/* Innermost dim with more than one element has unit stride (or none has). */
static int innermost_contiguous(const nx_operand *op) {
    for (unsigned k = op->ndims; k-- > 0;) {
        if (op->count[k] == 1) continue;
        return op->stride[k] == 1;
    }
    return 1;
}

/* v3 performance modes: bf16/fp16 SBUF operands with contiguous innermost
 * dims; tensor_copy and tensor_scalar 4x, tensor_tensor 2x. Per-partition
 * scalar operands (one element, not streamed) do not matter. */
static uint64_t dve_perf_factor(const nx_machine *m, const nx_insn *insn, uint64_t n) {
    if (!m->dve_perf_modes) return 1;
    uint64_t factor;
    switch (insn->opcode) {
    case NX_OP_TENSOR_COPY:
    case NX_OP_TENSOR_SCALAR: factor = 4; break;
    case NX_OP_TENSOR_TENSOR: factor = 2; break;
    default: return 1;
    }
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        const nx_operand *op = &insn->op[s];
        if (!is_memory(op) || nx_operand_free_elems(op) != n) continue;
        if (op->kind != NX_OPK_SBUF) return 1;
        if (op->dtype != NX_DT_BF16 && op->dtype != NX_DT_FP16) return 1;
        if (!innermost_contiguous(op)) return 1;
    }
    return factor;
}

static void dve_cost(const nx_machine *m, const nx_insn *insn, nx_insn_cost *out) {
    const nx_opcode_info *info = nx_opcode_lookup(insn->opcode);
    uint64_t n = nx_cost_stream_elems(insn);
    unsigned inputs = streamed_inputs(insn, info, n);
    uint64_t per = inputs >= 2 ? m->dve_cycles_per_elem_two_inputs : m->dve_cycles_per_elem_one_input;
    uint64_t work = ceil_div(n * per, dve_perf_factor(m, insn, n));
    out->occupancy = max_u64(m->dve_min_ii, work) + m->dve_fixed_overhead;
    /* an instruction that reads this one's results starts dependency_overhead
     * cycles after its last element (the architecture guide's static
     * overhead of about 100 cycles for dependent instructions): 1 + 100 =
     * 101 cycles apart for one-element instructions on both presets */
    out->latency = max_u64(out->occupancy, work + m->dve_fixed_overhead + m->dve_dependency_overhead);
}

static int pe_fp32(const nx_pe_cost_state *pe, const nx_operand *moving) {
    return moving->dtype == NX_DT_FP32 || pe->stationary_dtype == NX_DT_FP32;
}

static void pe_cost(const nx_machine *m, const nx_insn *insn, nx_pe_cost_state *pe,
                    nx_insn_cost *out) {
    const nx_geometry *g = &m->geo;
    switch (insn->opcode) {
    case NX_OP_LOAD_STATIONARY: {
        const nx_operand *src = &insn->op[0];
        uint64_t cols = nx_operand_free_elems(src);
        if (m->pe_systolic_reference) {
            out->occupancy = g->pe_rows; /* weights shift in row by row */
        } else {
            /* "fast" load: a multiply of the same free size, this much quicker */
            uint64_t mm = max_u64(cols, m->pe_mm_init_latency);
            if (src->dtype == NX_DT_FP32) mm *= m->pe_fp32_factor;
            out->occupancy = ceil_div(mm, m->pe_fast_load_factor ? m->pe_fast_load_factor : 1);
        }
        out->latency = out->occupancy;
        out->background = m->pe_background_load && pe->prev_multiply;
        pe->stationary_dtype = src->dtype;
        pe->prev_multiply = 0;
        pe->fold_open = 1;
        return;
    }
    case NX_OP_MULTIPLY_MOVING: {
        const nx_operand *dst = &insn->op[0], *mv = &insn->op[1];
        uint64_t n = nx_operand_free_elems(mv);
        if (m->pe_systolic_reference) {
            /* SCALE-Sim weight-stationary fold 2R + C + M - 2: the load paid R,
             * each multiply pays its streamed columns, the first one after a
             * load also the fill/drain R + C - 2 */
            out->occupancy = n + (pe->fold_open ? (uint64_t)g->pe_rows + g->pe_cols - 2 : 0);
            out->latency = out->occupancy;
        } else {
            out->occupancy = max_u64(n, m->pe_mm_init_latency);
            if (pe_fp32(pe, mv)) out->occupancy *= m->pe_fp32_factor;
            out->latency = out->occupancy + m->pe_fill_latency;
        }
        out->flops = 2ull * mv->partition_count * dst->partition_count * n;
        pe->prev_multiply = 1;
        pe->fold_open = 0;
        return;
    }
    case NX_OP_TRANSPOSE: {
        const nx_operand *src = &insn->op[1];
        uint64_t f = nx_operand_free_elems(src);
        out->occupancy = max_u64(src->partition_count, min_u64(m->pe_mm_init_latency, f));
        out->latency = out->occupancy + (m->pe_systolic_reference ? 0 : m->pe_fill_latency);
        pe->prev_multiply = 0;
        return;
    }
    default:
        pe->prev_multiply = 0;
        return;
    }
}

void nx_cost_insn(const nx_machine *m, nx_engine engine, const nx_insn *insn,
                  nx_pe_cost_state *pe, nx_insn_cost *out) {
    out->occupancy = 1;
    out->latency = 1;
    out->flops = 0;
    out->background = 0;
    const nx_opcode_info *info = nx_opcode_lookup(insn->opcode);
    if (insn->opcode == NX_OP_END) {
        out->occupancy = out->latency = 0;
        return;
    }
    if (info && info->opclass != NX_OPCLASS_COMPUTE) {
        /* control, or a DMA descriptor pushed onto its queue: one cycle */
        if (engine == NX_ENG_PE && pe) pe->prev_multiply = 0;
        return;
    }
    switch (engine) {
    case NX_ENG_PE:
        if (pe) pe_cost(m, insn, pe, out);
        return;
    case NX_ENG_DVE:
        dve_cost(m, insn, out);
        return;
    case NX_ENG_ACT: {
        uint64_t n = nx_cost_stream_elems(insn);
        uint64_t extra = insn->opcode == NX_OP_ACTIVATION && insn->op[4].kind != NX_OPK_NONE ? m->act_accumulate_extra : 0;
        out->occupancy = max_u64(m->act_min_cycles, n) + extra;
        /* dependent instructions: dependency_overhead after the last element
         * (the performance guide's 264-cycle interval of one-element
         * dependent ScalarE instructions on v2: 1 + 263) */
        out->latency = max_u64(out->occupancy, n + extra + m->act_dependency_overhead);
        return;
    }
    case NX_ENG_POOL:
        out->occupancy = m->pool_startup + nx_cost_stream_elems(insn);
        out->latency = out->occupancy;
        return;
    default:
        return;
    }
}

void nx_cost_access(const nx_geometry *geo, const nx_insn *insn, nx_insn_access *out) {
    out->sbuf = 0;
    out->psum_banks = 0;
    for (unsigned s = 0; s < NX_MAX_OPERANDS; s++) {
        const nx_operand *op = &insn->op[s];
        if (op->kind == NX_OPK_SBUF) out->sbuf = 1;
        if (op->kind != NX_OPK_PSUM) continue;
        uint64_t lo, hi;
        /* per-partition byte span, as the validator computes it */
        int64_t size = (int64_t)nx_dtype_size((nx_dtype)op->dtype), emin = 0, emax = 0;
        for (unsigned k = 0; k < op->ndims; k++) {
            int64_t ext = (int64_t)op->stride[k] * (int64_t)(op->count[k] - 1);
            if (ext < 0) emin += ext; else emax += ext;
        }
        lo = (uint64_t)((int64_t)op->offset + emin * size);
        hi = (uint64_t)((int64_t)op->offset + (emax + 1) * size);
        uint64_t bank_bytes = geo->psum_bank_bytes ? geo->psum_bank_bytes : geo->psum_partition_bytes;
        for (uint64_t b = lo / bank_bytes; b <= (hi - 1) / bank_bytes; b++)
            out->psum_banks |= 1ull << (b < 63 ? b : 63);
    }
}

/* Elements of the longest contiguous run at the start of a partition's
 * pattern (count-1 dims ignored, nested unit-stride dims merged). */
static uint64_t contiguous_run(const nx_operand *op) {
    uint64_t run = 1;
    for (unsigned k = op->ndims; k-- > 0;) {
        if (op->count[k] == 1) continue;
        if ((uint64_t)(int64_t)op->stride[k] != run || op->stride[k] <= 0) break;
        run *= op->count[k];
    }
    return run;
}

void nx_cost_dma(const nx_machine *m, const nx_insn *insn, nx_dma_cost *out) {
    const nx_operand *dst = &insn->op[0], *src = &insn->op[1];
    uint64_t ds = nx_dtype_size((nx_dtype)dst->dtype), ss = nx_dtype_size((nx_dtype)src->dtype);
    uint64_t elems = (uint64_t)src->partition_count * nx_operand_free_elems(src);
    out->bytes = elems * max_u64(ds, ss);
    out->row_bytes = min_u64(contiguous_run(src) * ss, contiguous_run(dst) * ds);
    out->efficiency = nx_machine_dma_efficiency(m, (double)out->row_bytes);
    out->fixed_ns = m->dma_fixed_ns;
    out->touches_hbm = dst->kind == NX_OPK_HBM || src->kind == NX_OPK_HBM;
}

void nx_cost_dma_skipped_rows(const nx_insn *insn, nx_state *st, uint32_t core, nx_dma_cost *out) {
    const nx_operand *off = &insn->op[2];
    uint32_t rows = insn->op[0].partition_count;
    if (off->kind != NX_OPK_SBUF || !(insn->flags & NX_FLAG_OOB_SKIP) || rows == 0) return;
    uint64_t moved = 0;
    for (uint32_t p = 0; p < rows; p++) {
        double idx = nx_dtype_load((nx_dtype)off->dtype, nx_sbuf_at(st, core, off->start_partition + p, off->offset));
        if (idx >= 0 && idx < (double)insn->iparam[1]) moved++;
    }
    out->bytes = out->bytes / rows * moved;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void nx_cost_dma_rates(const nx_machine *m, const nx_dma_flow *flows, size_t n, double *rates,
                  double *scratch) {
    size_t nh = 0;
    double demand = 0.0;
    for (size_t i = 0; i < n; i++) {
        uint32_t share = flows[i].engine_active ? flows[i].engine_active : 1;
        rates[i] = m->dma_engine_bytes_per_ns * flows[i].efficiency / (double)share;
        if (flows[i].touches_hbm) {
            scratch[nh++] = rates[i];
            demand += rates[i];
        }
    }
    if (nh == 0 || demand <= m->hbm_bytes_per_ns) return;
    /* water level L: sum_i min(cap_i, L) = hbm bandwidth */
    qsort(scratch, nh, sizeof *scratch, cmp_double);
    double left = m->hbm_bytes_per_ns, level = 0.0;
    for (size_t i = 0; i < nh; i++) {
        double even = left / (double)(nh - i);
        if (scratch[i] >= even) {
            level = even;
            break;
        }
        left -= scratch[i];
        level = scratch[i];
    }
    for (size_t i = 0; i < n; i++)
        if (flows[i].touches_hbm && rates[i] > level) rates[i] = level;
}

double nx_cost_dma_alone_ns(const nx_machine *m, const nx_dma_cost *c) {
    nx_dma_flow flow = {1, c->efficiency, c->touches_hbm};
    double rate, scratch;
    nx_cost_dma_rates(m, &flow, 1, &rate, &scratch);
    return c->fixed_ns + (rate > 0.0 ? (double)c->bytes / rate : 0.0);
}

double nx_cost_dma_peak_bytes_per_ns(const nx_machine *m, uint32_t cores) {
    double engines = (double)cores * nx_machine_dma_engines_bytes_per_ns(m);
    return m->hbm_bytes_per_ns < engines ? m->hbm_bytes_per_ns : engines;
}
