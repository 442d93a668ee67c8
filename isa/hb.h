/* The happens-before core: vector clocks over agents and the set of live
 * memory accesses that a new access is checked against. One core, two
 * drivers that differ only in where the ordering comes from:
 *   - the race detector (sim/race.c) orders a run's log by the semaphore
 *     sequence numbers the model recorded;
 *   - the static order check (tests/kcheck.c) replays the program's own
 *     rules (program order, waits on single-agent semaphores, barriers).
 * Both number their agents with nx_hb_names, advance clocks with
 * nx_hb_step / nx_vc_join, and hand every footprint box to nx_hb_check, so
 * "two accesses race" means the same thing in both.
 *
 * Terms. An agent is one ordered sequence of events: an engine stream of a
 * core, or a DMA queue of a core. Agent a's clock is a vector over agents:
 * clock[b] = how many of b's events a is known to follow (its own entry
 * counts its own events). An access is a footprint box (isa/validate.h) of
 * an event; it happens before a later access whose clock has
 * clock[agent] >= its epoch (the agent's own count when it accessed).
 * Two accesses race when they overlap (same memory space: HBM is shared by
 * the cores, SBUF and PSUM are per core), at least one writes, they are of
 * different agents, and neither happens before the other.
 *
 * Contract for drivers: events are handed over in an order that respects
 * happens-before (an event comes after everything it follows), each with
 * its final clock. Then for a new access y and a live access x checked
 * earlier, either x happens before y or they race; nx_hb_check only tests
 * the first. Declaring every agent's events up front (nx_hb_expect) lets the
 * core drop accesses that every agent with work left already follows.
 *
 * Pure C, libc only: isa/ is the one layer both sim/ and the authoring
 * layer's tests may use. */
#ifndef NXSIM_ISA_HB_H
#define NXSIM_ISA_HB_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "validate.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NX_HB_NONE UINT32_MAX

/* ---- vector clocks ---- */

/* dst = max(dst, src), entry by entry, over n agents. */
static inline void nx_vc_join(uint32_t *dst, const uint32_t *src, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (src[i] > dst[i]) dst[i] = src[i];
}

/* ---- agent numbering ---- */

/* Keys for the two kinds of agent; nx_hb_names turns the keys a program or
 * log uses into dense agent numbers 0 .. n-1 (in key order). */
static inline uint64_t nx_hb_stream_key(uint32_t core, uint32_t engine) {
    return ((uint64_t)core << 33) | engine;
}
static inline uint64_t nx_hb_queue_key(uint32_t core, uint32_t queue) {
    return ((uint64_t)core << 33) | (UINT64_C(1) << 32) | queue;
}

typedef struct nx_hb_names {
    uint64_t *keys; /* owned; sorted and unique after nx_hb_names_seal */
    uint32_t n, cap;
} nx_hb_names;

/* Adds a key (duplicates are fine). -1 on out of memory. Start from a
 * zeroed nx_hb_names; free with nx_hb_names_free. */
int nx_hb_names_add(nx_hb_names *names, uint64_t key);
/* Sorts and removes duplicates: agent k is then names->keys[k]. */
void nx_hb_names_seal(nx_hb_names *names);
/* The agent number of key, or NX_HB_NONE (sealed names only). */
uint32_t nx_hb_names_find(const nx_hb_names *names, uint64_t key);
void nx_hb_names_free(nx_hb_names *names);

/* ---- clocks and live accesses ---- */

typedef struct nx_hb nx_hb;

/* One checked access (a footprint box of one event). */
typedef struct nx_hb_access {
    uint64_t lo, hi;     /* bytes: within each partition, or of HBM */
    uint32_t tag;        /* the driver's name for the event (log record, instruction) */
    uint32_t agent;
    uint32_t epoch;      /* the agent's own clock entry at the access */
    uint32_t core;       /* the core whose SBUF/PSUM it is (any for HBM) */
    uint16_t p_lo, p_hi; /* partitions [p_lo, p_hi) (SBUF/PSUM) */
    uint8_t write;
    uint8_t kind;        /* NX_OPK_HBM, NX_OPK_SBUF or NX_OPK_PSUM */
} nx_hb_access;

/* A race: `earlier` was checked before `later` and does not happen before it. */
typedef struct nx_hb_race {
    nx_hb_access earlier, later;
} nx_hb_race;

/* A core for `agents` agents (>= 1; their clocks start at zero). NULL on
 * out of memory. */
nx_hb *nx_hb_new(uint32_t agents);
void nx_hb_free(nx_hb *hb);
uint32_t nx_hb_agents(const nx_hb *hb);

/* Agent a's running clock (nx_hb_agents entries), owned by hb; drivers join
 * into it what the agent's next event follows. */
uint32_t *nx_hb_clock(nx_hb *hb, uint32_t agent);

/* Declares `events` more events of `agent` still to come. */
void nx_hb_expect(nx_hb *hb, uint32_t agent, uint32_t events);

/* Agent's next event happens: its own clock entry grows by one (the event's
 * epoch, returned) and one declared event is used up. */
uint32_t nx_hb_step(nx_hb *hb, uint32_t agent);

/* Checks one footprint box of the event `tag` of `agent` on `core`, whose
 * clock is `clock` (the agent's clock after its nx_hb_step, or a copy),
 * against the live accesses of its memory space, then keeps it live.
 * Returns 0, 1 with *race filled (the first race found), or -1 (out of
 * memory, err filled). Empty boxes are ignored. Accesses are dropped once
 * nothing can race with them any more: every agent with declared events
 * left follows them, or a later ordered access covers them (unless they
 * wrote and it only reads). */
int nx_hb_check(nx_hb *hb, uint32_t core, const nx_footprint *box, uint32_t agent, const uint32_t *clock,
                uint32_t tag, nx_hb_race *race, nx_error *err);

/* ---- messages ---- */

/* "sbuf[0:128]@[0, 256)" (partitions [lo:hi], bytes [lo, hi) within each)
 * or "hbm@[lo, hi)". */
void nx_hb_box_text(char *buf, size_t len, const nx_hb_access *a);

/* Fills err with the one-line report
 *   race: WHERE_A writes|reads BOX_A and WHERE_B writes|reads BOX_B with WHY ordering them
 * (WHERE: the driver's description of the event, e.g. "core 0 dve #3
 * (tensor_copy)"; WHY: "no semaphore", "nothing"). Returns 1 (a race). */
int nx_hb_race_report(nx_error *err, const char *where_a, const nx_hb_access *a, const char *where_b,
                      const nx_hb_access *b, const char *why);

#ifdef __cplusplus
}
#endif

#endif
