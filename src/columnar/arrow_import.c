/*
 * Import through the Arrow C Data Interface (consumer side).
 *
 * Schemas are parsed into our types.  Arrays are not copied: every buffer
 * of an imported array tree is wrapped as a foreign df_buffer that holds a
 * reference on one shared holder; when the last buffer goes, the holder
 * calls the producer's release.  Imported data is validated fully (buffer
 * sizes, offsets, UTF-8) before anyone reads it, because it comes from
 * another library.
 */
#include "columnar/columnar.h"

#include <stdlib.h>

#define MAX_IMPORT_DEPTH 64

/* ------------------------------------------------------------------------ */
/* Schemas                                                                   */

static df_errkind parse_unit(char c, df_time_unit *unit, df_error *err) {
    switch (c) {
    case 's': *unit = DF_UNIT_SECOND; return DF_OK;
    case 'm': *unit = DF_UNIT_MILLI; return DF_OK;
    case 'u': *unit = DF_UNIT_MICRO; return DF_OK;
    case 'n': *unit = DF_UNIT_NANO; return DF_OK;
    default: return df_error_set(err, DF_ERR_UNSUPPORTED, "unknown Arrow time unit '%c'", c);
    }
}

static df_errkind import_type(const struct ArrowSchema *s, int depth, df_type **out, df_error *err);

static df_errkind import_children(const struct ArrowSchema *s, int depth, df_field **fields, df_error *err) {
    *fields = NULL;
    if (s->n_children < 0 || s->n_children > 100000 || (s->n_children > 0 && !s->children))
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "invalid Arrow schema children");
    if (s->n_children == 0) return DF_OK;
    df_field *f = df_calloc((size_t)s->n_children, sizeof *f);
    if (!f) return DF_OOM(err);
    for (int64_t i = 0; i < s->n_children; i++) {
        const struct ArrowSchema *c = s->children[i];
        df_type *t = NULL;
        df_errkind k = c ? import_type(c, depth + 1, &t, err)
                         : df_error_set(err, DF_ERR_INVALID_ARGUMENT, "null Arrow schema child");
        if (k == DF_OK) {
            k = df_field_init(&f[i], c->name ? c->name : "", t, (c->flags & ARROW_FLAG_NULLABLE) != 0, err);
            df_type_release(t);
        }
        if (k != DF_OK) {
            for (int64_t j = 0; j < i; j++) df_field_clear(&f[j]);
            df_free(f);
            return k;
        }
    }
    *fields = f;
    return DF_OK;
}

static void free_fields(df_field *f, int64_t n) {
    for (int64_t i = 0; i < n; i++) df_field_clear(&f[i]);
    df_free(f);
}

static df_errkind import_type(const struct ArrowSchema *s, int depth, df_type **out, df_error *err) {
    *out = NULL;
    if (depth > MAX_IMPORT_DEPTH) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "Arrow schema nested too deeply");
    const char *f = s->format;
    if (!f) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow schema without format");
    if (s->dictionary) return df_error_set(err, DF_ERR_UNSUPPORTED, "dictionary-encoded Arrow data is not supported");
    static const struct { const char *fmt; df_type *(*make)(void); } simple[] = {
        {"n", df_type_null},     {"b", df_type_bool},     {"c", df_type_int8},      {"s", df_type_int16},
        {"i", df_type_int32},    {"l", df_type_int64},    {"C", df_type_uint8},     {"S", df_type_uint16},
        {"I", df_type_uint32},   {"L", df_type_uint64},   {"e", df_type_float16},   {"f", df_type_float32},
        {"g", df_type_float64},  {"tdD", df_type_date32}, {"tdm", df_type_date64},  {"u", df_type_utf8},
        {"z", df_type_binary},   {"tin", df_type_interval_mdn},
    };
    for (size_t i = 0; i < DF_ARRAY_LEN(simple); i++) {
        if (strcmp(f, simple[i].fmt) == 0) {
            *out = simple[i].make();
            return DF_OK;
        }
    }
    df_time_unit unit = DF_UNIT_SECOND;
    df_type *t = NULL;
    if (f[0] == 'd' && f[1] == ':') {
        char *end;
        long p = strtol(f + 2, &end, 10);
        if (*end != ',') return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "bad decimal format `%s`", f);
        long sc = strtol(end + 1, &end, 10);
        long bits = 128;
        if (*end == ',') bits = strtol(end + 1, &end, 10);
        if (*end || (bits != 128 && bits != 256) || p < 1 || p > (bits == 128 ? 38 : 76) || sc < -128 || sc > 127)
            return df_error_set(err, DF_ERR_UNSUPPORTED, "unsupported decimal format `%s`", f);
        t = df_type_decimal((int)p, (int)sc);
    } else if (f[0] == 'w' && f[1] == ':') {
        char *end;
        long w = strtol(f + 2, &end, 10);
        if (*end || w < 0 || w > INT32_MAX) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "bad fixed-size binary format");
        t = df_type_fixed_binary((int32_t)w);
    } else if (f[0] == 't' && f[1] == 't' && f[2] && !f[3]) {
        DF_TRY(parse_unit(f[2], &unit, err));
        t = df_type_time(unit);
    } else if (f[0] == 't' && f[1] == 'D' && f[2] && !f[3]) {
        DF_TRY(parse_unit(f[2], &unit, err));
        t = df_type_duration(unit);
    } else if (f[0] == 't' && f[1] == 's' && f[2] && f[3] == ':') {
        DF_TRY(parse_unit(f[2], &unit, err));
        t = df_type_timestamp(unit, f[4] ? f + 4 : NULL);
    } else if (strcmp(f, "+l") == 0 || strcmp(f, "+s") == 0 || strcmp(f, "+m") == 0) {
        df_field *fields;
        DF_TRY(import_children(s, depth, &fields, err));
        int64_t n = s->n_children;
        if (f[1] == 's') {
            t = df_type_struct(fields, (int32_t)n);
        } else if (n != 1) {
            free_fields(fields, n);
            return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "list or map schema needs exactly one child");
        } else if (f[1] == 'l') {
            t = df_type_list(&fields[0]);
        } else {
            const df_type *entries = fields[0].type;
            if (entries->id != DF_TYPE_STRUCT || entries->nchildren != 2) {
                free_fields(fields, n);
                return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "map entries must be a struct of two fields");
            }
            t = df_type_map(&entries->children[0], &entries->children[1], (s->flags & ARROW_FLAG_MAP_KEYS_SORTED) != 0);
        }
        free_fields(fields, n);
    } else {
        return df_error_set(err, DF_ERR_UNSUPPORTED, "Arrow type `%s` is not supported", f);
    }
    if (!t) return DF_OOM(err);
    *out = t;
    return DF_OK;
}

df_errkind df_arrow_import_schema(const struct ArrowSchema *in, df_schema **out, df_error *err) {
    *out = NULL;
    if (!in || !in->format || strcmp(in->format, "+s") != 0)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "an Arrow record schema must be a struct (\"+s\")");
    df_field *fields;
    DF_TRY(import_children(in, 0, &fields, err));
    df_errkind k = df_schema_new(fields, (int32_t)in->n_children, out, err);
    free_fields(fields, in->n_children);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */

typedef struct import_holder {
    _Atomic int64_t refs;
    struct ArrowArray array;  /* the moved-in root */
} import_holder;

static void holder_release(import_holder *h) {
    if (atomic_fetch_sub_explicit(&h->refs, 1, memory_order_acq_rel) != 1) return;
    if (h->array.release) h->array.release(&h->array);
    df_free(h);
}

static void release_foreign(df_buffer *b) { holder_release(b->foreign); }

static df_errkind wrap(import_holder *h, const void *data, int64_t size, df_buffer **out, df_error *err) {
    *out = NULL;
    if (!data) {
        if (size > 0) return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow array is missing a buffer");
        /* Empty arrays may pass NULL buffers: use a private empty buffer. */
        *out = df_buffer_new(0);
        return *out ? DF_OK : DF_OOM(err);
    }
    atomic_fetch_add_explicit(&h->refs, 1, memory_order_relaxed);
    df_buffer *b = df_buffer_wrap((uint8_t *)(uintptr_t)data, size, release_foreign, h);
    if (!b) {
        holder_release(h);
        return DF_OOM(err);
    }
    *out = b;
    return DF_OK;
}

static df_errkind import_array(import_holder *h, const struct ArrowArray *a, df_type *type, int depth, df_vec **out,
                               df_error *err) {
    *out = NULL;
    if (depth > MAX_IMPORT_DEPTH) return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "Arrow array nested too deeply");
    if (a->length < 0 || a->offset < 0 || a->length > INT32_MAX || a->offset > INT32_MAX)
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow array length or offset out of range");
    if (a->n_children != type->nchildren || (a->n_children > 0 && !a->children))
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow array has %lld children, its type %d",
                            (long long)a->n_children, type->nchildren);
    int64_t want_buffers = type->id == DF_TYPE_NULL ? 0 : type->id == DF_TYPE_STRUCT ? 1 : df_type_is_varlen(type) ? 3 : 2;
    if (a->n_buffers != want_buffers || (want_buffers > 0 && !a->buffers))
        return df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow array has %lld buffers, expected %lld",
                            (long long)a->n_buffers, (long long)want_buffers);
    df_vec *v = df_calloc(1, sizeof *v);
    if (!v) return DF_OOM(err);
    atomic_init(&v->refs, 1);
    v->type = df_type_retain(type);
    v->length = a->length;
    v->offset = a->offset;
    v->null_count = -1;
    int64_t end = a->offset + a->length;
    df_errkind k = DF_OK;
    if (want_buffers > 0 && a->buffers[0] && a->null_count != 0)
        k = wrap(h, a->buffers[0], df_bitmap_bytes(end), &v->validity, err);
    if (k == DF_OK && want_buffers > 1) {
        int64_t bytes;
        if (type->id == DF_TYPE_BOOL)
            bytes = df_bitmap_bytes(end);
        else if (df_type_is_varlen(type) || type->id == DF_TYPE_LIST || type->id == DF_TYPE_MAP)
            bytes = (end + 1) * 4;
        else
            bytes = end * df_type_width(type);
        k = wrap(h, a->buffers[1], bytes, &v->values, err);
    }
    if (k == DF_OK && want_buffers > 2) {
        const int32_t *o = a->buffers[1];
        int64_t bytes = o ? o[end] : 0;
        if (bytes < 0) k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "negative string offset");
        if (k == DF_OK) k = wrap(h, a->buffers[2], bytes, &v->data, err);
    }
    if (k == DF_OK && type->nchildren > 0) {
        v->children = df_calloc((size_t)type->nchildren, sizeof(df_vec *));
        if (!v->children) k = DF_OOM(err);
        else v->nchildren = type->nchildren;
        for (int32_t i = 0; k == DF_OK && i < type->nchildren; i++) {
            if (!a->children[i]) {
                k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "null Arrow array child");
                break;
            }
            k = import_array(h, a->children[i], type->children[i].type, depth + 1, &v->children[i], err);
        }
    }
    if (k != DF_OK) {
        df_vec_release(v);
        return k;
    }
    *out = v;
    return DF_OK;
}

df_errkind df_arrow_import_batch(struct ArrowArray *in, df_schema *schema, df_batch **out, df_error *err) {
    *out = NULL;
    import_holder *h = df_calloc(1, sizeof *h);
    if (!h) {
        if (in->release) in->release(in);
        return DF_OOM(err);
    }
    h->array = *in;          /* move */
    in->release = NULL;
    atomic_init(&h->refs, 1);  /* the importer's own reference, dropped at the end */
    const struct ArrowArray *a = &h->array;
    df_errkind k = DF_OK;
    if (a->n_children != schema->nfields || a->length < 0 || (a->n_children > 0 && !a->children))
        k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow record batch does not match its schema");
    if (k == DF_OK && a->offset != 0)
        k = df_error_set(err, DF_ERR_UNSUPPORTED, "sliced Arrow record batches are not supported");
    df_vec **cols = NULL;
    if (k == DF_OK) {
        cols = df_calloc((size_t)DF_MAX(schema->nfields, 1), sizeof(df_vec *));
        if (!cols) k = DF_OOM(err);
    }
    for (int32_t i = 0; k == DF_OK && i < schema->nfields; i++) {
        k = import_array(h, a->children[i], schema->fields[i].type, 1, &cols[i], err);
        if (k == DF_OK && cols[i]->length != a->length)
            k = df_error_set(err, DF_ERR_INVALID_ARGUMENT, "Arrow column %d length differs from the batch", i);
        if (k == DF_OK) k = df_vec_validate(cols[i], true, err);
    }
    if (k == DF_OK) {
        k = df_batch_new(schema, cols, a->length, out, err); /* consumes cols */
    } else if (cols) {
        for (int32_t i = 0; i < schema->nfields; i++) df_vec_release(cols[i]);
    }
    df_free(cols);
    holder_release(h);
    return k;
}
