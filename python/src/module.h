/*
 * The deltafunnel._native extension: shared declarations.
 *
 * Layout (modelled on CPython's _sqlite module): multi-phase init, one
 * module state struct holding the heap types and the exception class, and
 * one file per group of types.  The extension uses only the public C API
 * in include/deltafunnel/deltafunnel.h.
 *
 *   module.c   module state, init, logging/diagnostics functions
 *   args.c     argument binding with the reference's TypeError messages,
 *              conversions of Python values to df_value
 *   errors.c   df_error -> DeltaFunnelError
 *   options.c  ProviderScanOptions, FileRepartitioning, RankedProfileConfig
 *   session.c  Session, PendingDeltaSource
 *   table.c    Table, Preview, MssqlOutputSpec
 *   progress.c the progress display behind progress=True/None
 */
#ifndef DF_PY_MODULE_H
#define DF_PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include "deltafunnel/deltafunnel.h"

/* Everything the module owns; reached from types through PyType_GetModuleState. */
typedef struct df_py_state {
    PyTypeObject *session_type;        /* deltafunnel.Session */
    PyTypeObject *pending_type;        /* deltafunnel.PendingDeltaSource */
    PyTypeObject *table_type;          /* deltafunnel.Table */
    PyTypeObject *preview_type;        /* deltafunnel.Preview */
    PyTypeObject *output_spec_type;    /* deltafunnel.MssqlOutputSpec */
    PyTypeObject *scan_options_type;   /* deltafunnel.ProviderScanOptions */
    PyTypeObject *repartitioning_type; /* deltafunnel.FileRepartitioning */
    PyTypeObject *ranked_type;         /* deltafunnel.RankedProfileConfig */
    PyObject *error_type;              /* deltafunnel.DeltaFunnelError */
    PyObject *fill_missing;            /* FileRepartitioning.FILL_MISSING_PARALLELISM */
    PyObject *rebalance;               /* FileRepartitioning.REBALANCE */
    PyObject *json_loads;              /* json.loads */
} df_py_state;

/* The state of the module that defined `type` (a type of this module). */
df_py_state *df_py_state_of_type(PyTypeObject *type);
df_py_state *df_py_state_of_module(PyObject *module);

/* ------------------------------------------------------------------------ */
/* Argument binding (args.c)                                                 */

#define DF_PY_MAX_PARAMS 16

/*
 * A signature: `names[0..nparams)`; the first `npositional` may be passed
 * by position (the rest are keyword-only); the first `nrequired` are
 * required positionals; `required_kw` names keyword-only parameters that
 * must be given (bit i = names[i]).
 */
typedef struct df_py_sig {
    const char *fname;                 /* "Session.delta_lake" (shown in messages) */
    const char *const *names;
    int nparams;
    int npositional;
    int nrequired;
    unsigned required_kw;
} df_py_sig;

/*
 * Binds vectorcall-style arguments to out[0..nparams) (borrowed; NULL when
 * not given).  Returns 0, or -1 with a TypeError worded like the reference.
 */
int df_py_bind(const df_py_sig *sig, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **out);
/* The same for tp_new-style (tuple, dict) arguments. */
int df_py_bind_tuple(const df_py_sig *sig, PyObject *args, PyObject *kwargs, PyObject **out);

/* TypeError "'<type>' object is not an instance of '<expected>'"; returns -1. */
int df_py_type_error(PyObject *obj, const char *expected);
/* None -> *is_none; bool -> *value; anything else TypeError.  Returns 0 / -1. */
int df_py_opt_bool(PyObject *obj, int *value, int *is_none);
/* A real bool (None is rejected too). */
int df_py_strict_bool(PyObject *obj, int *value);
/* None -> NULL; str -> UTF-8 (borrowed from obj); else TypeError.  Returns 0 / -1. */
int df_py_opt_str(PyObject *obj, const char **out);
int df_py_req_str(PyObject *obj, const char **out);
/*
 * UTF-8 of a str (borrowed from obj) that holds no NUL character: a string
 * with one raises DeltaFunnelError kind invalid_argument rather than being
 * cut at the NUL.  df_py_refuse_nul raises that error; both return 0 / -1.
 */
int df_py_utf8(PyObject *obj, const char **out);
int df_py_refuse_nul(void);
/* A machine-size unsigned count with Python's index rules (limit arguments). */
int df_py_usize(PyObject *obj, int64_t *out);

/* Python values as df_value trees; the pool owns the entry arrays. */
typedef struct df_py_value_pool {
    df_value_entry *blocks[32];        /* entry arrays handed out */
    int nblocks;
} df_py_value_pool;

/* Converts obj (dicts up to 2 levels deep); strings are borrowed from obj.  0 / -1. */
int df_py_to_value(PyObject *obj, df_value *out, df_py_value_pool *pool, int depth);
void df_py_value_pool_free(df_py_value_pool *pool);

/* ------------------------------------------------------------------------ */
/* Errors (errors.c)                                                         */

/* Raises DeltaFunnelError from a df_error (clears it).  Returns NULL. */
PyObject *df_py_raise(df_py_state *st, df_error *err);
/*
 * Raises DeltaFunnelError for `kind` (phase = its default phase in
 * df_errkinds.def, so kind and phase strings come from the one table) with
 * context None.  Returns NULL.
 */
PyObject *df_py_raise_simple(df_py_state *st, df_errkind kind, const char *message);
/* json.loads(text) or None for NULL. */
PyObject *df_py_json(df_py_state *st, const char *text);

/* ------------------------------------------------------------------------ */
/* Types (options.c, session.c, table.c)                                     */

int df_py_add_option_types(PyObject *module, df_py_state *st);
int df_py_add_session_types(PyObject *module, df_py_state *st);
int df_py_add_table_types(PyObject *module, df_py_state *st);

/* Applies a ProviderScanOptions instance to session options.  0 / -1 (exception set). */
int df_py_apply_scan_options(df_py_state *st, PyObject *scan_options, df_session_options *opts);

/* A new Table object owning `table` (the reference is taken over). */
PyObject *df_py_table_new(df_py_state *st, PyObject *session, df_table *table);
/* The df_session of a Session object (borrowed). */
df_session *df_py_session_handle(PyObject *session);

/* Validates progress / execution_profile / ranked_profile the way every operation does. */
int df_py_check_profile_args(df_py_state *st, PyObject *progress, PyObject *execution_profile,
                             PyObject *ranked_profile, int *progress_mode, int *profile);

/*
 * Ranked profiles around an operation (options.c).  df_py_ranked_begin
 * starts one for a RankedProfileConfig on the calling thread (None/NULL:
 * *out = NULL); 0, or -1 with DeltaFunnelError raised.  The operation must
 * run on the same thread.  df_py_ranked_end finishes it with the GIL
 * released: 0, or -1 with *err filled (nothing raised).
 * df_py_ranked_outcome finishes it and delivers the operation's outcome:
 * `result` (a new reference, or NULL with the operation's exception set) is
 * returned unchanged unless the operation succeeded and the report failed;
 * then the ranked_profile error is raised with deltafunnel_operation_status
 * = `status` and, when attach_report, deltafunnel_operation_report = result.
 */
int df_py_ranked_begin(df_py_state *st, PyObject *cfg, df_ranked_profile **out);
int df_py_ranked_end(df_ranked_profile *rp, df_error *err);
PyObject *df_py_ranked_outcome(df_py_state *st, df_ranked_profile *rp, PyObject *result, const char *status,
                               bool attach_report);

/* ------------------------------------------------------------------------ */
/* Logging (module.c)                                                        */

/*
 * Sends one event (target "delta_funnel") to the logging bridge when
 * init_logging() installed it: `event` is the telemetry event name, `fields`
 * a dict of extra fields (may be NULL).  Never raises: a failing handler is
 * the application's problem and is dropped here.
 */
void df_py_log_event(const char *level, const char *event, PyObject *fields);

/* ------------------------------------------------------------------------ */
/* Progress (progress.c)                                                     */

/* progress=False: no display; None: only on an interactive stderr; True: always. */
typedef struct df_py_progress {
    int enabled;                       /* 1 when events are shown */
    int interactive;                   /* stderr is a terminal: rewrite one line */
    int notebook;                      /* running under Jupyter: an IPython display updated in place */
    int broken;                        /* writing failed once: stop */
    char operation[64];                /* label of the STARTED event */
    char label[64];                    /* label of the current phase */
    int32_t output_index;              /* write_all: current output (1-based), 0 = none */
    int32_t output_count;              /* write_all: outputs */
    double started;                    /* monotonic seconds at STARTED */
    double phase_started;              /* monotonic seconds when writing started (rates) */
    double last_update;                /* monotonic seconds of the last numeric update shown */
    PyObject *handle;                  /* the notebook DisplayHandle, or NULL */
    int has_pending;                   /* a throttled rows update waits to be shown */
    df_progress_event pending;         /* that update (scope points at pending_scope) */
    char pending_scope[160];           /* copy of its scope */
    PyObject *interrupt;               /* a KeyboardInterrupt (or other BaseException) raised by the display */
} df_py_progress;

/* Decides whether to show progress (mode: 0 off, 1 auto, 2 forced) and fills `sink`. */
void df_py_progress_init(df_py_progress *p, int mode, df_progress *sink);
/* Ends the display after the operation (closes a notebook display; the GIL is held). */
void df_py_progress_done(df_py_progress *p);
/*
 * Ends the display and delivers the operation's outcome: `result` (a new
 * reference, or NULL with the operation's exception set) unchanged, unless
 * the display was interrupted (KeyboardInterrupt): then the interruption is
 * raised with deltafunnel_operation_status = `status` ("completed",
 * "completed_with_failures", "failed") and deltafunnel_operation_error /
 * deltafunnel_operation_report attached, after one stderr line.
 */
PyObject *df_py_progress_deliver(df_py_progress *p, PyObject *result, const char *status);

/* ------------------------------------------------------------------------ */
/* Ctrl-C during native calls (interrupt.c)                                  */

/* A native call run by df_py_run_interruptible (no GIL, no Python). */
typedef void (*df_py_native_fn)(void *arg);

/* The ident of Python's main thread (GIL held), 0 when it cannot be told. */
unsigned long df_py_main_thread_ident(void);
/*
 * Runs fn(arg) with the GIL released so that signals stay deliverable: on
 * the main thread the call runs on a helper thread while this thread checks
 * for signals every 20 ms.  When a handler raises (KeyboardInterrupt),
 * *cancel is set, the call is waited for (the library stops within a
 * batch), *interrupt receives the handler's exception (a new reference) and
 * 1 is returned; otherwise 0 with *interrupt NULL.  GIL held on entry and
 * exit.  Off the main thread fn runs directly (no signals arrive there).
 */
int df_py_run_interruptible(df_py_native_fn fn, void *arg, _Atomic bool *cancel, PyObject **interrupt);
/*
 * Raises `interrupt` (consumed) with deltafunnel_operation_status =
 * `status`; a pending exception (the operation's own error) becomes its
 * deltafunnel_operation_error and `report` (borrowed, may be NULL) its
 * deltafunnel_operation_report.  Returns NULL.
 */
PyObject *df_py_raise_interrupt(PyObject *interrupt, const char *status, PyObject *report);
/*
 * The end of an interrupted write or write_all: raises `interrupt` with
 * `status`, the operation's error (when k != DF_OK) or its report (the
 * JSON `report`, freed here) attached.  Returns NULL.
 */
PyObject *df_py_raise_write_interrupt(df_py_state *st, PyObject *interrupt, const char *status, df_errkind k,
                                      df_error *err, char *report);
/*
 * Executes `table` as an Arrow C stream whose get_next, pulled on the main
 * thread, can be interrupted by signals.  `owner_raises`: the caller (Table.to_arrow)
 * raises the interruption itself through df_py_stream_raise; otherwise a
 * KeyboardInterrupt is re-armed for Python after the failed get_next.
 * *handle identifies the stream for df_py_stream_raise while its consumer
 * holds it.  0, or -1 with an exception set.
 */
int df_py_table_stream(df_py_state *st, df_table *table, bool owner_raises, struct ArrowArrayStream *out,
                       void **handle);
/*
 * After the stream's consumer failed (its exception pending): raises the
 * interruption, or the library's error as DeltaFunnelError (phase, kind),
 * in its place and returns NULL; leaves the consumer's exception when the
 * stream itself did not fail.
 */
PyObject *df_py_stream_raise(df_py_state *st, void *handle);

/* ------------------------------------------------------------------------ */
/* SQL Server outputs (table.c)                                              */

/* The native spec of an MssqlOutputSpec (borrowed) and its Session object (borrowed). */
df_output_spec *df_py_output_spec_handle(PyObject *obj);
PyObject *df_py_output_spec_session(PyObject *obj);
/* Routes native log events to deltafunnel._logbridge (takes the GIL per event). */
void df_py_log_sink_init(df_py_state *st, df_log_sink *sink);

#endif
