/*
 * Deterministic trace scenarios for the report tests (built with
 * synth_trace.h).  Each returns a new synth the caller frees.  The expected
 * models are spelled out in the tests that use them.
 */
#ifndef DF_REPORT_SCENARIOS_H
#define DF_REPORT_SCENARIOS_H

#include "synth_trace.h"

/*
 * "preview": one preview operation (op 1, pid 100) with phases, stages, a
 * query (instant, planning, planning detail), a coordinator activity on
 * thread 100, a pool task and scan activity on thread 101, one await span,
 * and samples covering every class: exact-context (1), identity-rule (2),
 * unwind error, missing stack, unresolved leaf, unattributed (thread 102),
 * outside the operation, and another process.
 */
synth *scenario_preview(void);

/*
 * "write_all": op 1 (write_all, result error) with two output owners, a
 * query per output whose planning ends with a query_owner, owner stages,
 * and samples in the owners' stages.
 */
synth *scenario_write_all(void);

/* "incomplete": the preview scenario without the root's end and without finalization. */
synth *scenario_incomplete(void);

/* "scoped": two operations with capture scopes 5 and 6. */
synth *scenario_scoped(void);

/* "ambiguous": two overlapping operations and two parallel stages; see the test for the classes. */
synth *scenario_ambiguous(void);

/* "truncated": the preview scenario plus an "Operator activity trace truncated" marker. */
synth *scenario_truncated(void);

/* "missing_identity": an operator activity without its worker identity. */
synth *scenario_missing_identity(void);

/*
 * "wide": a write_all operation whose Execution phase has 202 "Plan caches"
 * stages and owns two samples (functions alpha and beta); with a non-NULL
 * owner name, a query planned for that output.
 */
synth *scenario_wide(const char *owner_name);

/* "empty": a trace with tracks and samples but no operation. */
synth *scenario_empty(void);

/*
 * "large": `ops` preview operations with `stages` stages each, `samples`
 * samples spread over `threads` worker threads with `depth`-frame stacks
 * drawn from `functions` function names (deterministic pseudo-random).
 */
synth *scenario_large(uint32_t ops, uint32_t stages, uint64_t samples, uint32_t threads, uint32_t depth,
                      uint32_t functions);

/* Looks a scenario up by name ("preview", ...); NULL when unknown. */
synth *scenario_by_name(const char *name);

#endif
