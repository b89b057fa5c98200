/*
 * Scalar function resolution: names -> df_fn, argument coercion and result
 * types following DataFusion's signatures.
 *
 * Each function has a signature class (SIG_*) that says how arguments are
 * coerced and what the result type is; the executor's kernels rely on
 * exactly these argument types.  A few functions are special forms handled
 * here directly: coalesce/nvl/ifnull (lazy COALESCE node), nvl2 (CASE),
 * arrow_typeof (folded to a string now), arrow_cast (a CAST), now() and
 * friends (the statement time, fixed at bind time as in DataFusion).
 */
#include <stdio.h>

#include "common/digest.h"
#include "common/tzif.h"
#include "sql/sql_binder.h"

typedef enum sig {
    SIG_MATH_FLOAT,     /* (num) -> float64 (float32 stays float32) */
    SIG_SAME_NUM,       /* abs: (num) -> same */
    SIG_ROUND,          /* round/trunc: (num [, int64]) -> float or same decimal */
    SIG_CEIL_FLOOR,     /* (num) -> float or same decimal */
    SIG_POWER,          /* (num, num) -> float64 */
    SIG_LOG,            /* log(x) | log(base, x) -> float64 */
    SIG_FLOAT2,         /* (num, num) -> float64: atan2, nanvl */
    SIG_NONE_FLOAT,     /* () -> float64: pi, random */
    SIG_INT2_INT64,     /* (int, int) -> int64: gcd, lcm */
    SIG_INT_INT64,      /* (int) -> int64: factorial */
    SIG_FLOAT_BOOL,     /* (num) -> bool: isnan, iszero */
    SIG_STR_STR,        /* (str) -> str */
    SIG_STR_INT32,      /* (str) -> int32 */
    SIG_TRIM,           /* (str [, str]) -> str */
    SIG_SUBSTR,         /* (str, int64 [, int64]) -> str */
    SIG_STR_I64_STR,    /* (str, int64) -> str: left, right, repeat */
    SIG_PAD,            /* (str, int64 [, str]) -> str */
    SIG_STR3_STR,       /* (str, str, str) -> str: replace, translate */
    SIG_STR2_INT32,     /* (str, str) -> int32: strpos */
    SIG_STR2_BOOL,      /* (str, str) -> bool */
    SIG_SPLIT_PART,     /* (str, str, int64) -> str */
    SIG_INT_STR,        /* (int64) -> str: chr, to_hex */
    SIG_CONCAT,         /* (any...) -> str */
    SIG_CONCAT_WS,      /* (str, any...) -> str */
    SIG_OVERLAY,        /* (str, str, int64 [, int64]) -> str */
    SIG_NULLIF,         /* (a, b) -> common comparison type */
    SIG_GREATEST,       /* (a, ...) -> union type */
    SIG_DATE_PART,      /* (str literal, temporal) -> int32 / int64 / float64 */
    SIG_DATE_TRUNC,     /* (str literal, temporal) -> timestamp */
    SIG_MAKE_DATE,      /* (int, int, int) -> date32 */
    SIG_TO_TIMESTAMP,   /* (str | num) -> timestamp(ns) */
    SIG_TO_DATE,        /* (str | int) -> date32 */
    SIG_TO_UNIXTIME,    /* (str | temporal) -> int64 */
    SIG_FROM_UNIXTIME,  /* (int64) -> timestamp(s) */
    SIG_NONE_STR,       /* () -> str: uuid */
    SIG_TO_TS_UNIT,     /* to_timestamp_<unit>(str | int | timestamp) -> timestamp(unit) */
    SIG_DATE_BIN,       /* (interval, timestamp | date [, origin]) -> timestamp */
    SIG_REGEXP,         /* regexp_like / regexp_count / regexp_replace */
    SIG_ENCODE,         /* encode(bytes | str, fmt) -> str; decode(str, fmt) -> binary */
    SIG_STR2_INT32B,    /* find_in_set / levenshtein: (str, str) -> int32 */
    SIG_SUBSTR_INDEX,   /* (str, str, int64) -> str */
    SIG_TIME,           /* make_time(int, int, int) -> time32(s); to_time(str | timestamp) -> time64(ns) */
    SIG_TO_CHAR,        /* to_char(temporal, str) -> str */
    SIG_HASH,           /* sha224..sha512(str | binary) -> binary; digest(str | binary, str) -> binary */
    SIG_BITNOT,         /* internal */
} sig;

typedef struct fn_entry {
    const char *name;   /* SQL name (lower case) */
    df_fn fn;           /* function id */
    sig sig;            /* coercion class */
    int8_t min_args;    /* argument count bounds (-1 = variadic) */
    int8_t max_args;
} fn_entry;

static const fn_entry functions[] = {
    {"abs", DF_FN_ABS, SIG_SAME_NUM, 1, 1},
    {"round", DF_FN_ROUND, SIG_ROUND, 1, 2},
    {"trunc", DF_FN_TRUNC, SIG_ROUND, 1, 2},
    {"ceil", DF_FN_CEIL, SIG_CEIL_FLOOR, 1, 1},
    {"ceiling", DF_FN_CEIL, SIG_CEIL_FLOOR, 1, 1},
    {"floor", DF_FN_FLOOR, SIG_CEIL_FLOOR, 1, 1},
    {"sqrt", DF_FN_SQRT, SIG_MATH_FLOAT, 1, 1},
    {"cbrt", DF_FN_CBRT, SIG_MATH_FLOAT, 1, 1},
    {"power", DF_FN_POWER, SIG_POWER, 2, 2},
    {"pow", DF_FN_POWER, SIG_POWER, 2, 2},
    {"exp", DF_FN_EXP, SIG_MATH_FLOAT, 1, 1},
    {"ln", DF_FN_LN, SIG_MATH_FLOAT, 1, 1},
    {"log10", DF_FN_LOG10, SIG_MATH_FLOAT, 1, 1},
    {"log2", DF_FN_LOG2, SIG_MATH_FLOAT, 1, 1},
    {"log", DF_FN_LOG, SIG_LOG, 1, 2},
    {"signum", DF_FN_SIGN, SIG_MATH_FLOAT, 1, 1},
    {"sign", DF_FN_SIGN, SIG_MATH_FLOAT, 1, 1},
    {"pi", DF_FN_PI, SIG_NONE_FLOAT, 0, 0},
    {"random", DF_FN_RANDOM, SIG_NONE_FLOAT, 0, 0},
    {"sin", DF_FN_SIN, SIG_MATH_FLOAT, 1, 1},
    {"cos", DF_FN_COS, SIG_MATH_FLOAT, 1, 1},
    {"tan", DF_FN_TAN, SIG_MATH_FLOAT, 1, 1},
    {"asin", DF_FN_ASIN, SIG_MATH_FLOAT, 1, 1},
    {"acos", DF_FN_ACOS, SIG_MATH_FLOAT, 1, 1},
    {"atan", DF_FN_ATAN, SIG_MATH_FLOAT, 1, 1},
    {"atan2", DF_FN_ATAN2, SIG_FLOAT2, 2, 2},
    {"degrees", DF_FN_DEGREES, SIG_MATH_FLOAT, 1, 1},
    {"radians", DF_FN_RADIANS, SIG_MATH_FLOAT, 1, 1},
    {"gcd", DF_FN_GCD, SIG_INT2_INT64, 2, 2},
    {"lcm", DF_FN_LCM, SIG_INT2_INT64, 2, 2},
    {"factorial", DF_FN_FACTORIAL, SIG_INT_INT64, 1, 1},
    {"isnan", DF_FN_ISNAN, SIG_FLOAT_BOOL, 1, 1},
    {"iszero", DF_FN_ISZERO, SIG_FLOAT_BOOL, 1, 1},
    {"nanvl", DF_FN_NANVL, SIG_FLOAT2, 2, 2},
    {"lower", DF_FN_LOWER, SIG_STR_STR, 1, 1},
    {"upper", DF_FN_UPPER, SIG_STR_STR, 1, 1},
    {"btrim", DF_FN_BTRIM, SIG_TRIM, 1, 2},
    {"trim", DF_FN_BTRIM, SIG_TRIM, 1, 2},
    {"ltrim", DF_FN_LTRIM, SIG_TRIM, 1, 2},
    {"rtrim", DF_FN_RTRIM, SIG_TRIM, 1, 2},
    {"substr", DF_FN_SUBSTR, SIG_SUBSTR, 2, 3},
    {"substring", DF_FN_SUBSTR, SIG_SUBSTR, 2, 3},
    {"length", DF_FN_CHAR_LENGTH, SIG_STR_INT32, 1, 1},
    {"char_length", DF_FN_CHAR_LENGTH, SIG_STR_INT32, 1, 1},
    {"character_length", DF_FN_CHAR_LENGTH, SIG_STR_INT32, 1, 1},
    {"len", DF_FN_CHAR_LENGTH, SIG_STR_INT32, 1, 1},
    {"octet_length", DF_FN_OCTET_LENGTH, SIG_STR_INT32, 1, 1},
    {"bit_length", DF_FN_BIT_LENGTH, SIG_STR_INT32, 1, 1},
    {"ascii", DF_FN_ASCII, SIG_STR_INT32, 1, 1},
    {"concat", DF_FN_CONCAT, SIG_CONCAT, 1, -1},
    {"concat_ws", DF_FN_CONCAT_WS, SIG_CONCAT_WS, 2, -1},
    {"replace", DF_FN_REPLACE, SIG_STR3_STR, 3, 3},
    {"translate", DF_FN_TRANSLATE, SIG_STR3_STR, 3, 3},
    {"left", DF_FN_LEFT, SIG_STR_I64_STR, 2, 2},
    {"right", DF_FN_RIGHT, SIG_STR_I64_STR, 2, 2},
    {"repeat", DF_FN_REPEAT, SIG_STR_I64_STR, 2, 2},
    {"lpad", DF_FN_LPAD, SIG_PAD, 2, 3},
    {"rpad", DF_FN_RPAD, SIG_PAD, 2, 3},
    {"reverse", DF_FN_REVERSE, SIG_STR_STR, 1, 1},
    {"initcap", DF_FN_INITCAP, SIG_STR_STR, 1, 1},
    {"md5", DF_FN_MD5, SIG_STR_STR, 1, 1},
    {"strpos", DF_FN_STRPOS, SIG_STR2_INT32, 2, 2},
    {"instr", DF_FN_STRPOS, SIG_STR2_INT32, 2, 2},
    {"starts_with", DF_FN_STARTS_WITH, SIG_STR2_BOOL, 2, 2},
    {"ends_with", DF_FN_ENDS_WITH, SIG_STR2_BOOL, 2, 2},
    {"contains", DF_FN_CONTAINS, SIG_STR2_BOOL, 2, 2},
    {"split_part", DF_FN_SPLIT_PART, SIG_SPLIT_PART, 3, 3},
    {"chr", DF_FN_CHR, SIG_INT_STR, 1, 1},
    {"to_hex", DF_FN_TO_HEX, SIG_INT_STR, 1, 1},
    {"overlay", DF_FN_OVERLAY, SIG_OVERLAY, 3, 4},
    {"nullif", DF_FN_NULLIF, SIG_NULLIF, 2, 2},
    {"greatest", DF_FN_GREATEST, SIG_GREATEST, 1, -1},
    {"least", DF_FN_LEAST, SIG_GREATEST, 1, -1},
    {"date_part", DF_FN_DATE_PART, SIG_DATE_PART, 2, 2},
    {"datepart", DF_FN_DATE_PART, SIG_DATE_PART, 2, 2},
    {"date_trunc", DF_FN_DATE_TRUNC, SIG_DATE_TRUNC, 2, 2},
    {"datetrunc", DF_FN_DATE_TRUNC, SIG_DATE_TRUNC, 2, 2},
    {"make_date", DF_FN_MAKE_DATE, SIG_MAKE_DATE, 3, 3},
    {"to_timestamp", DF_FN_TO_TIMESTAMP, SIG_TO_TIMESTAMP, 1, -1},
    {"to_date", DF_FN_TO_DATE, SIG_TO_DATE, 1, -1},
    {"to_unixtime", DF_FN_TO_UNIXTIME, SIG_TO_UNIXTIME, 1, -1},
    {"from_unixtime", DF_FN_FROM_UNIXTIME, SIG_FROM_UNIXTIME, 1, 2},
    {"uuid", DF_FN_UUID, SIG_NONE_STR, 0, 0},
    {"to_timestamp_seconds", DF_FN_TO_TIMESTAMP_SECONDS, SIG_TO_TS_UNIT, 1, -1},
    {"to_timestamp_millis", DF_FN_TO_TIMESTAMP_MILLIS, SIG_TO_TS_UNIT, 1, -1},
    {"to_timestamp_micros", DF_FN_TO_TIMESTAMP_MICROS, SIG_TO_TS_UNIT, 1, -1},
    {"to_timestamp_nanos", DF_FN_TO_TIMESTAMP_NANOS, SIG_TO_TS_UNIT, 1, -1},
    {"date_bin", DF_FN_DATE_BIN, SIG_DATE_BIN, 2, 3},
    {"sinh", DF_FN_SINH, SIG_MATH_FLOAT, 1, 1},
    {"cosh", DF_FN_COSH, SIG_MATH_FLOAT, 1, 1},
    {"tanh", DF_FN_TANH, SIG_MATH_FLOAT, 1, 1},
    {"asinh", DF_FN_ASINH, SIG_MATH_FLOAT, 1, 1},
    {"acosh", DF_FN_ACOSH, SIG_MATH_FLOAT, 1, 1},
    {"atanh", DF_FN_ATANH, SIG_MATH_FLOAT, 1, 1},
    {"regexp_like", DF_FN_REGEXP_LIKE, SIG_REGEXP, 2, 3},
    {"regexp_count", DF_FN_REGEXP_COUNT, SIG_REGEXP, 2, 4},
    {"regexp_replace", DF_FN_REGEXP_REPLACE, SIG_REGEXP, 3, 4},
    {"regexp_instr", DF_FN_REGEXP_INSTR, SIG_REGEXP, 2, 6},
    {"encode", DF_FN_ENCODE, SIG_ENCODE, 2, 2},
    {"decode", DF_FN_DECODE, SIG_ENCODE, 2, 2},
    {"find_in_set", DF_FN_FIND_IN_SET, SIG_STR2_INT32B, 2, 2},
    {"levenshtein", DF_FN_LEVENSHTEIN, SIG_STR2_INT32B, 2, 2},
    {"substr_index", DF_FN_SUBSTRING_INDEX, SIG_SUBSTR_INDEX, 3, 3},
    {"substring_index", DF_FN_SUBSTRING_INDEX, SIG_SUBSTR_INDEX, 3, 3},
    {"sha224", DF_FN_SHA224, SIG_HASH, 1, 1},
    {"sha256", DF_FN_SHA256, SIG_HASH, 1, 1},
    {"sha384", DF_FN_SHA384, SIG_HASH, 1, 1},
    {"sha512", DF_FN_SHA512, SIG_HASH, 1, 1},
    {"digest", DF_FN_DIGEST, SIG_HASH, 2, 2},
    {"make_time", DF_FN_MAKE_TIME, SIG_TIME, 3, 3},
    {"at_time_zone", DF_FN_AT_TIME_ZONE, SIG_TIME, 2, 2},
    {"to_local_time", DF_FN_TO_LOCAL_TIME, SIG_TIME, 1, 1},
    {"to_time", DF_FN_TO_TIME, SIG_TIME, 1, -1},
    {"to_char", DF_FN_TO_CHAR, SIG_TO_CHAR, 2, 2},
    {"date_format", DF_FN_TO_CHAR, SIG_TO_CHAR, 2, 2},
};

static const fn_entry *find_entry_by_fn(df_fn fn) {
    for (size_t i = 0; i < DF_ARRAY_LEN(functions); i++)
        if (functions[i].fn == fn) return &functions[i];
    return NULL;
}

static char *tname(const df_type *t, char *buf, size_t size) {
    df_buf tmp;
    df_buf_init(&tmp, 256);
    if (df__sqlt_display(t, &tmp, NULL) == DF_OK && tmp.data)
        snprintf(buf, size, "%s", tmp.data);
    else
        snprintf(buf, size, "?");
    df_buf_free(&tmp);
    return buf;
}

static df_expr *type_error(binder *b, df_fn fn, int32_t pos, const df_type *t) {
    char x[64];
    df__bind_error(b, DF_ERR_SQL_TYPE, pos, "function %s does not accept an argument of type %s", df_fn_name(fn),
               tname(t, x, sizeof x));
    return NULL;
}

static bool is_null_type(const df_type *t) { return t->id == DF_TYPE_NULL; }
static bool numeric_or_null(const df_type *t) { return df_type_is_numeric(t) || is_null_type(t); }
static bool int_or_null(const df_type *t) { return df_type_is_integer(t) || is_null_type(t); }
static bool stringish(const df_type *t) {
    return t->id == DF_TYPE_UTF8 || is_null_type(t) || t->id == DF_TYPE_BINARY;
}

/* Coerces args[i] to t; false with the error recorded. */
static bool coerce_arg(binder *b, df_expr **args, int32_t i, df_type *t, int32_t pos) {
    args[i] = df__bind_coerce(b, args[i], t, pos);
    return args[i] != NULL;
}

static bool any_nullable(df_expr *const *args, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        if (args[i]->nullable) return true;
    return false;
}

/* Float result for a numeric argument: Float32 stays, everything else becomes Float64. */
static df_type *float_of(const df_type *t) {
    return t->id == DF_TYPE_FLOAT32 ? df_type_float32() : df_type_float64();
}

static df_expr *finish(binder *b, df_fn fn, df_type *ret, df_expr **args, int32_t n) {
    return df__expr_func(b->plan, fn, ret, any_nullable(args, n), n, args, b->err);
}

/* date_part result type from its (literal) part name. */
static df_type *date_part_type(binder *b, df_expr *part, int32_t pos) {
    if (part->kind != DF_EX_LITERAL || part->type->id != DF_TYPE_UTF8 || part->lit->is_null) {
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, pos, "the date part must be a string literal");
        return NULL;
    }
    char name[32];
    int64_t len = part->lit->v.bytes.len;
    if (len <= 0 || len >= (int64_t)sizeof name) goto bad;
    for (int64_t i = 0; i < len; i++) {
        char c = (char)part->lit->v.bytes.ptr[i];
        name[i] = (c >= 'A' && c <= 'Z') ? (char)(c + 32) : c;
    }
    name[len] = '\0';
    static const char *const int32_parts[] = {"year", "years", "month", "months", "week", "weeks", "day", "days",
                                              "hour", "hours", "minute", "minutes", "second", "seconds",
                                              "millisecond", "milliseconds", "microsecond", "microseconds",
                                              "quarter", "dow", "doy", "isodow", "isoyear", "century", "decade",
                                              "millennium", "y", "mon", "d", "h", "m", "s", "ms", "us", NULL};
    for (const char *const *p = int32_parts; *p; p++)
        if (strcmp(*p, name) == 0) return df_type_int32();
    if (strcmp(name, "nanosecond") == 0 || strcmp(name, "nanoseconds") == 0 || strcmp(name, "ns") == 0)
        return df_type_int64();
    if (strcmp(name, "epoch") == 0) return df_type_float64();
bad:
    df__bind_error(b, DF_ERR_SQL_TYPE, pos, "unknown date part");
    return NULL;
}

static bool temporal_arg(const df_type *t) {
    return t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_DATE64 || t->id == DF_TYPE_TIMESTAMP ||
           t->id == DF_TYPE_TIME32 || t->id == DF_TYPE_TIME64 || t->id == DF_TYPE_INTERVAL_MDN ||
           t->id == DF_TYPE_DURATION;
}

/* A time zone argument: a string literal naming a zone we can open, copied into name. */
static bool zone_literal(binder *b, const df_expr *z, int32_t pos, char *name, size_t cap) {
    if (z->kind != DF_EX_LITERAL || z->lit->is_null || z->type->id != DF_TYPE_UTF8) {
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "a time zone must be given as a string literal");
        return false;
    }
    int64_t zl = z->lit->v.bytes.len;
    if (zl <= 0 || zl >= (int64_t)cap) {
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "invalid time zone name");
        return false;
    }
    df__memcpy(name, z->lit->v.bytes.ptr, (size_t)zl);
    name[zl] = '\0';
    df_tz *probe = NULL;
    df_error tz_err = {0};
    if (df__tz_open(name, &probe, &tz_err) != DF_OK) {
        df_error_clear(&tz_err);
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "unknown time zone '%s'", name);
        return false;
    }
    df__tz_free(probe);
    return true;
}

/* Coerces arguments per the signature and builds the node. */
df_expr *df__bind_resolve_fn(binder *b, df_fn fn, df_expr **args, int32_t n, int32_t pos) {
    const fn_entry *fe = find_entry_by_fn(fn);
    if (!fe) {
        df__bind_error(b, DF_ERR_INTERNAL, pos, "function %s has no signature", df_fn_name(fn));
        return NULL;
    }
    if (n < fe->min_args || (fe->max_args >= 0 && n > fe->max_args)) {
        df__bind_error(b, DF_ERR_SQL_TYPE, pos, "function %s does not take %d argument%s", fe->name, n, n == 1 ? "" : "s");
        return NULL;
    }
    df_type *utf8 = df_type_utf8(), *i64 = df_type_int64(), *f64 = df_type_float64();
    df_type *ret = NULL;
    if (n > 1 && fe->max_args < 0 && (fe->sig == SIG_TO_TIMESTAMP || fe->sig == SIG_TO_DATE || fe->sig == SIG_TO_UNIXTIME ||
                                      fe->sig == SIG_TO_TS_UNIT || fe->sig == SIG_TIME)) {
        /* to_timestamp(str, format, ...) and friends: chrono formats tried in turn; other inputs ignore them. */
        for (int32_t i = 1; i < n; i++) {
            if (!stringish(args[i]->type) || args[i]->type->id == DF_TYPE_BINARY) return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, utf8, pos)) return NULL;
        }
        if (args[0]->type->id != DF_TYPE_UTF8 && !is_null_type(args[0]->type)) return df__bind_resolve_fn(b, fn, args, 1, pos);
        if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
        df_time_unit u = fn == DF_FN_TO_TIMESTAMP_SECONDS  ? DF_UNIT_SECOND
                         : fn == DF_FN_TO_TIMESTAMP_MILLIS ? DF_UNIT_MILLI
                         : fn == DF_FN_TO_TIMESTAMP_MICROS ? DF_UNIT_MICRO
                                                           : DF_UNIT_NANO;
        ret = fn == DF_FN_TO_DATE ? df_type_date32() : fn == DF_FN_TO_UNIXTIME ? i64
              : fn == DF_FN_TO_TIME ? df__bind_keep(b, df_type_time(DF_UNIT_NANO))
                                    : df__bind_keep(b, df_type_timestamp(u, NULL));
        if (!ret) return NULL;
        return df__expr_func(b->plan, fn, ret, args[0]->nullable, n, args, b->err);
    }
    switch (fe->sig) {
    case SIG_MATH_FLOAT:
        if (!numeric_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        ret = float_of(args[0]->type);
        if (!coerce_arg(b, args, 0, ret, pos)) return NULL;
        break;
    case SIG_SAME_NUM:
        if (!numeric_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (is_null_type(args[0]->type) && !coerce_arg(b, args, 0, i64, pos)) return NULL;
        ret = args[0]->type;
        break;
    case SIG_ROUND:
    case SIG_CEIL_FLOOR:
        if (!numeric_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (df_type_is_decimal(args[0]->type)) {
            ret = args[0]->type;
            int p = args[0]->type->precision, sc = args[0]->type->scale;
            if (fn == DF_FN_ROUND && args[0]->type->id == DF_TYPE_DECIMAL128) {
                /* DataFusion's round of a decimal: a literal number of places becomes the scale (never
                 * above the input's; a non-negative scale stops at 0), which frees a digit for the carry;
                 * otherwise the scale stays and the precision grows by one for it. */
                const df_expr *dp = n == 2 ? args[1] : NULL;
                if (!dp || (dp->kind == DF_EX_LITERAL && !dp->lit->is_null && df_type_is_integer(dp->type))) {
                    int64_t d = dp ? dp->lit->v.i64 : 0;
                    if (dp && df_type_is_unsigned_integer(dp->type)) d = dp->lit->v.u64 > INT64_MAX ? INT64_MAX : (int64_t)dp->lit->v.u64;
                    int64_t want = sc >= 0 ? (d > 0 ? d : 0) : d;
                    int ns = want < sc ? (int)(want < -38 ? -38 : want) : sc;
                    ret = df__bind_keep(b, df_type_decimal(p, ns));
                } else {
                    ret = df__bind_keep(b, df_type_decimal(p < 38 ? p + 1 : 38, sc));
                }
                if (!ret) return NULL;
            }
        } else {
            ret = float_of(args[0]->type);
            if (!coerce_arg(b, args, 0, ret, pos)) return NULL;
        }
        if (n == 2) {
            if (!int_or_null(args[1]->type)) return type_error(b, fn, pos, args[1]->type);
            if (!coerce_arg(b, args, 1, i64, pos)) return NULL;
        }
        break;
    case SIG_POWER:
        if (!numeric_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (!numeric_or_null(args[1]->type)) return type_error(b, fn, pos, args[1]->type);
        ret = f64; /* DataFusion computes every power in Float64 (pow(2, -2) is 0.25) */
        if (!coerce_arg(b, args, 0, ret, pos) || !coerce_arg(b, args, 1, ret, pos)) return NULL;
        break;
    case SIG_LOG:
    case SIG_FLOAT2:
        for (int32_t i = 0; i < n; i++) {
            if (!numeric_or_null(args[i]->type)) return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, f64, pos)) return NULL;
        }
        ret = f64;
        break;
    case SIG_NONE_FLOAT: ret = f64; break;
    case SIG_NONE_STR: ret = utf8; break;
    case SIG_INT2_INT64:
        if ((df_type_is_decimal(args[0]->type) || df_type_is_decimal(args[1]->type)) &&
            (int_or_null(args[0]->type) || args[0]->type->id == DF_TYPE_DECIMAL128) &&
            (int_or_null(args[1]->type) || args[1]->type->id == DF_TYPE_DECIMAL128)) {
            /* gcd / lcm of decimals: both in their common decimal type, computed on the unscaled values. */
            ret = df__bind_keep(b, df__sqlt_comparison(args[0]->type, args[1]->type));
            if (!ret || ret->id != DF_TYPE_DECIMAL128) return type_error(b, fn, pos, args[0]->type);
            if (!coerce_arg(b, args, 0, ret, pos) || !coerce_arg(b, args, 1, ret, pos)) return NULL;
            break;
        }
        /* fall through */
    case SIG_INT_INT64:
        for (int32_t i = 0; i < n; i++) {
            if (!int_or_null(args[i]->type)) return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, i64, pos)) return NULL;
        }
        ret = i64;
        break;
    case SIG_FLOAT_BOOL:
        if (!numeric_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (!coerce_arg(b, args, 0, float_of(args[0]->type), pos)) return NULL;
        ret = df_type_bool();
        break;
    case SIG_STR_STR:
    case SIG_STR_INT32:
    case SIG_TRIM:
    case SIG_STR3_STR:
    case SIG_STR2_INT32:
    case SIG_STR2_BOOL:
        for (int32_t i = 0; i < n; i++) {
            if (!stringish(args[i]->type) && !(fn == DF_FN_MD5)) return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, utf8, pos)) return NULL;
        }
        ret = fe->sig == SIG_STR_INT32 || fe->sig == SIG_STR2_INT32 ? df_type_int32()
              : fe->sig == SIG_STR2_BOOL                             ? df_type_bool()
                                                                     : utf8;
        break;
    case SIG_SUBSTR:
    case SIG_STR_I64_STR:
    case SIG_SPLIT_PART:
    case SIG_PAD:
    case SIG_OVERLAY:
        for (int32_t i = 0; i < n; i++) {
            bool want_int = (fe->sig == SIG_SUBSTR && i >= 1) || (fe->sig == SIG_STR_I64_STR && i == 1) ||
                            (fe->sig == SIG_SPLIT_PART && i == 2) || (fe->sig == SIG_PAD && i == 1) ||
                            (fe->sig == SIG_OVERLAY && i >= 2);
            if (want_int) {
                if (!int_or_null(args[i]->type)) return type_error(b, fn, pos, args[i]->type);
                if (!coerce_arg(b, args, i, i64, pos)) return NULL;
            } else {
                if (!stringish(args[i]->type)) return type_error(b, fn, pos, args[i]->type);
                if (!coerce_arg(b, args, i, utf8, pos)) return NULL;
            }
        }
        ret = utf8;
        break;
    case SIG_INT_STR:
        if (!int_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (!coerce_arg(b, args, 0, i64, pos)) return NULL;
        ret = utf8;
        break;
    case SIG_CONCAT:
    case SIG_CONCAT_WS:
        for (int32_t i = 0; i < n; i++) {
            if (df_type_is_nested(args[i]->type)) return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, utf8, pos)) return NULL;
        }
        ret = utf8;
        /* concat ignores NULL arguments; concat_ws is NULL only when the separator is. */
        if (fe->sig == SIG_CONCAT) return df__expr_func(b->plan, fn, ret, false, n, args, b->err);
        return df__expr_func(b->plan, fn, ret, args[0]->nullable, n, args, b->err);
    case SIG_NULLIF: {
        df_type *t = df__bind_keep(b, df__sqlt_comparison(args[0]->type, args[1]->type));
        if (!t) return type_error(b, fn, pos, args[1]->type);
        if (!coerce_arg(b, args, 0, t, pos) || !coerce_arg(b, args, 1, t, pos)) return NULL;
        return df__expr_func(b->plan, fn, t, true, n, args, b->err);
    }
    case SIG_GREATEST: {
        if (n > 64) {
            df__bind_error(b, DF_ERR_LIMIT_EXCEEDED, pos, "too many arguments");
            return NULL;
        }
        /* The arguments meet as comparisons do (10 and '9' compare as Int64). */
        df_type *t = df_type_retain(args[0]->type);
        for (int32_t i = 1; i < n && t; i++) {
            df_type *c = df__sqlt_comparison(t, args[i]->type);
            df_type_release(t);
            t = c;
        }
        t = df__bind_keep(b, t);
        if (!t) return type_error(b, fn, pos, args[0]->type);
        bool all_nullable = true;
        for (int32_t i = 0; i < n; i++) {
            if (!coerce_arg(b, args, i, t, pos)) return NULL;
            all_nullable &= args[i]->nullable;
        }
        return df__expr_func(b->plan, fn, t, all_nullable, n, args, b->err);
    }
    case SIG_DATE_PART: {
        if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
        ret = df__bind_keep(b, date_part_type(b, args[0], pos));
        if (!ret) return NULL;
        if (args[1]->type->id == DF_TYPE_UTF8 && !coerce_arg(b, args, 1, df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL)), pos))
            return NULL;
        if (!temporal_arg(args[1]->type) && !is_null_type(args[1]->type)) return type_error(b, fn, pos, args[1]->type);
        if (is_null_type(args[1]->type) && !coerce_arg(b, args, 1, df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL)), pos))
            return NULL;
        break;
    }
    case SIG_DATE_TRUNC: {
        if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
        if (args[0]->kind != DF_EX_LITERAL) {
            df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, pos, "the date_trunc granularity must be a string literal");
            return NULL;
        }
        const df_type *t = args[1]->type;
        if (t->id == DF_TYPE_TIMESTAMP) {
            ret = (df_type *)t;
        } else if (t->id == DF_TYPE_TIME32 || t->id == DF_TYPE_TIME64) {
            ret = df__bind_keep(b, df_type_time(DF_UNIT_NANO));
            if (!ret || !coerce_arg(b, args, 1, ret, pos)) return NULL;
        } else if (t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_DATE64 || t->id == DF_TYPE_UTF8 || is_null_type(t)) {
            ret = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL));
            if (!ret || !coerce_arg(b, args, 1, ret, pos)) return NULL;
        } else {
            return type_error(b, fn, pos, t);
        }
        break;
    }
    case SIG_MAKE_DATE:
        for (int32_t i = 0; i < 3; i++) {
            if (!int_or_null(args[i]->type) && args[i]->type->id != DF_TYPE_UTF8)
                return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, df_type_int32(), pos)) return NULL;
        }
        ret = df_type_date32();
        break;
    case SIG_TO_TIMESTAMP: {
        const df_type *t = args[0]->type;
        ret = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL));
        if (!ret) return NULL;
        if (t->id == DF_TYPE_TIMESTAMP) {
            if (!coerce_arg(b, args, 0, ret, pos)) return NULL;
        } else if (df_type_is_integer(t)) {
            if (!coerce_arg(b, args, 0, i64, pos)) return NULL;
        } else if (df_type_is_floating(t) || df_type_is_decimal(t)) {
            if (!coerce_arg(b, args, 0, f64, pos)) return NULL;
        } else if (t->id == DF_TYPE_UTF8 || is_null_type(t) || t->id == DF_TYPE_DATE32) {
            if (!coerce_arg(b, args, 0, t->id == DF_TYPE_DATE32 ? ret : utf8, pos)) return NULL;
        } else {
            return type_error(b, fn, pos, t);
        }
        break;
    }
    case SIG_TO_DATE: {
        const df_type *t = args[0]->type;
        if (df_type_is_integer(t)) {
            if (!coerce_arg(b, args, 0, i64, pos)) return NULL;
        } else if (t->id == DF_TYPE_UTF8 || is_null_type(t)) {
            if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
        } else if (t->id == DF_TYPE_DATE32) {
            return args[0];
        } else if (t->id == DF_TYPE_TIMESTAMP) {
            if (!coerce_arg(b, args, 0, df_type_date32(), pos)) return NULL;
            return args[0];
        } else {
            return type_error(b, fn, pos, t);
        }
        ret = df_type_date32();
        break;
    }
    case SIG_TO_UNIXTIME: {
        const df_type *t = args[0]->type;
        df_type *ts = df__bind_keep(b, df_type_timestamp(DF_UNIT_SECOND, NULL));
        if (!ts) return NULL;
        if (df_type_is_integer(t)) {
            if (!coerce_arg(b, args, 0, i64, pos)) return NULL;
            return args[0];
        }
        if (t->id != DF_TYPE_UTF8 && t->id != DF_TYPE_TIMESTAMP && t->id != DF_TYPE_DATE32 && !is_null_type(t))
            return type_error(b, fn, pos, t);
        if (t->id == DF_TYPE_TIMESTAMP && t->timezone) {
            ts = df__bind_keep(b, df_type_timestamp(DF_UNIT_SECOND, t->timezone));
            if (!ts) return NULL;
        }
        if (!coerce_arg(b, args, 0, ts, pos)) return NULL;
        ret = i64;
        break;
    }
    case SIG_FROM_UNIXTIME: {
        if (!int_or_null(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (!coerce_arg(b, args, 0, i64, pos)) return NULL;
        /* from_unixtime(seconds, 'zone'): the same instant, zoned. */
        char zone[128] = "";
        if (n == 2 && !zone_literal(b, args[1], pos, zone, sizeof zone)) return NULL;
        ret = df__bind_keep(b, df_type_timestamp(DF_UNIT_SECOND, n == 2 ? zone : NULL));
        if (!ret) return NULL;
        break;
    }
    case SIG_BITNOT:
        ret = args[0]->type;
        break;
    case SIG_TIME:
        if (fn == DF_FN_AT_TIME_ZONE) {
            /* x AT TIME ZONE 'zone': a zoned timestamp.  A zoned x keeps its instant; a naive one
             * (or a date, or text without an offset) is a wall time there. */
            char name[128];
            if (!zone_literal(b, args[1], pos, name, sizeof name)) return NULL;
            const df_type *t = args[0]->type;
            df_time_unit unit = DF_UNIT_NANO;
            if (t->id == DF_TYPE_TIMESTAMP) {
                unit = t->unit;
            } else if (t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_DATE64) {
                df_type *ts = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL));
                if (!ts || !coerce_arg(b, args, 0, ts, pos)) return NULL;
            } else {
                if (!stringish(t) || t->id == DF_TYPE_BINARY) return type_error(b, fn, pos, t);
                if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
            }
            ret = df__bind_keep(b, df_type_timestamp(unit, name));
            break;
        }
        if (fn == DF_FN_TO_LOCAL_TIME) {
            /* The wall time of a zoned timestamp, as a naive one (a naive one is its own). */
            const df_type *t = args[0]->type;
            if (t->id != DF_TYPE_TIMESTAMP) {
                df__bind_error(b, DF_ERR_SQL_TYPE, pos, "to_local_time requires a timestamp");
                return NULL;
            }
            ret = df__bind_keep(b, df_type_timestamp(t->unit, NULL));
            break;
        }
        if (fn == DF_FN_TO_TIME) {
            const df_type *t = args[0]->type;
            if (t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_DATE64) {
                df_type *ts = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL));
                if (!ts || !coerce_arg(b, args, 0, ts, pos)) return NULL;
            } else if (t->id != DF_TYPE_TIMESTAMP) {
                if (!stringish(t) || t->id == DF_TYPE_BINARY) return type_error(b, fn, pos, t);
                if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
            }
            ret = df__bind_keep(b, df_type_time(DF_UNIT_NANO));
            break;
        }
        for (int32_t i = 0; i < n; i++) {
            if (!int_or_null(args[i]->type) && args[i]->type->id != DF_TYPE_UTF8)
                return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, df_type_int32(), pos)) return NULL;
        }
        ret = df__bind_keep(b, df_type_time(DF_UNIT_SECOND));
        break;
    case SIG_TO_CHAR: {
        const df_type *t = args[0]->type;
        if (t->id == DF_TYPE_UTF8 || is_null_type(t)) {
            df_type *ts = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL));
            if (!ts || !coerce_arg(b, args, 0, ts, pos)) return NULL;
        } else if (!temporal_arg(t) || t->id == DF_TYPE_INTERVAL_MDN) {
            return type_error(b, fn, pos, t);
        }
        if (!stringish(args[1]->type) || args[1]->type->id == DF_TYPE_BINARY) return type_error(b, fn, pos, args[1]->type);
        if (!coerce_arg(b, args, 1, utf8, pos)) return NULL;
        ret = utf8;
        break;
    }
    case SIG_HASH:
        for (int32_t i = 0; i < n; i++) {
            if (!stringish(args[i]->type) || (i == 1 && args[i]->type->id == DF_TYPE_BINARY))
                return type_error(b, fn, pos, args[i]->type);
            if (args[i]->type->id != DF_TYPE_BINARY && !coerce_arg(b, args, i, utf8, pos)) return NULL;
        }
        if (n == 2 && args[1]->kind == DF_EX_LITERAL && !args[1]->lit->is_null &&
            df_digest_from_name((const char *)args[1]->lit->v.bytes.ptr, (size_t)args[1]->lit->v.bytes.len) < 0) {
            df__bind_error(b, DF_ERR_SQL_TYPE, pos,
                           "There is no built-in digest algorithm named '%.*s', currently supported algorithms are: "
                           "md5, sha224, sha256, sha384, sha512, blake2s, blake2b, blake3",
                           (int)(args[1]->lit->v.bytes.len > 40 ? 40 : args[1]->lit->v.bytes.len),
                           (const char *)args[1]->lit->v.bytes.ptr);
            return NULL;
        }
        ret = df_type_binary();
        break;
    case SIG_TO_TS_UNIT: {
        const df_type *t = args[0]->type;
        df_time_unit u = fn == DF_FN_TO_TIMESTAMP_SECONDS  ? DF_UNIT_SECOND
                         : fn == DF_FN_TO_TIMESTAMP_MILLIS ? DF_UNIT_MILLI
                         : fn == DF_FN_TO_TIMESTAMP_MICROS ? DF_UNIT_MICRO
                                                           : DF_UNIT_NANO;
        ret = df__bind_keep(b, df_type_timestamp(u, t->id == DF_TYPE_TIMESTAMP ? t->timezone : NULL));
        if (!ret) return NULL;
        if (t->id == DF_TYPE_TIMESTAMP || t->id == DF_TYPE_DATE32) {
            if (!coerce_arg(b, args, 0, ret, pos)) return NULL;
        } else if (df_type_is_integer(t)) {
            if (!coerce_arg(b, args, 0, i64, pos)) return NULL;
        } else if (df_type_is_floating(t) || df_type_is_decimal(t)) {
            if (!coerce_arg(b, args, 0, f64, pos)) return NULL;
        } else if (t->id == DF_TYPE_UTF8 || is_null_type(t)) {
            if (!coerce_arg(b, args, 0, utf8, pos)) return NULL;
        } else {
            return type_error(b, fn, pos, t);
        }
        break;
    }
    case SIG_DATE_BIN: {
        df_type *iv = df_type_interval_mdn();
        if (!coerce_arg(b, args, 0, iv, pos)) return NULL;
        const df_type *t = args[1]->type;
        bool tm = t->id == DF_TYPE_TIME32 || t->id == DF_TYPE_TIME64;
        if (n == 3) {
            /* The origin is of the source's kind: a time with a time, else a timestamp or date. */
            const df_type *o = args[2]->type;
            bool otm = o->id == DF_TYPE_TIME32 || o->id == DF_TYPE_TIME64;
            if ((tm && !otm && o->id != DF_TYPE_UTF8 && !is_null_type(o)) || (!tm && otm)) {
                df__bind_error(b, DF_ERR_SQL_TYPE, pos, "Failed to coerce arguments to satisfy a call to 'date_bin' function");
                return NULL;
            }
        }
        if (tm) ret = df__bind_keep(b, df_type_time(DF_UNIT_NANO)); /* bins of the day */
        else if (t->id == DF_TYPE_TIMESTAMP) ret = (df_type *)t;
        else if (t->id == DF_TYPE_DATE32 || t->id == DF_TYPE_UTF8 || is_null_type(t))
            ret = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, NULL));
        else return type_error(b, fn, pos, t);
        if (!ret || !coerce_arg(b, args, 1, ret, pos)) return NULL;
        if (n == 3 && !coerce_arg(b, args, 2, ret, pos)) return NULL;
        break;
    }
    case SIG_REGEXP: {
        /* regexp_like(s, p [, flags]) -> bool; regexp_count(s, p [, start [, flags]]) -> int64;
         * regexp_replace(s, p, replacement [, flags]) -> str */
        for (int32_t i = 0; i < n; i++) {
            bool is_start = (fn == DF_FN_REGEXP_COUNT && i == 2) || (fn == DF_FN_REGEXP_INSTR && i >= 2 && i != 4);
            if (is_start ? !int_or_null(args[i]->type) : !stringish(args[i]->type))
                return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, is_start ? i64 : utf8, pos)) return NULL;
        }
        ret = fn == DF_FN_REGEXP_LIKE ? df_type_bool() : fn == DF_FN_REGEXP_REPLACE ? utf8 : i64;
        if (fn == DF_FN_REGEXP_COUNT) return df__expr_func(b->plan, fn, ret, false, n, args, b->err);
        break;
    }
    case SIG_ENCODE:
        if (!stringish(args[0]->type)) return type_error(b, fn, pos, args[0]->type);
        if (!stringish(args[1]->type)) return type_error(b, fn, pos, args[1]->type);
        if (fn == DF_FN_DECODE && args[0]->type->id != DF_TYPE_BINARY && !coerce_arg(b, args, 0, utf8, pos)) return NULL;
        if (fn == DF_FN_ENCODE && is_null_type(args[0]->type) && !coerce_arg(b, args, 0, utf8, pos)) return NULL;
        if (!coerce_arg(b, args, 1, utf8, pos)) return NULL;
        ret = fn == DF_FN_ENCODE ? utf8 : df_type_binary();
        break;
    case SIG_STR2_INT32B:
        for (int32_t i = 0; i < 2; i++) {
            if (!stringish(args[i]->type) || args[i]->type->id == DF_TYPE_BINARY) return type_error(b, fn, pos, args[i]->type);
            if (!coerce_arg(b, args, i, utf8, pos)) return NULL;
        }
        ret = df_type_int32();
        break;
    case SIG_SUBSTR_INDEX:
        for (int32_t i = 0; i < 2; i++)
            if (!stringish(args[i]->type) || !coerce_arg(b, args, i, utf8, pos)) return b->err && b->err->kind ? NULL : type_error(b, fn, pos, args[i]->type);
        if (!int_or_null(args[2]->type)) return type_error(b, fn, pos, args[2]->type);
        if (!coerce_arg(b, args, 2, i64, pos)) return NULL;
        ret = utf8;
        break;
    }
    return finish(b, fn, ret, args, n);
}

/* ------------------------------------------------------------------------ */
/* Calls                                                                     */

static df_expr **bind_args(binder *b, const ast_expr *call, const bctx *ctx) {
    df_expr **args = df__lplan_alloc(b->plan, (size_t)(call->nlist ? call->nlist : 1) * sizeof *args);
    if (!args) return df__bind_oom(b);
    for (int32_t i = 0; i < call->nlist; i++) {
        args[i] = df__bind_expr(b, call->list[i], ctx);
        if (!args[i]) return NULL;
    }
    return args;
}

static df_expr *bind_coalesce(binder *b, const ast_expr *call, df_expr **args) {
    int32_t n = call->nlist;
    if (n < 1) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "coalesce needs at least one argument");
        return NULL;
    }
    const df_type *types[256];
    if (n > 256) {
        df__bind_error(b, DF_ERR_LIMIT_EXCEEDED, call->pos, "too many arguments");
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) types[i] = args[i]->type;
    df_type *t = df__bind_keep(b, df__sqlt_union(types, n));
    if (!t) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "coalesce arguments have incompatible types");
        return NULL;
    }
    bool nullable = true;
    for (int32_t i = 0; i < n; i++) {
        args[i] = df__bind_coerce(b, args[i], t, call->list[i]->pos);
        if (!args[i]) return NULL;
        if (!args[i]->nullable) nullable = false;
    }
    return df__expr_new(b->plan, DF_EX_COALESCE, t, nullable, n, args, b->err);
}

static df_expr *bind_nvl2(binder *b, const ast_expr *call, df_expr **args) {
    if (call->nlist != 3) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "nvl2 takes three arguments");
        return NULL;
    }
    const df_type *types[2] = {args[1]->type, args[2]->type};
    df_type *t = df__bind_keep(b, df__sqlt_union_text(types, 2));
    if (!t) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "nvl2 results have incompatible types");
        return NULL;
    }
    df_expr *cond = df__expr_func(b->plan, DF_FN_IS_NOT_NULL, df_type_bool(), false, 1, &args[0], b->err);
    df_expr *then = cond ? df__bind_coerce(b, args[1], t, call->pos) : NULL;
    df_expr *els = then ? df__bind_coerce(b, args[2], t, call->pos) : NULL;
    if (!els) return NULL;
    df_expr *cargs[3] = {cond, then, els};
    df_expr *r = df__expr_new(b->plan, DF_EX_CASE, t, then->nullable || els->nullable, 3, cargs, b->err);
    if (r) r->has_else = true;
    return r;
}

static df_expr *bind_arrow_typeof(binder *b, const ast_expr *call, df_expr **args) {
    if (call->nlist != 1) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "arrow_typeof takes one argument");
        return NULL;
    }
    df_buf buf;
    df_buf_init(&buf, 1024);
    if (df__sqlt_display(args[0]->type, &buf, b->err)) {
        df_buf_free(&buf);
        return NULL;
    }
    df_scalar s = {.type = df_type_utf8()};
    s.v.bytes.ptr = (uint8_t *)buf.data;
    s.v.bytes.len = (int64_t)buf.len;
    df_expr *r = df__expr_literal(b->plan, &s, b->err);
    df_buf_free(&buf);
    if (r) {
        char *arg = df__bind_display(b, args[0]);
        if (!arg) return NULL;
        df_buf name;
        df_buf_init(&name, 1 << 16);
        if (df_buf_printf(&name, b->err, "arrow_typeof(%s)", arg) == DF_OK) r->display = df__bind_strdup(b, name.data);
        df_buf_free(&name);
        if (!r->display) return NULL;
    }
    return r;
}

static df_expr *bind_arrow_cast(binder *b, const ast_expr *call, df_expr **args) {
    if (call->nlist != 2 || args[1]->kind != DF_EX_LITERAL || args[1]->type->id != DF_TYPE_UTF8 ||
        args[1]->lit->is_null) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "arrow_cast takes an expression and a type name literal");
        return NULL;
    }
    df_type *t = df__bind_keep(b, df__sql_type_from_arrow_name((const char *)args[1]->lit->v.bytes.ptr, b->err));
    if (!t) {
        if (b->err) df_error_set_offset(b->err, -1);
        return NULL;
    }
    if (!df__sqlt_can_cast(args[0]->type, t)) {
        char x[64], y[64];
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "cannot cast %s to %s", tname(args[0]->type, x, sizeof x),
                   tname(t, y, sizeof y));
        return NULL;
    }
    df_expr *r = df__expr_new(b->plan, DF_EX_CAST, t, args[0]->nullable, 1, &args[0], b->err);
    if (r) r->display = df__bind_display(b, args[0]);
    return r;
}

static df_expr *bind_now(binder *b, const ast_expr *call, bool date) {
    if (call->nlist != 0) {
        df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s takes no arguments", call->name.parts[0]);
        return NULL;
    }
    df_scalar s = {0};
    if (date) {
        s.type = df_type_date32();
        int64_t days = b->now_ns / 86400000000000LL;
        if (b->now_ns < 0 && b->now_ns % 86400000000000LL) days--;
        s.v.i64 = days;
    } else {
        s.type = df__bind_keep(b, df_type_timestamp(DF_UNIT_NANO, "+00:00"));
        if (!s.type) return NULL;
        s.v.i64 = b->now_ns;
    }
    df_expr *r = df__expr_literal(b->plan, &s, b->err);
    if (r) {
        char name[64];
        snprintf(name, sizeof name, "%s()", call->name.parts[0]);
        r->display = df__bind_strdup(b, name);
    }
    return r;
}

df_expr *df__bind_function(binder *b, const ast_expr *call, const bctx *ctx) {
    if (call->name.n != 1) {
        df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, call->pos, "qualified function names are not supported");
        return NULL;
    }
    const char *name = call->name.parts[0];
    if (call->flag || call->star_arg || call->filter || call->norder) {
        df__bind_error(b, DF_ERR_SQL_SYNTAX, call->pos, "DISTINCT, FILTER, ORDER BY and `*` only apply to aggregates");
        return NULL;
    }
    if (strcmp(name, "now") == 0 || strcmp(name, "current_timestamp") == 0) return bind_now(b, call, false);
    if (strcmp(name, "current_date") == 0 || strcmp(name, "today") == 0) return bind_now(b, call, true);
    df_expr **args = bind_args(b, call, ctx);
    if (!args) return NULL;
    df_expr *r = NULL;
    if (strcmp(name, "coalesce") == 0 || strcmp(name, "nvl") == 0 || strcmp(name, "ifnull") == 0) {
        if ((name[0] == 'n' || name[0] == 'i') && call->nlist != 2) {
            df__bind_error(b, DF_ERR_SQL_TYPE, call->pos, "%s takes two arguments", name);
            return NULL;
        }
        r = bind_coalesce(b, call, args);
    } else if (strcmp(name, "nvl2") == 0) {
        r = bind_nvl2(b, call, args);
    } else if (strcmp(name, "arrow_typeof") == 0) {
        r = bind_arrow_typeof(b, call, args);
    } else if (strcmp(name, "arrow_cast") == 0) {
        r = bind_arrow_cast(b, call, args);
    } else {
        const fn_entry *fe = NULL;
        for (size_t i = 0; i < DF_ARRAY_LEN(functions); i++) {
            if (strcmp(functions[i].name, name) == 0) {
                fe = &functions[i];
                break;
            }
        }
        if (!fe) {
            df__bind_error(b, DF_ERR_SQL_UNSUPPORTED, call->pos, "unknown function `%s`", name);
            return NULL;
        }
        r = df__bind_resolve_fn(b, fe->fn, args, call->nlist, call->pos);
    }
    if (r && !r->display && r->kind != DF_EX_LITERAL) {
        /* Name the call as written: name(arg, ...). */
        df_buf buf;
        df_buf_init(&buf, 1 << 16);
        df_errkind k = df_buf_printf(&buf, b->err, "%s(", name);
        for (int32_t i = 0; !k && i < call->nlist; i++) {
            if (i) k = df_buf_append_str(&buf, ", ", b->err);
            if (!k) {
                df_expr *a = r->kind == DF_EX_CAST ? r->args[0] : (i < r->nargs ? r->args[i] : NULL);
                k = a ? df__expr_display(a, &buf, b->err) : DF_OK;
            }
        }
        if (!k) k = df_buf_append_char(&buf, ')', b->err);
        if (!k) r->display = df__bind_strdup(b, buf.data);
        df_buf_free(&buf);
        if (k) return NULL;
    }
    return r;
}
