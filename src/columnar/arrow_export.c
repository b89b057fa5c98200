/*
 * Export through the Arrow C Data Interface and C Stream Interface.
 *
 * Arrays share our buffers: the exported ArrowArray's private data holds a
 * reference to the vector, so the consumer may keep the data after the
 * producer is gone; release() drops the reference.  Schemas are deep
 * copies (format strings and names owned by the private data).
 */
#include "columnar/columnar.h"
#include "deltafunnel/deltafunnel.h"

#include <errno.h>
#include <stdio.h>

/* ------------------------------------------------------------------------ */
/* Schemas                                                                   */

typedef struct schema_private {
    char *format;
    char *name;
    struct ArrowSchema **children;  /* n_children pointers */
    struct ArrowSchema *child_storage;
} schema_private;

static void release_schema(struct ArrowSchema *s) {
    if (!s || !s->release) return;
    schema_private *p = s->private_data;
    for (int64_t i = 0; i < s->n_children; i++)
        if (p->child_storage[i].release) p->child_storage[i].release(&p->child_storage[i]);
    df_free(p->format);
    df_free(p->name);
    df_free(p->children);
    df_free(p->child_storage);
    df_free(p);
    s->release = NULL;
}

static df_errkind export_schema_node(const char *name, const df_type *type, bool nullable, struct ArrowSchema *out,
                                     df_error *err) {
    memset(out, 0, sizeof *out);
    schema_private *p = df_calloc(1, sizeof *p);
    if (!p) return DF_OOM(err);
    df_buf fmt;
    df_buf_init(&fmt, 256);
    df_errkind k = df_type_arrow_format(type, &fmt, err);
    if (k != DF_OK) {
        df_buf_free(&fmt);
        df_free(p);
        return k;
    }
    p->format = df_buf_take(&fmt);
    p->name = df_strdup(name ? name : "");
    int32_t n = type->nchildren;
    if (n > 0) {
        p->children = df_calloc((size_t)n, sizeof(struct ArrowSchema *));
        p->child_storage = df_calloc((size_t)n, sizeof(struct ArrowSchema));
    }
    out->format = p->format;
    out->name = p->name;
    out->flags = nullable ? ARROW_FLAG_NULLABLE : 0;
    if (type->id == DF_TYPE_MAP && type->keys_sorted) out->flags |= ARROW_FLAG_MAP_KEYS_SORTED;
    out->n_children = 0;
    out->children = p->children;
    out->release = release_schema;
    out->private_data = p;
    if (!p->format || !p->name || (n > 0 && (!p->children || !p->child_storage))) {
        release_schema(out);
        return DF_OOM(err);
    }
    for (int32_t i = 0; i < n; i++) {
        const df_field *f = &type->children[i];
        k = export_schema_node(f->name, f->type, f->nullable, &p->child_storage[i], err);
        if (k != DF_OK) {
            release_schema(out);
            return k;
        }
        p->children[i] = &p->child_storage[i];
        out->n_children = i + 1;
    }
    return DF_OK;
}

df_errkind df_arrow_export_field(const df_field *field, struct ArrowSchema *out, df_error *err) {
    return export_schema_node(field->name, field->type, field->nullable, out, err);
}

df_errkind df_arrow_export_schema(const df_schema *schema, struct ArrowSchema *out, df_error *err) {
    df_type tmp = {.id = DF_TYPE_STRUCT, .refs = -1, .nchildren = schema->nfields, .children = schema->fields};
    return export_schema_node("", &tmp, false, out, err);
}

/* ------------------------------------------------------------------------ */
/* Arrays                                                                    */

typedef struct array_private {
    df_vec *vec;                     /* reference keeping the buffers alive (NULL for batch roots) */
    df_batch *batch;                 /* reference for batch roots */
    const void *buffers[3];
    struct ArrowArray **children;
    struct ArrowArray *child_storage;
} array_private;

static void release_array(struct ArrowArray *a) {
    if (!a || !a->release) return;
    array_private *p = a->private_data;
    for (int64_t i = 0; i < a->n_children; i++)
        if (p->child_storage[i].release) p->child_storage[i].release(&p->child_storage[i]);
    df_free(p->children);
    df_free(p->child_storage);
    df_vec_release(p->vec);
    df_batch_release(p->batch);
    df_free(p);
    a->release = NULL;
}

static array_private *new_array_private(int64_t nchildren) {
    array_private *p = df_calloc(1, sizeof *p);
    if (!p) return NULL;
    if (nchildren > 0) {
        p->children = df_calloc((size_t)nchildren, sizeof(struct ArrowArray *));
        p->child_storage = df_calloc((size_t)nchildren, sizeof(struct ArrowArray));
        if (!p->children || !p->child_storage) {
            df_free(p->children);
            df_free(p->child_storage);
            df_free(p);
            return NULL;
        }
    }
    return p;
}

df_errkind df_arrow_export_vec(df_vec *v, struct ArrowArray *out, df_error *err) {
    memset(out, 0, sizeof *out);
    array_private *p = new_array_private(v->nchildren);
    if (!p) return DF_OOM(err);
    p->vec = df_vec_retain(v);
    df_type_id id = v->type->id;
    out->length = v->length;
    out->null_count = df_vec_null_count(v);
    out->offset = v->offset;
    out->buffers = p->buffers;
    out->children = p->children;
    out->release = release_array;
    out->private_data = p;
    switch (id) {
    case DF_TYPE_NULL:
        out->n_buffers = 0;
        break;
    case DF_TYPE_STRUCT:
        out->n_buffers = 1;
        break;
    case DF_TYPE_UTF8:
    case DF_TYPE_BINARY:
        out->n_buffers = 3;
        break;
    default:
        out->n_buffers = 2;
    }
    if (out->n_buffers > 0) p->buffers[0] = v->validity ? v->validity->data : NULL;
    if (out->n_buffers > 1) p->buffers[1] = v->values ? v->values->data : NULL;
    if (out->n_buffers > 2) p->buffers[2] = v->data ? v->data->data : NULL;
    for (int32_t i = 0; i < v->nchildren; i++) {
        df_errkind k = df_arrow_export_vec(v->children[i], &p->child_storage[i], err);
        if (k != DF_OK) {
            release_array(out);
            return k;
        }
        p->children[i] = &p->child_storage[i];
        out->n_children = i + 1;
    }
    return DF_OK;
}

df_errkind df_arrow_export_batch(df_batch *b, struct ArrowArray *out, df_error *err) {
    memset(out, 0, sizeof *out);
    array_private *p = new_array_private(b->ncols);
    if (!p) return DF_OOM(err);
    p->batch = df_batch_retain(b);
    out->length = b->nrows;
    out->null_count = 0;
    out->offset = 0;
    out->n_buffers = 1;
    p->buffers[0] = NULL;
    out->buffers = p->buffers;
    out->children = p->children;
    out->release = release_array;
    out->private_data = p;
    for (int32_t i = 0; i < b->ncols; i++) {
        df_errkind k = df_arrow_export_vec(b->cols[i], &p->child_storage[i], err);
        if (k != DF_OK) {
            release_array(out);
            return k;
        }
        p->children[i] = &p->child_storage[i];
        out->n_children = i + 1;
    }
    return DF_OK;
}

/* ------------------------------------------------------------------------ */
/* Streams                                                                   */

typedef struct stream_private {
    df_batch_stream *stream;   /* owned; NULL once finished */
    df_schema *schema;         /* owned reference */
    char last_error[DF_ERROR_MESSAGE_SIZE + 64];   /* "[phase/kind] message" for get_last_error */
    df_error err;              /* the failure behind last_error, whole, for df_arrow_stream_error */
} stream_private;

static int stream_get_schema(struct ArrowArrayStream *s, struct ArrowSchema *out) {
    stream_private *p = s->private_data;
    df_error err = {0};
    if (df_arrow_export_schema(p->schema, out, &err) != DF_OK) {
        snprintf(p->last_error, sizeof p->last_error, "%s", err.message);
        df_error_move(&p->err, &err);
        return ENOMEM;
    }
    return 0;
}

static int stream_get_next(struct ArrowArrayStream *s, struct ArrowArray *out) {
    stream_private *p = s->private_data;
    memset(out, 0, sizeof *out);
    if (!p->stream) {
        out->release = NULL; /* end of stream */
        return 0;
    }
    df_error err = {0};
    df_error_clear(&err);
    df_batch *b = NULL;
    df_errkind k = df_batch_stream_next(p->stream, &b, &err);
    if (k == DF_OK && !b) {
        df_batch_stream_close(p->stream);
        p->stream = NULL;
        out->release = NULL;
        return 0;
    }
    if (k == DF_OK) {
        k = df_arrow_export_batch(b, out, &err);
        df_batch_release(b);
    }
    if (k != DF_OK) {
        /*
         * Keep the kind and phase so consumers that only see the message
         * (pyarrow, DuckDB) can tell failures apart; hosts read the error
         * itself through df_arrow_stream_error.
         */
        snprintf(p->last_error, sizeof p->last_error, "[%s/%s] %s", err.phase, df_errkind_name(k), err.message);
        df_error_move(&p->err, &err);
        df_batch_stream_close(p->stream);
        p->stream = NULL;
        return k == DF_ERR_OUT_OF_MEMORY ? ENOMEM : EIO;
    }
    return 0;
}

static const char *stream_get_last_error(struct ArrowArrayStream *s) {
    stream_private *p = s->private_data;
    return p->last_error[0] ? p->last_error : NULL;
}

static void stream_release(struct ArrowArrayStream *s) {
    if (!s || !s->release) return;
    stream_private *p = s->private_data;
    df_batch_stream_close(p->stream);
    df_schema_release(p->schema);
    df_error_clear(&p->err);
    df_free(p);
    s->release = NULL;
}

df_errkind df_arrow_stream_error(const struct ArrowArrayStream *s, df_error *err) {
    /* Only our own streams carry a df_error; the callback identifies them. */
    if (!s || !s->release || s->get_next != stream_get_next || !s->private_data) return DF_OK;
    const df_error *e = &((const stream_private *)s->private_data)->err;
    if (e->kind == DF_OK) return DF_OK;
    if (!err) return e->kind;
    df_error_set(err, e->kind, "%s", e->message);
    df_error_set_phase(err, e->phase);
    df_error_set_origin(err, e->origin);
    df_error_set_code(err, e->code);
    df_error_set_offset(err, e->offset);
    df_error_set_subkind(err, e->subkind);
    if (e->context) df_error_set_context(err, e->context);
    return e->kind;
}

df_errkind df_arrow_export_stream(df_batch_stream *stream, struct ArrowArrayStream *out, df_error *err) {
    memset(out, 0, sizeof *out);
    stream_private *p = df_calloc(1, sizeof *p);
    if (!p) {
        df_batch_stream_close(stream);
        return DF_OOM(err);
    }
    p->stream = stream;
    p->schema = df_schema_retain(stream->schema);
    out->get_schema = stream_get_schema;
    out->get_next = stream_get_next;
    out->get_last_error = stream_get_last_error;
    out->release = stream_release;
    out->private_data = p;
    return DF_OK;
}
