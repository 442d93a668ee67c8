/* libnxsim (include/nxsim/nxsim.h): nx_prog_assemble_ordered, a program
 * written in program order and synchronised by the authoring layer
 * (kernels/author/author.h, docs/parts/kernels.md). A front end such as
 * nxsim.nki (docs/parts/nki.md) writes its trace as .nxs text without
 * semaphores; this replays the instructions of each core, in the order of
 * the text, through one authoring context, which adds exactly the waits the
 * order needs and an `end` per stream. The `.src` locations ride along. */
#define NX_KCTX_NO_SRC_MACROS 1

#include <stdlib.h>
#include <string.h>

#include "api_impl.h"
#include "isa/asm.h"
#include "isa/builder.h"
#include "isa/opcodes.h"
#include "kernels/author/author.h"

/* "FILE:LINE: " of an instruction, or "NAME: instruction N: " without one. */
static void where(char *buf, size_t len, const nx_program *p, const nx_insn_ref *r, const char *name,
                  uint32_t n) {
    const nx_src_loc *loc = nx_program_insn_src(p, r->core, (nx_engine)r->engine, r->index);
    if (loc)
        snprintf(buf, len, "%s:%u", loc->file, loc->line);
    else
        snprintf(buf, len, "%s: instruction %u", name, n + 1);
}

static int replay_one(nx_kctx *k, const nx_program *text, const nx_insn_ref *r, nx_error *err) {
    nx_insn scratch;
    const nx_insn *insn = nx_program_insn(text, r->core, (nx_engine)r->engine, r->index, &scratch);
    const char *mn = nx_opcode_mnemonic(insn->opcode);
    if (insn->wait_sem != NX_SEM_NONE || insn->inc_sem != NX_SEM_NONE)
        return nx_fail(err, "%s carries a semaphore; an ordered program gets its synchronisation from the layer", mn);
    const nx_src_loc *loc = nx_program_insn_src(text, r->core, (nx_engine)r->engine, r->index);
    if (loc) nx_kctx_src_begin_(k, loc->file, loc->line, loc->func);
    int rc;
    if (nx_opcode_is_dma(insn->opcode))
        rc = nx_kctx_dma_insn(k, (uint32_t)insn->iparam[0], insn, err);
    else if (insn->opcode == NX_OP_CORE_BARRIER)
        rc = nx_kctx_barrier(k, err);
    else if (insn->opcode == NX_OP_NOP || insn->opcode == NX_OP_END)
        rc = 0; /* the layer adds its own nops and ends */
    else
        rc = nx_kctx_emit(k, (nx_engine)r->engine, insn, err);
    return loc ? nx_kctx_src_end_(k, rc) : rc;
}

/* The instructions of core `core`, in text order, through one context. */
static int replay_core(nx_builder *b, const nx_program *text, const nx_insn_ref *order, uint32_t count,
                       uint32_t core, const char *name, nx_error *err) {
    nx_kctx *k = nx_kctx_new(b, core, text->cores);
    if (!k) return nx_fail(err, "%s: out of memory creating the authoring context", name);
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        if (order[i].core != core) continue;
        if (replay_one(k, text, &order[i], err) != 0) {
            char at[600];
            where(at, sizeof at, text, &order[i], name, i);
            nx_fail_prefix(err, "%s", at);
            rc = -1;
        }
    }
    if (rc == 0 && nx_kctx_finish(k, err) != 0) {
        nx_fail_prefix(err, "%s", name);
        rc = -1;
    }
    nx_kctx_free(k);
    return rc;
}

static int build(const nx_session *s, const nx_program *text, const nx_insn_ref *order, uint32_t count,
                 const char *name, nx_program *out, nx_error *err) {
    if (text->cores > s->machine.geo.cores)
        return nx_fail(err, "%s: .cores %u, machine '%s' has %u", name, text->cores, s->machine.geo.name,
                       s->machine.geo.cores);
    if (text->sem_count != 0)
        return nx_fail(err, "%s: .semaphores %u: an ordered program gets its semaphores from the layer", name,
                       text->sem_count);
    nx_builder *b = nx_builder_new(&s->machine.geo, text->cores);
    if (!b) return nx_fail(err, "%s: out of memory creating the program builder", name);
    int rc = -1;
    for (uint32_t i = 0; i < text->tensor_count; i++) {
        const nx_tensor_decl *t = &text->tensors[i];
        uint64_t off;
        if (nx_builder_tensor(b, t->name, (nx_dtype)t->dtype, t->ndims, t->shape, (nx_tensor_role)t->role, &off,
                              err) != 0) {
            nx_fail_prefix(err, "%s: tensor '%s'", name, t->name);
            goto done;
        }
        if (off != t->offset) {
            nx_fail(err, "%s: tensor '%s' is at @%llu, the layer places it at @%llu (leave @OFFSET out)", name,
                    t->name, (unsigned long long)t->offset, (unsigned long long)off);
            goto done;
        }
    }
    for (uint32_t c = 0; c < text->cores; c++)
        if (replay_core(b, text, order, count, c, name, err) != 0) goto done;
    if (nx_builder_finish(b, out, err) != 0) {
        nx_fail_prefix(err, "%s", name);
        goto done;
    }
    rc = 0;
done:
    nx_builder_free(b);
    return rc;
}

NXSIM_API nx_status nx_prog_assemble_ordered(const nx_session *s, const char *text, const char *name,
                                             nx_prog **out, nx_message *msg) {
    if (!s || !text || !out)
        return api_failf(msg, NX_ERR_USAGE, "nx_prog_assemble_ordered: a required argument is NULL");
    *out = NULL;
    if (!name) name = "<text>";
    nx_program parsed;
    nx_insn_ref *order = NULL;
    uint32_t count = 0;
    nx_error err;
    if (nx_assemble_ordered(name, text, strlen(text), &parsed, &order, &count, &err) != 0)
        return api_fail(msg, NX_ERR_INPUT, &err);
    nx_prog *p = calloc(1, sizeof *p);
    nx_status st = NX_OK;
    if (!p)
        st = api_failf(msg, NX_ERR_MEMORY, "out of memory");
    else if (build(s, &parsed, order, count, name, &p->prog, &err) != 0) {
        st = api_fail(msg, NX_ERR_INPUT, &err);
        free(p);
        p = NULL;
    }
    free(order);
    nx_program_free(&parsed);
    if (st != NX_OK) return st;
    *out = p;
    api_ok(msg);
    return NX_OK;
}
