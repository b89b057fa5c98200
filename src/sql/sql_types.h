/*
 * SQL types and coercion rules (DataFusion's), shared by the binder and
 * function resolution.  Every function returning a df_type returns a new
 * reference (static types included, for uniformity) or NULL.
 */
#ifndef DF_SQL_SQL_TYPES_H
#define DF_SQL_SQL_TYPES_H

#include "columnar/columnar.h"

typedef enum sqlt_arith_op { SQLT_ADD, SQLT_SUB, SQLT_MUL, SQLT_DIV, SQLT_MOD } sqlt_arith_op;

/* Maximum decimal128 precision. */
#define SQLT_MAX_PRECISION 38

/* Precision and scale of a decimal type (false if not decimal). */
bool df__sqlt_decimal_ps(const df_type *t, int *p, int *s);
/* The decimal type an integer/float type is widened to in decimal arithmetic (Int32 -> (10,0)), or NULL. */
df_type *df__sqlt_numeric_to_decimal(const df_type *t);
bool df__sqlt_is_string(const df_type *t);      /* utf8 */
bool df__sqlt_is_null(const df_type *t);        /* the Null type */

/*
 * Comparison coercion: the common type both operands of =, <, IN, BETWEEN
 * are cast to, or NULL when they cannot be compared.
 */
df_type *df__sqlt_comparison(const df_type *a, const df_type *b);

/*
 * Arithmetic coercion: on success sets *lt, *rt (operand types to cast to)
 * and *ret (result type), all new references, and returns true.
 */
bool df__sqlt_arith(sqlt_arith_op op, const df_type *a, const df_type *b, df_type **lt, df_type **rt, df_type **ret);

/*
 * Union resolution (COALESCE, VALUES): the
 * common type of n types, ignoring Null; NULL when there is none.  All-Null
 * gives Null.
 */
df_type *df__sqlt_union(const df_type *const *types, int32_t n);
/* Same where strings and numbers meet as strings (CASE results, set operations, nvl2). */
df_type *df__sqlt_union_text(const df_type *const *types, int32_t n);

/* True when a cast from `from` to `to` is supported by the executor. */
bool df__sqlt_can_cast(const df_type *from, const df_type *to);

/* Appends the type as DataFusion's arrow_typeof prints it ("Int64", "Timestamp(ns)"). */
df_errkind df__sqlt_display(const df_type *t, df_buf *out, df_error *err);

/*
 * Parses interval text ("1 day 2 hours", "3", "-1 month", "01:30:00"); bare
 * numbers take `unit` (seconds when NULL).  Returns 0 with the parts, 1
 * when a part is out of range, 2 when the text does not parse.
 */
int df__sqlt_parse_interval(const char *text, size_t len, const char *unit, int32_t *months, int32_t *days,
                        int64_t *nanos);

#endif
