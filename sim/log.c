/* Log records (log.h). */
#include "log.h"

#include <stdio.h>

#include "../isa/opcodes.h"

const nx_insn *nx_sim_record_insn(const nx_program *prog, const nx_sim_record *rec, nx_insn *scratch) {
    if (nx_sim_record_is_blank(rec) || rec->core >= prog->cores) return NULL;
    return nx_program_insn(prog, rec->core, (nx_engine)rec->engine, rec->index, scratch);
}

void nx_sim_record_where(char *buf, size_t len, const nx_sim_record *rec) {
    int n = snprintf(buf, len, "core %u %s #%u (%s)", rec->core, nx_engine_name((nx_engine)rec->engine),
                     rec->index, nx_opcode_mnemonic(rec->opcode));
    if (nx_sim_record_is_transfer(rec) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " on queue %d", (int)rec->queue);
}

static int check_record(const nx_program *prog, const nx_sim_record *rec, size_t i, uint32_t queues,
                        nx_error *err) {
    if (rec->core >= prog->cores)
        return nx_fail(err, "log record %zu names core %u; the program has %u", i, rec->core, prog->cores);
    if (rec->engine >= NX_ENG_COUNT)
        return nx_fail(err, "log record %zu names engine %u (0..%d)", i, rec->engine, NX_ENG_COUNT - 1);
    const char *engine = nx_engine_name((nx_engine)rec->engine);
    const nx_stream *s = &prog->stream[rec->core][rec->engine];
    if (rec->index >= s->count)
        return nx_fail(err, "log record %zu names core %u %s #%u; the stream has %u instructions", i, rec->core,
                       engine, rec->index, s->count);
    const nx_insn_rec *insn = &s->recs[rec->index];
    if (insn->opcode != rec->opcode)
        return nx_fail(err, "log record %zu is %s but core %u %s #%u is %s", i, nx_opcode_mnemonic(rec->opcode),
                       rec->core, engine, rec->index, nx_opcode_mnemonic(insn->opcode));
    if (rec->queue >= 0 && ((queues > 0 && (uint32_t)rec->queue >= queues) || rec->engine != NX_ENG_SP ||
                            !nx_opcode_is_dma(insn->opcode)))
        return nx_fail(err, "log record %zu (core %u %s #%u, %s) names DMA queue %d", i, rec->core, engine,
                       rec->index, nx_opcode_mnemonic(rec->opcode), (int)rec->queue);
    if ((insn->wait_sem != NX_SEM_NONE && insn->wait_sem + (insn->wait_span ? insn->wait_span : 1) > prog->sem_count) ||
        (insn->inc_sem != NX_SEM_NONE && insn->inc_sem >= prog->sem_count))
        return nx_fail(err, "core %u %s #%u uses a semaphore beyond the program's %u", rec->core, engine,
                       rec->index, prog->sem_count);
    return 0;
}

int nx_sim_log_check(const nx_program *prog, const nx_sim_record *log, size_t n, uint32_t queues, nx_error *err) {
    for (size_t i = 0; i < n; i++)
        if (!nx_sim_record_is_blank(&log[i]) && check_record(prog, &log[i], i, queues, err) != 0) return -1;
    return 0;
}
