/*
 * Types and fields.  Primitive types are static singletons with refs < 0
 * so retain/release skip them; parameterised and nested types are heap
 * objects freed on the last release.
 */
#include "columnar/columnar.h"

#include <stdio.h>

#define STATIC_TYPE(fn, tid, width)                                     \
    df_type *fn(void) {                                                 \
        static df_type t = {.id = (tid), .refs = -1, .byte_width = (width)}; \
        return &t;                                                      \
    }

STATIC_TYPE(df_type_null, DF_TYPE_NULL, 0)
STATIC_TYPE(df_type_bool, DF_TYPE_BOOL, 0)
STATIC_TYPE(df_type_int8, DF_TYPE_INT8, 1)
STATIC_TYPE(df_type_int16, DF_TYPE_INT16, 2)
STATIC_TYPE(df_type_int32, DF_TYPE_INT32, 4)
STATIC_TYPE(df_type_int64, DF_TYPE_INT64, 8)
STATIC_TYPE(df_type_uint8, DF_TYPE_UINT8, 1)
STATIC_TYPE(df_type_uint16, DF_TYPE_UINT16, 2)
STATIC_TYPE(df_type_uint32, DF_TYPE_UINT32, 4)
STATIC_TYPE(df_type_uint64, DF_TYPE_UINT64, 8)
STATIC_TYPE(df_type_float16, DF_TYPE_FLOAT16, 2)
STATIC_TYPE(df_type_float32, DF_TYPE_FLOAT32, 4)
STATIC_TYPE(df_type_float64, DF_TYPE_FLOAT64, 8)
STATIC_TYPE(df_type_date32, DF_TYPE_DATE32, 4)
STATIC_TYPE(df_type_date64, DF_TYPE_DATE64, 8)
STATIC_TYPE(df_type_utf8, DF_TYPE_UTF8, 0)
STATIC_TYPE(df_type_binary, DF_TYPE_BINARY, 0)
STATIC_TYPE(df_type_interval_mdn, DF_TYPE_INTERVAL_MDN, 16)

df_type *df_type_primitive(df_type_id id) {
    switch (id) {
    case DF_TYPE_NULL: return df_type_null();
    case DF_TYPE_BOOL: return df_type_bool();
    case DF_TYPE_INT8: return df_type_int8();
    case DF_TYPE_INT16: return df_type_int16();
    case DF_TYPE_INT32: return df_type_int32();
    case DF_TYPE_INT64: return df_type_int64();
    case DF_TYPE_UINT8: return df_type_uint8();
    case DF_TYPE_UINT16: return df_type_uint16();
    case DF_TYPE_UINT32: return df_type_uint32();
    case DF_TYPE_UINT64: return df_type_uint64();
    case DF_TYPE_FLOAT16: return df_type_float16();
    case DF_TYPE_FLOAT32: return df_type_float32();
    case DF_TYPE_FLOAT64: return df_type_float64();
    case DF_TYPE_DATE32: return df_type_date32();
    case DF_TYPE_DATE64: return df_type_date64();
    case DF_TYPE_UTF8: return df_type_utf8();
    case DF_TYPE_BINARY: return df_type_binary();
    case DF_TYPE_INTERVAL_MDN: return df_type_interval_mdn();
    default: return NULL;
    }
}

static df_type *new_type(df_type_id id) {
    df_type *t = df_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->id = id;
    atomic_init(&t->refs, 1);
    return t;
}

df_type *df_type_decimal(int precision, int scale) {
    if (precision < 1 || precision > 76) return NULL;
    df_type *t = new_type(precision <= 38 ? DF_TYPE_DECIMAL128 : DF_TYPE_DECIMAL256);
    if (!t) return NULL;
    t->precision = (int16_t)precision;
    t->scale = (int16_t)scale;
    t->byte_width = precision <= 38 ? 16 : 32;
    return t;
}

df_type *df_type_time(df_time_unit unit) {
    df_type *t = new_type(unit <= DF_UNIT_MILLI ? DF_TYPE_TIME32 : DF_TYPE_TIME64);
    if (!t) return NULL;
    t->unit = unit;
    t->byte_width = unit <= DF_UNIT_MILLI ? 4 : 8;
    return t;
}

df_type *df_type_timestamp(df_time_unit unit, const char *timezone) {
    df_type *t = new_type(DF_TYPE_TIMESTAMP);
    if (!t) return NULL;
    t->unit = unit;
    t->byte_width = 8;
    if (timezone) {
        t->timezone = df_strdup(timezone);
        if (!t->timezone) {
            df_free(t);
            return NULL;
        }
    }
    return t;
}

df_type *df_type_duration(df_time_unit unit) {
    df_type *t = new_type(DF_TYPE_DURATION);
    if (!t) return NULL;
    t->unit = unit;
    t->byte_width = 8;
    return t;
}

df_type *df_type_fixed_binary(int32_t byte_width) {
    if (byte_width < 0) return NULL;
    df_type *t = new_type(DF_TYPE_FIXED_BINARY);
    if (!t) return NULL;
    t->byte_width = byte_width;
    return t;
}

static df_type *new_nested(df_type_id id, const df_field *fields, int32_t n) {
    df_type *t = new_type(id);
    if (!t) return NULL;
    if (n > 0) {
        t->children = df_calloc((size_t)n, sizeof(df_field));
        if (!t->children) {
            df_free(t);
            return NULL;
        }
    }
    t->nchildren = n;
    for (int32_t i = 0; i < n; i++) {
        if (df_field_copy(&t->children[i], &fields[i], NULL) != DF_OK) {
            t->nchildren = i;
            df_type_release(t);
            return NULL;
        }
    }
    return t;
}

df_type *df_type_list(const df_field *element) { return new_nested(DF_TYPE_LIST, element, 1); }

df_type *df_type_struct(const df_field *fields, int32_t nfields) {
    return new_nested(DF_TYPE_STRUCT, fields, nfields);
}

df_type *df_type_map(const df_field *key, const df_field *value, bool keys_sorted) {
    df_field kv[2] = {*key, *value};
    kv[0].nullable = false; /* Arrow map keys are never null */
    df_type *entries = df_type_struct(kv, 2);
    if (!entries) return NULL;
    df_field entries_field = {.name = "entries", .type = entries, .nullable = false};
    df_type *t = new_nested(DF_TYPE_MAP, &entries_field, 1);
    df_type_release(entries);
    if (t) t->keys_sorted = keys_sorted;
    return t;
}

df_type *df_type_retain(df_type *t) {
    if (t && atomic_load_explicit(&t->refs, memory_order_relaxed) >= 0)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void df_type_release(df_type *t) {
    if (!t || atomic_load_explicit(&t->refs, memory_order_relaxed) < 0) return;
    if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1) return;
    for (int32_t i = 0; i < t->nchildren; i++) df_field_clear(&t->children[i]);
    df_free(t->children);
    df_free(t->timezone);
    df_free(t);
}

static bool str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

bool df_type_equals(const df_type *a, const df_type *b) {
    if (a == b) return true;
    if (!a || !b || a->id != b->id) return false;
    switch (a->id) {
    case DF_TYPE_DECIMAL128:
    case DF_TYPE_DECIMAL256:
        return a->precision == b->precision && a->scale == b->scale;
    case DF_TYPE_TIME32:
    case DF_TYPE_TIME64:
    case DF_TYPE_DURATION:
        return a->unit == b->unit;
    case DF_TYPE_TIMESTAMP:
        return a->unit == b->unit && str_eq(a->timezone, b->timezone);
    case DF_TYPE_FIXED_BINARY:
        return a->byte_width == b->byte_width;
    case DF_TYPE_LIST:
    case DF_TYPE_STRUCT:
    case DF_TYPE_MAP:
        if (a->nchildren != b->nchildren) return false;
        for (int32_t i = 0; i < a->nchildren; i++) {
            const df_field *fa = &a->children[i], *fb = &b->children[i];
            /* List element and map entry names are conventional, not semantic. */
            if (a->id == DF_TYPE_STRUCT && !str_eq(fa->name, fb->name)) return false;
            if (fa->nullable != fb->nullable || !df_type_equals(fa->type, fb->type)) return false;
        }
        return true;
    default:
        return true;
    }
}

int32_t df_type_width(const df_type *t) {
    switch (t->id) {
    case DF_TYPE_NULL:
    case DF_TYPE_BOOL:
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY:
    case DF_TYPE_LIST:
    case DF_TYPE_STRUCT:
    case DF_TYPE_MAP:
        return 0;
    default:
        return t->byte_width;
    }
}

bool df_type_is_signed_integer(const df_type *t) { return t->id >= DF_TYPE_INT8 && t->id <= DF_TYPE_INT64; }
bool df_type_is_unsigned_integer(const df_type *t) { return t->id >= DF_TYPE_UINT8 && t->id <= DF_TYPE_UINT64; }
bool df_type_is_integer(const df_type *t) { return t->id >= DF_TYPE_INT8 && t->id <= DF_TYPE_UINT64; }
bool df_type_is_floating(const df_type *t) { return t->id >= DF_TYPE_FLOAT16 && t->id <= DF_TYPE_FLOAT64; }
bool df_type_is_decimal(const df_type *t) { return t->id == DF_TYPE_DECIMAL128 || t->id == DF_TYPE_DECIMAL256; }
bool df_type_is_numeric(const df_type *t) { return t->id >= DF_TYPE_INT8 && t->id <= DF_TYPE_DECIMAL256; }
bool df_type_is_temporal(const df_type *t) { return t->id >= DF_TYPE_DATE32 && t->id <= DF_TYPE_INTERVAL_MDN; }
bool df_type_is_nested(const df_type *t) {
    return t->id == DF_TYPE_LIST || t->id == DF_TYPE_STRUCT || t->id == DF_TYPE_MAP;
}
bool df_type_is_varlen(const df_type *t) { return t->id == DF_TYPE_UTF8 || t->id == DF_TYPE_BINARY; }

/* Unit names as arrow-rs (57) prints them in type displays. */
static const char *unit_short_name(df_time_unit u) {
    static const char *const names[] = {"s", "ms", "\xc2\xb5s", "ns"};
    return (unsigned)u < 4 ? names[u] : "?";
}

static const char *unit_format_letter(df_time_unit u) {
    static const char *const letters[] = {"s", "m", "u", "n"};
    return (unsigned)u < 4 ? letters[u] : "u";
}

/* A string in Rust's Debug form: quoted, with \", \\ and control characters escaped. */
static df_errkind append_debug_string(df_buf *out, const char *s, df_error *err) {
    DF_TRY(df_buf_append_char(out, '"', err));
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': DF_TRY(df_buf_append_str(out, "\\\"", err)); break;
        case '\\': DF_TRY(df_buf_append_str(out, "\\\\", err)); break;
        case '\n': DF_TRY(df_buf_append_str(out, "\\n", err)); break;
        case '\r': DF_TRY(df_buf_append_str(out, "\\r", err)); break;
        case '\t': DF_TRY(df_buf_append_str(out, "\\t", err)); break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                DF_TRY(df_buf_printf(out, err, "\\u{%x}", *p));
            else
                DF_TRY(df_buf_append_char(out, (char)*p, err));
        }
    }
    return df_buf_append_char(out, '"', err);
}

/* `"name": [non-null ]Type`, the field form of struct and map displays. */
static df_errkind display_field(const df_field *f, df_buf *out, df_error *err) {
    DF_TRY(append_debug_string(out, f->name, err));
    DF_TRY(df_buf_append_str(out, f->nullable ? ": " : ": non-null ", err));
    return df_type_display(f->type, out, err);
}

/*
 * The type names previews and reports show, in the form DataFusion (through
 * arrow-rs 57) prints them: "Int64", "Decimal128(10, 2)",
 * "Timestamp(µs, "UTC")", "List(Int32)", "Struct("x": Int64)".
 */
df_errkind df_type_display(const df_type *t, df_buf *out, df_error *err) {
    static const char *const simple[DF_TYPE_ID_COUNT_] = {
        [DF_TYPE_NULL] = "Null",       [DF_TYPE_BOOL] = "Boolean",     [DF_TYPE_INT8] = "Int8",
        [DF_TYPE_INT16] = "Int16",     [DF_TYPE_INT32] = "Int32",      [DF_TYPE_INT64] = "Int64",
        [DF_TYPE_UINT8] = "UInt8",     [DF_TYPE_UINT16] = "UInt16",    [DF_TYPE_UINT32] = "UInt32",
        [DF_TYPE_UINT64] = "UInt64",   [DF_TYPE_FLOAT16] = "Float16",  [DF_TYPE_FLOAT32] = "Float32",
        [DF_TYPE_FLOAT64] = "Float64", [DF_TYPE_DATE32] = "Date32",    [DF_TYPE_DATE64] = "Date64",
        [DF_TYPE_UTF8] = "Utf8",       [DF_TYPE_BINARY] = "Binary",
        [DF_TYPE_INTERVAL_MDN] = "Interval(MonthDayNano)",
    };
    switch (t->id) {
    case DF_TYPE_DECIMAL128:
    case DF_TYPE_DECIMAL256:
        return df_buf_printf(out, err, "Decimal%s(%d, %d)", t->id == DF_TYPE_DECIMAL128 ? "128" : "256",
                             t->precision, t->scale);
    case DF_TYPE_TIME32:
        return df_buf_printf(out, err, "Time32(%s)", unit_short_name(t->unit));
    case DF_TYPE_TIME64:
        return df_buf_printf(out, err, "Time64(%s)", unit_short_name(t->unit));
    case DF_TYPE_DURATION:
        return df_buf_printf(out, err, "Duration(%s)", unit_short_name(t->unit));
    case DF_TYPE_TIMESTAMP:
        DF_TRY(df_buf_printf(out, err, "Timestamp(%s", unit_short_name(t->unit)));
        if (t->timezone) {
            DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(append_debug_string(out, t->timezone, err));
        }
        return df_buf_append_char(out, ')', err);
    case DF_TYPE_FIXED_BINARY:
        return df_buf_printf(out, err, "FixedSizeBinary(%d)", t->byte_width);
    case DF_TYPE_LIST: {
        const df_field *el = &t->children[0];
        DF_TRY(df_buf_append_str(out, el->nullable ? "List(" : "List(non-null ", err));
        DF_TRY(df_type_display(el->type, out, err));
        if (el->name && strcmp(el->name, "item") != 0) DF_TRY(df_buf_printf(out, err, ", field: '%s'", el->name));
        return df_buf_append_char(out, ')', err);
    }
    case DF_TYPE_MAP:
        DF_TRY(df_buf_append_str(out, "Map(", err));
        DF_TRY(display_field(&t->children[0], out, err));
        return df_buf_append_str(out, t->keys_sorted ? ", sorted)" : ", unsorted)", err);
    case DF_TYPE_STRUCT:
        DF_TRY(df_buf_append_str(out, "Struct(", err));
        for (int32_t i = 0; i < t->nchildren; i++) {
            if (i) DF_TRY(df_buf_append_str(out, ", ", err));
            DF_TRY(display_field(&t->children[i], out, err));
        }
        return df_buf_append_char(out, ')', err);
    default:
        if ((unsigned)t->id < DF_TYPE_ID_COUNT_ && simple[t->id]) return df_buf_append_str(out, simple[t->id], err);
        return df_error_set(err, DF_ERR_INTERNAL, "unknown type id %d", (int)t->id);
    }
}

df_errkind df_type_arrow_format(const df_type *t, df_buf *out, df_error *err) {
    static const char *const simple[DF_TYPE_ID_COUNT_] = {
        [DF_TYPE_NULL] = "n",    [DF_TYPE_BOOL] = "b",    [DF_TYPE_INT8] = "c",    [DF_TYPE_INT16] = "s",
        [DF_TYPE_INT32] = "i",   [DF_TYPE_INT64] = "l",   [DF_TYPE_UINT8] = "C",   [DF_TYPE_UINT16] = "S",
        [DF_TYPE_UINT32] = "I",  [DF_TYPE_UINT64] = "L",  [DF_TYPE_FLOAT16] = "e", [DF_TYPE_FLOAT32] = "f",
        [DF_TYPE_FLOAT64] = "g", [DF_TYPE_DATE32] = "tdD", [DF_TYPE_DATE64] = "tdm", [DF_TYPE_UTF8] = "u",
        [DF_TYPE_BINARY] = "z",  [DF_TYPE_INTERVAL_MDN] = "tin", [DF_TYPE_LIST] = "+l",
        [DF_TYPE_STRUCT] = "+s", [DF_TYPE_MAP] = "+m",
    };
    switch (t->id) {
    case DF_TYPE_DECIMAL128:
        return df_buf_printf(out, err, "d:%d,%d", t->precision, t->scale);
    case DF_TYPE_DECIMAL256:
        return df_buf_printf(out, err, "d:%d,%d,256", t->precision, t->scale);
    case DF_TYPE_TIME32:
    case DF_TYPE_TIME64:
        return df_buf_printf(out, err, "tt%s", unit_format_letter(t->unit));
    case DF_TYPE_DURATION:
        return df_buf_printf(out, err, "tD%s", unit_format_letter(t->unit));
    case DF_TYPE_TIMESTAMP:
        return df_buf_printf(out, err, "ts%s:%s", unit_format_letter(t->unit), t->timezone ? t->timezone : "");
    case DF_TYPE_FIXED_BINARY:
        return df_buf_printf(out, err, "w:%d", t->byte_width);
    default:
        if ((unsigned)t->id < DF_TYPE_ID_COUNT_ && simple[t->id]) return df_buf_append_str(out, simple[t->id], err);
        return df_error_set(err, DF_ERR_INTERNAL, "unknown type id %d", (int)t->id);
    }
}

/* ------------------------------------------------------------------------ */

df_errkind df_field_init(df_field *f, const char *name, df_type *type, bool nullable, df_error *err) {
    f->name = df_strdup(name ? name : "");
    if (!f->name) {
        f->type = NULL;
        return DF_OOM(err);
    }
    f->type = df_type_retain(type);
    f->nullable = nullable;
    return DF_OK;
}

df_errkind df_field_copy(df_field *dst, const df_field *src, df_error *err) {
    return df_field_init(dst, src->name, src->type, src->nullable, err);
}

void df_field_clear(df_field *f) {
    if (!f) return;
    df_free(f->name);
    df_type_release(f->type);
    f->name = NULL;
    f->type = NULL;
}

/* ------------------------------------------------------------------------ */
/* Schemas                                                                   */

df_errkind df_schema_alloc(int32_t nfields, df_schema **out, df_error *err) {
    *out = NULL;
    if (nfields < 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "negative field count");
    df_schema *s = df_calloc(1, sizeof *s);
    if (!s) return DF_OOM(err);
    if (nfields > 0) {
        s->fields = df_calloc((size_t)nfields, sizeof(df_field));
        if (!s->fields) {
            df_free(s);
            return DF_OOM(err);
        }
    }
    s->nfields = nfields;
    atomic_init(&s->refs, 1);
    *out = s;
    return DF_OK;
}

df_errkind df_schema_new(const df_field *fields, int32_t nfields, df_schema **out, df_error *err) {
    df_schema *s;
    DF_TRY(df_schema_alloc(nfields, &s, err));
    for (int32_t i = 0; i < nfields; i++) {
        if (df_field_copy(&s->fields[i], &fields[i], err) != DF_OK) {
            df_schema_release(s);
            return DF_ERR_OUT_OF_MEMORY;
        }
    }
    *out = s;
    return DF_OK;
}

df_schema *df_schema_retain(df_schema *s) {
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
    return s;
}

void df_schema_release(df_schema *s) {
    if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
    for (int32_t i = 0; i < s->nfields; i++) df_field_clear(&s->fields[i]);
    df_free(s->fields);
    df_free(s);
}

int32_t df_schema_find(const df_schema *s, const char *name) {
    for (int32_t i = 0; i < s->nfields; i++)
        if (s->fields[i].name && strcmp(s->fields[i].name, name) == 0) return i;
    return -1;
}

int32_t df_schema_find_ci(const df_schema *s, const char *name) {
    int32_t found = -1;
    for (int32_t i = 0; i < s->nfields; i++) {
        if (s->fields[i].name && df_ascii_casecmp(s->fields[i].name, name) == 0) {
            if (found >= 0) return -2;
            found = i;
        }
    }
    return found;
}

bool df_schema_equals(const df_schema *a, const df_schema *b) {
    if (a == b) return true;
    if (!a || !b || a->nfields != b->nfields) return false;
    for (int32_t i = 0; i < a->nfields; i++) {
        if (!str_eq(a->fields[i].name, b->fields[i].name)) return false;
        if (a->fields[i].nullable != b->fields[i].nullable) return false;
        if (!df_type_equals(a->fields[i].type, b->fields[i].type)) return false;
    }
    return true;
}

df_errkind df_schema_project(const df_schema *s, const int32_t *indices, int32_t n, df_schema **out, df_error *err) {
    *out = NULL;
    for (int32_t i = 0; i < n; i++)
        if (indices[i] < 0 || indices[i] >= s->nfields)
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "projection index %d out of range", indices[i]);
    df_schema *p;
    DF_TRY(df_schema_alloc(n, &p, err));
    for (int32_t i = 0; i < n; i++) {
        if (df_field_copy(&p->fields[i], &s->fields[indices[i]], err) != DF_OK) {
            df_schema_release(p);
            return DF_ERR_OUT_OF_MEMORY;
        }
    }
    *out = p;
    return DF_OK;
}
