/* Profiles (profile.h), the summaries of a run: the peak the PE could
 * reach, and per core and engine instructions, busy and stall time, per DMA
 * queue bytes and transfers, as a text table or as JSON through cJSON. They
 * need no log. */
#include "profile.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../isa/opcodes.h"

void nx_profile_peak_of(const nx_machine *m, const nx_program *prog, nx_profile_peak *out) {
    double flops_by_dtype[NX_DT_COUNT] = {0};
    double fp32_flops = 0, total = 0;
    for (uint32_t c = 0; c < prog->cores && c < NX_MAX_CORES; c++) {
        const nx_stream *s = &prog->stream[c][NX_ENG_PE];
        int stationary_fp32 = 0;
        for (uint32_t i = 0; i < s->count; i++) {
            nx_insn scratch;
            const nx_insn *in = nx_program_expand(prog, &s->recs[i], &scratch);
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
        for (uint32_t q = 0; q < r->dma_queues; q++) {
            uint64_t bytes = nx_sim_queue_bytes(r, c, q), transfers = nx_sim_queue_transfers(r, c, q);
            if (!transfers && !bytes) continue;
            if (!header) {
                fprintf(out, "  %-22s %10s %14s %10s\n", "dma queue", "transfers", "bytes", "GB/s");
                header = 1;
            }
            char name[48];
            snprintf(name, sizeof name, "q%u (engine %u.%u)", q, nx_dma_queue_engine(&m->geo, q),
                     nx_dma_queue_slot(&m->geo, q));
            fprintf(out, "  %-22s %10" PRIu64 " %14" PRIu64 " %10.2f\n", name, transfers, bytes,
                    r->total_ns > 0 ? (double)bytes / r->total_ns : 0.0);
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
        for (uint32_t q = 0; q < r->dma_queues; q++) {
            uint64_t bytes = nx_sim_queue_bytes(r, c, q), transfers = nx_sim_queue_transfers(r, c, q);
            if (!transfers && !bytes) continue;
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(queues, o);
            cJSON_AddNumberToObject(o, "queue", q);
            cJSON_AddNumberToObject(o, "engine", nx_dma_queue_engine(&m->geo, q));
            cJSON_AddNumberToObject(o, "transfers", (double)transfers);
            cJSON_AddNumberToObject(o, "bytes", (double)bytes);
            cJSON_AddNumberToObject(o, "bytes_per_ns", r->total_ns > 0 ? (double)bytes / r->total_ns : 0.0);
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
