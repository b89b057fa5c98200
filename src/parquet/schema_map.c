/*
 * Parquet schema -> Arrow schema (see schema_map.h).
 *
 * Two passes.  The first rebuilds the tree from the depth-first element
 * list (num_children gives the shape), checking that the counts add up and
 * that nesting stays below MAX_DEPTH.  The second walks the tree and
 * converts each node, carrying the definition/repetition levels down:
 *
 *   optional node   -> def + 1 (nullable Arrow field)
 *   repeated node   -> def + 1, rep + 1 (an Arrow list level)
 *   LIST group      -> list; its single repeated child is the list level and
 *                      the element is that child's only field (3-level) or
 *                      the child itself (2-level legacy: a primitive, a group
 *                      with several fields, a group whose one field is
 *                      repeated, or a group named "array" or "<list>_tuple";
 *                      a LIST-annotated child is then an inner list)
 *   MAP group       -> map<key, value> from its repeated key_value group
 *                      (MAP_KEY_VALUE is accepted as MAP; optional keys are
 *                      accepted; a key-only group reads as a list of keys)
 *   other repeated  -> list of the node itself, not null, elements not null
 *   other group     -> struct
 *   primitive       -> the Arrow type pyarrow gives (leaf_type below)
 */
#include "parquet/schema_map.h"

#include <stdio.h>

#define MAX_DEPTH 64

/* A node of the rebuilt Parquet tree. */
typedef struct snode {
    const pq_schema_element *e;
    int32_t nchildren;
    struct snode *children;     /* owned */
} snode;

static void snode_free(snode *n) {
    for (int32_t i = 0; i < n->nchildren; i++) snode_free(&n->children[i]);
    df_free(n->children);
    n->children = NULL;
    n->nchildren = 0;
}

static bool is_group(const pq_schema_element *e) {
    return e->num_children > 0 || (e->num_children == 0 && e->type < 0);
}

static df_errkind unflatten(const pq_schema_element *elems, uint32_t n, uint32_t *pos, int depth, snode *out,
                            df_error *err) {
    if (depth > MAX_DEPTH)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: nested deeper than %d levels",
                            MAX_DEPTH);
    const pq_schema_element *e = &elems[(*pos)++];
    out->e = e;
    out->nchildren = 0;
    out->children = NULL;
    if (!is_group(e)) {
        if (e->type < 0 || e->type > DF_PARQUET_FIXED_LEN_BYTE_ARRAY)
            return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: column '%s' has %s %d", e->name,
                                e->type < 0 ? "no physical type" : "unknown physical type", e->type);
        return DF_OK;
    }
    if (e->num_children <= 0)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: group '%s' has no children",
                            e->name);
    if ((uint32_t)e->num_children > n - *pos)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: group '%s' claims %d children but only %u elements follow",
                            e->name, e->num_children, n - *pos);
    out->children = df_calloc((size_t)e->num_children, sizeof *out->children);
    if (!out->children) return DF_OOM(err);
    for (int32_t i = 0; i < e->num_children; i++) {
        if (*pos >= n) {
            df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: group '%s' is cut short", e->name);
            return DF_ERR_PARQUET_FORMAT;
        }
        out->nchildren = i + 1;
        DF_TRY(unflatten(elems, n, pos, depth + 1, &out->children[i], err));
    }
    return DF_OK;
}

/* ---- leaf types ----------------------------------------------------------- */

/* The logical type of an element, derived from the converted type when absent. */
static pq_logical_type effective_logical(const pq_schema_element *e) {
    pq_logical_type lt = e->logical;
    if (lt.kind != PQ_LT_NONE) {
        if (lt.kind == PQ_LT_DECIMAL && (lt.precision < 0 || lt.scale < 0)) {
            lt.precision = e->precision;
            lt.scale = e->scale < 0 ? 0 : e->scale;
        }
        return lt;
    }
    memset(&lt, 0, sizeof lt);
    switch (e->converted_type) {
    case PQ_CT_UTF8: lt.kind = PQ_LT_STRING; break;
    case PQ_CT_MAP: case PQ_CT_MAP_KEY_VALUE: lt.kind = PQ_LT_MAP; break;
    case PQ_CT_LIST: lt.kind = PQ_LT_LIST; break;
    case PQ_CT_ENUM: lt.kind = PQ_LT_ENUM; break;
    case PQ_CT_DECIMAL:
        lt.kind = PQ_LT_DECIMAL;
        lt.precision = e->precision;
        lt.scale = e->scale < 0 ? 0 : e->scale;
        break;
    case PQ_CT_DATE: lt.kind = PQ_LT_DATE; break;
    case PQ_CT_TIME_MILLIS: lt.kind = PQ_LT_TIME; lt.unit = DF_UNIT_MILLI; lt.utc = true; break;
    case PQ_CT_TIME_MICROS: lt.kind = PQ_LT_TIME; lt.unit = DF_UNIT_MICRO; lt.utc = true; break;
    case PQ_CT_TIMESTAMP_MILLIS: lt.kind = PQ_LT_TIMESTAMP; lt.unit = DF_UNIT_MILLI; lt.utc = true; break;
    case PQ_CT_TIMESTAMP_MICROS: lt.kind = PQ_LT_TIMESTAMP; lt.unit = DF_UNIT_MICRO; lt.utc = true; break;
    case PQ_CT_UINT_8: case PQ_CT_UINT_16: case PQ_CT_UINT_32: case PQ_CT_UINT_64:
    case PQ_CT_INT_8: case PQ_CT_INT_16: case PQ_CT_INT_32: case PQ_CT_INT_64: {
        static const int8_t widths[] = {8, 16, 32, 64};
        int k = e->converted_type >= PQ_CT_INT_8 ? e->converted_type - PQ_CT_INT_8 : e->converted_type - PQ_CT_UINT_8;
        lt.kind = PQ_LT_INTEGER;
        lt.bit_width = widths[k];
        lt.is_signed = e->converted_type >= PQ_CT_INT_8;
        break;
    }
    case PQ_CT_JSON: lt.kind = PQ_LT_JSON; break;
    case PQ_CT_BSON: lt.kind = PQ_LT_BSON; break;
    case PQ_CT_INTERVAL: lt.kind = PQ_LT_UUID + 100; break;   /* handled as INTERVAL below */
    default: break;
    }
    return lt;
}

#define LT_INTERVAL (PQ_LT_UUID + 100)

static df_errkind bad_annotation(const pq_schema_element *e, const char *what, df_error *err) {
    return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: column '%s' annotates %s with %s",
                        e->name, df__parquet_physical_name(e->type), what);
}

/* Decimal type from precision/scale, checked against the physical storage. */
static df_errkind decimal_type(const pq_schema_element *e, const pq_logical_type *lt, df_type **out, df_error *err) {
    int p = lt->precision, s = lt->scale;
    int max = e->type == DF_PARQUET_INT32 ? 9 : e->type == DF_PARQUET_INT64 ? 18 : 76;
    if (e->type == DF_PARQUET_FIXED_LEN_BYTE_ARRAY && e->type_length > 0 && e->type_length < 32) {
        /* floor(log10(2^(8n-1) - 1)) digits fit in n bytes. */
        static const int digits[32] = {0,  2,  4,  6,  9,  11, 14, 16, 18, 21, 23, 26, 28, 31, 33, 35,
                                       38, 40, 43, 45, 47, 50, 52, 55, 57, 59, 62, 64, 67, 69, 71, 74};
        max = digits[e->type_length];
    }
    if (p < 1 || p > 76 || s < 0 || s > p)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: column '%s' has decimal precision %d and scale %d", e->name, p, s);
    if (p > max)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: decimal precision %d of column '%s' does not fit %s", p, e->name,
                            df__parquet_physical_name(e->type));
    *out = df_type_decimal(p, s);
    return *out ? DF_OK : DF_OOM(err);
}

/* The Arrow type and conversion of a primitive element, as pyarrow maps it by default. */
static df_errkind leaf_type(const pq_schema_element *e, df_type **out, pq_conv *conv, df_error *err) {
    pq_logical_type lt = effective_logical(e);
    *conv = PQ_CONV_NONE;
    *out = NULL;
    if (lt.kind == PQ_LT_NULL) {
        *conv = PQ_CONV_TO_NULL;
        *out = df_type_null();
        return DF_OK;
    }
    if (lt.kind == PQ_LT_UNKNOWN_ID) lt.kind = PQ_LT_NONE;   /* a future annotation: read the physical type */
    switch (e->type) {
    case DF_PARQUET_BOOLEAN:
        if (lt.kind != PQ_LT_NONE) return bad_annotation(e, "a logical type", err);
        *out = df_type_bool();
        return DF_OK;
    case DF_PARQUET_INT32:
        switch (lt.kind) {
        case PQ_LT_NONE: *out = df_type_int32(); return DF_OK;
        case PQ_LT_DATE: *out = df_type_date32(); return DF_OK;
        case PQ_LT_TIME:
            if (lt.unit != DF_UNIT_MILLI) return bad_annotation(e, "TIME(MICROS/NANOS)", err);
            *out = df_type_time(DF_UNIT_MILLI);
            return *out ? DF_OK : DF_OOM(err);
        case PQ_LT_DECIMAL:
            *conv = PQ_CONV_I32_TO_DEC;
            return decimal_type(e, &lt, out, err);
        case PQ_LT_INTEGER:
            switch (lt.bit_width) {
            case 8: *conv = PQ_CONV_I32_TO_8; *out = lt.is_signed ? df_type_int8() : df_type_uint8(); return DF_OK;
            case 16: *conv = PQ_CONV_I32_TO_16; *out = lt.is_signed ? df_type_int16() : df_type_uint16(); return DF_OK;
            case 32: *out = lt.is_signed ? df_type_int32() : df_type_uint32(); return DF_OK;
            default: return bad_annotation(e, "an integer width other than 8, 16 or 32", err);
            }
        default: return bad_annotation(e, "an unsupported logical type", err);
        }
    case DF_PARQUET_INT64:
        switch (lt.kind) {
        case PQ_LT_NONE: *out = df_type_int64(); return DF_OK;
        case PQ_LT_INTEGER:
            if (lt.bit_width != 64) return bad_annotation(e, "an integer width other than 64", err);
            *out = lt.is_signed ? df_type_int64() : df_type_uint64();
            return DF_OK;
        case PQ_LT_DECIMAL:
            *conv = PQ_CONV_I64_TO_DEC;
            return decimal_type(e, &lt, out, err);
        case PQ_LT_TIME:
            if (lt.unit == DF_UNIT_MILLI) return bad_annotation(e, "TIME(MILLIS)", err);
            *out = df_type_time(lt.unit);
            return *out ? DF_OK : DF_OOM(err);
        case PQ_LT_TIMESTAMP:
            *out = df_type_timestamp(lt.unit, lt.utc ? "UTC" : NULL);
            return *out ? DF_OK : DF_OOM(err);
        default: return bad_annotation(e, "an unsupported logical type", err);
        }
    case DF_PARQUET_INT96:
        /* Microseconds, not nanoseconds: INT96 dates outside 1677..2262 must not wrap (decode.c). */
        *out = df_type_timestamp(DF_UNIT_MICRO, NULL);
        return *out ? DF_OK : DF_OOM(err);
    case DF_PARQUET_FLOAT:
        if (lt.kind != PQ_LT_NONE) return bad_annotation(e, "a logical type", err);
        *out = df_type_float32();
        return DF_OK;
    case DF_PARQUET_DOUBLE:
        if (lt.kind != PQ_LT_NONE) return bad_annotation(e, "a logical type", err);
        *out = df_type_float64();
        return DF_OK;
    case DF_PARQUET_BYTE_ARRAY:
        switch (lt.kind) {
        case PQ_LT_STRING:
        case PQ_LT_JSON: *out = df_type_utf8(); return DF_OK;
        case PQ_LT_DECIMAL:
            *conv = PQ_CONV_BE_TO_DEC;
            return decimal_type(e, &lt, out, err);
        case PQ_LT_NONE:
        case PQ_LT_ENUM:
        case PQ_LT_BSON:
        case PQ_LT_GEOMETRY:
        case PQ_LT_GEOGRAPHY: *out = df_type_binary(); return DF_OK;
        default: return bad_annotation(e, "an unsupported logical type", err);
        }
    case DF_PARQUET_FIXED_LEN_BYTE_ARRAY:
        if (e->type_length < 0)
            return df_error_set(err, DF_ERR_PARQUET_FORMAT,
                                "invalid Parquet schema: FIXED_LEN_BYTE_ARRAY column '%s' has no valid length",
                                e->name);
        switch (lt.kind) {
        case PQ_LT_DECIMAL:
            if (e->type_length == 0 || e->type_length > 32) return bad_annotation(e, "DECIMAL of this width", err);
            *conv = PQ_CONV_BE_TO_DEC;
            return decimal_type(e, &lt, out, err);
        case PQ_LT_FLOAT16:
            if (e->type_length != 2) return bad_annotation(e, "FLOAT16 on a width other than 2", err);
            *out = df_type_float16();
            return DF_OK;
        case PQ_LT_UUID:
            if (e->type_length != 16) return bad_annotation(e, "UUID on a width other than 16", err);
            break;
        case LT_INTERVAL:
            if (e->type_length != 12) return bad_annotation(e, "INTERVAL on a width other than 12", err);
            break;
        case PQ_LT_NONE: break;
        default: return bad_annotation(e, "an unsupported logical type", err);
        }
        *out = df_type_fixed_binary(e->type_length);
        return *out ? DF_OK : DF_OOM(err);
    default:
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: column '%s' has physical type %d",
                            e->name, e->type);
    }
}

/* ---- tree conversion ------------------------------------------------------ */

/* Levels handed down to a node. */
typedef struct levels {
    int16_t def;            /* definition level of the parent */
    int16_t rep;            /* repetition level of the parent */
    int16_t slot_def;       /* see schema_map.h */
    int16_t slot_rep;
} levels;

typedef struct build_ctx {
    pq_leaf *leaves;        /* growing array */
    int32_t nleaves, cap;
    int32_t field;          /* top-level field being converted */
    df_buf path;            /* dotted path of the current node */
    df_error *err;
} build_ctx;

static df_errkind convert_field(build_ctx *c, const snode *s, levels L, pq_node *out);

static df_errkind set_field(pq_node *out, const char *name, df_type *type, bool nullable, df_error *err) {
    /* Takes the type reference. */
    out->field.name = df_strdup(name);
    out->field.type = type;
    out->field.nullable = nullable;
    if (!out->field.name) return DF_OOM(err);
    return DF_OK;
}

static int16_t level_add(int16_t v, df_error *err, df_errkind *k) {
    if (v >= INT16_MAX - 1) *k = df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: too many levels");
    return (int16_t)(v + 1);
}

/* Appends "name" to the path buffer; returns the previous length for restoring. */
static size_t path_push(build_ctx *c, const char *name, df_errkind *k) {
    size_t old = c->path.len;
    if (*k == DF_OK && old) *k = df_buf_append_char(&c->path, '.', c->err);
    if (*k == DF_OK) *k = df_buf_append_str(&c->path, name, c->err);
    return old;
}

static void path_pop(build_ctx *c, size_t old) {
    c->path.len = old;
    if (c->path.data) c->path.data[old] = '\0';
}

static df_errkind convert_leaf(build_ctx *c, const snode *s, pq_node *out) {
    df_type *t;
    pq_conv conv;
    DF_TRY(leaf_type(s->e, &t, &conv, c->err));
    out->kind = PQ_NODE_LEAF;
    out->field.type = t;   /* owned by the node from here on */
    DF_TRY(DF_ARRAY_RESERVE(c->leaves, c->cap, c->nleaves + 1, 16, c->err));
    pq_leaf *leaf = &c->leaves[c->nleaves];
    memset(leaf, 0, sizeof *leaf);
    leaf->elem = s->e;
    leaf->path = df_strdup(c->path.data ? c->path.data : "");
    if (!leaf->path) return DF_OOM(c->err);
    leaf->field = c->field;
    leaf->physical = s->e->type;
    leaf->type_length = s->e->type == DF_PARQUET_FIXED_LEN_BYTE_ARRAY ? s->e->type_length : 0;
    leaf->conv = conv;
    out->leaf = c->nleaves++;
    out->first_leaf = out->leaf;
    out->nleaves = 1;
    return DF_OK;
}

static df_errkind alloc_children(pq_node *out, int32_t n, df_error *err) {
    out->children = df_calloc((size_t)n, sizeof *out->children);
    if (!out->children) return DF_OOM(err);
    out->nchildren = n;
    for (int32_t i = 0; i < n; i++) out->children[i].leaf = -1;
    return DF_OK;
}

/* Struct from the children of `s`, all at levels L (already including s's own level). */
static df_errkind convert_struct_children(build_ctx *c, const snode *s, levels L, pq_node *out) {
    out->kind = PQ_NODE_STRUCT;
    DF_TRY(alloc_children(out, s->nchildren, c->err));
    df_field *fields = df_calloc((size_t)s->nchildren, sizeof *fields);
    if (!fields) return DF_OOM(c->err);
    df_errkind k = DF_OK;
    for (int32_t i = 0; i < s->nchildren && k == DF_OK; i++) {
        k = convert_field(c, &s->children[i], L, &out->children[i]);
        if (k == DF_OK) fields[i] = out->children[i].field;   /* shallow: df_type_struct copies */
    }
    if (k == DF_OK) {
        out->field.type = df_type_struct(fields, s->nchildren);
        if (!out->field.type) k = DF_OOM(c->err);
    }
    df_free(fields);
    return k;
}

/*
 * A list level: `rep_node` is the repeated node, `elem` what becomes the
 * element.  `elem_is_rep_node` means the repeated node itself is the
 * (required) element (2-level layouts).  `push` adds the repeated node's
 * name to the path (false when the caller already did).
 */
static bool is_annotated(const snode *s, int lt_kind);
static df_errkind convert_list_group(build_ctx *c, const snode *s, levels L, pq_node *out);

static df_errkind convert_list(build_ctx *c, const snode *rep_node, const snode *elem, bool elem_is_rep_node,
                               bool push, levels L, pq_node *out) {
    df_errkind k = DF_OK;
    int16_t elem_def = level_add(out->def, c->err, &k);
    int16_t rep = level_add(L.rep, c->err, &k);
    DF_TRY(k);
    out->kind = PQ_NODE_LIST;
    out->elem_def = elem_def;
    DF_TRY(alloc_children(out, 1, c->err));
    levels EL = {elem_def, rep, elem_def, rep};
    pq_node *child = &out->children[0];
    size_t old = push ? path_push(c, rep_node->e->name, &k) : c->path.len;
    DF_TRY(k);
    if (elem_is_rep_node) {
        /* The repeated node is the element: required, at the element's levels. */
        int32_t first = c->nleaves;
        child->def = elem_def;
        child->slot_def = elem_def;
        child->slot_rep = rep;
        child->leaf = -1;
        if (!is_group(elem->e)) k = convert_leaf(c, elem, child);
        else if (is_annotated(elem, PQ_LT_LIST)) k = convert_list_group(c, elem, EL, child);   /* a list of lists */
        else k = convert_struct_children(c, elem, EL, child);
        if (k == DF_OK) {
            df_type *t = child->field.type;
            child->field.type = NULL;
            k = set_field(child, elem->e->name, t, false, c->err);
        }
        child->first_leaf = first;
        child->nleaves = c->nleaves - first;
    } else {
        k = convert_field(c, elem, EL, child);
    }
    if (push) path_pop(c, old);
    DF_TRY(k);
    out->field.type = df_type_list(&child->field);
    return out->field.type ? DF_OK : DF_OOM(c->err);
}

static bool is_annotated(const snode *s, int lt_kind) {
    pq_logical_type lt = effective_logical(s->e);
    return lt.kind == lt_kind;
}

static df_errkind convert_list_group(build_ctx *c, const snode *s, levels L, pq_node *out) {
    if (s->nchildren != 1)
        return df_error_set(c->err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: LIST-annotated group '%s' must have a single child", s->e->name);
    const snode *r = &s->children[0];
    if (r->e->repetition != PQ_REPEATED)
        return df_error_set(c->err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: the child of LIST-annotated group '%s' is not repeated",
                            s->e->name);
    /*
     * Which node is the element (the backward-compatibility rules for
     * LIST): the repeated node itself when it is a primitive, a group of
     * several fields, a group whose one field is repeated (that field cannot
     * be a 3-level element) or a group named "array" or "<list>_tuple";
     * otherwise its single child.  A repeated element that is itself
     * LIST-annotated is a 2-level list inside this one: a list of lists.
     */
    if (r->nchildren == 0) return convert_list(c, r, r, true, true, L, out);   /* 2-level primitive list */
    if (r->nchildren == 1 && r->children[0].e->repetition == PQ_REPEATED) return convert_list(c, r, r, true, true, L, out);
    bool named_like_element = strcmp(r->e->name, "array") == 0;
    if (!named_like_element) {
        size_t nl = strlen(s->e->name), rl = strlen(r->e->name);
        named_like_element = rl == nl + 6 && strncmp(r->e->name, s->e->name, nl) == 0 &&
                             strcmp(r->e->name + nl, "_tuple") == 0;
    }
    if (r->nchildren == 1 && !named_like_element) return convert_list(c, r, &r->children[0], false, true, L, out);
    return convert_list(c, r, r, true, true, L, out);
}

static df_errkind convert_map_group(build_ctx *c, const snode *s, levels L, pq_node *out) {
    if (s->nchildren != 1)
        return df_error_set(c->err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: MAP-annotated group '%s' must have a single child", s->e->name);
    const snode *kv = &s->children[0];
    if (kv->e->repetition != PQ_REPEATED || kv->nchildren == 0)
        return df_error_set(c->err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: MAP-annotated group '%s' needs a repeated key-value group",
                            s->e->name);
    if (kv->nchildren == 1) return convert_list_group(c, s, L, out);   /* keys only: a list of keys */
    if (kv->nchildren != 2)
        return df_error_set(c->err, DF_ERR_PARQUET_FORMAT,
                            "invalid Parquet schema: map '%s' has %d key-value fields", s->e->name, kv->nchildren);
    df_errkind k = DF_OK;
    int16_t elem_def = level_add(out->def, c->err, &k);
    int16_t rep = level_add(L.rep, c->err, &k);
    DF_TRY(k);
    out->kind = PQ_NODE_MAP;
    out->elem_def = elem_def;
    DF_TRY(alloc_children(out, 2, c->err));
    levels EL = {elem_def, rep, elem_def, rep};
    size_t old = path_push(c, kv->e->name, &k);
    DF_TRY(k);
    k = convert_field(c, &kv->children[0], EL, &out->children[0]);
    if (k == DF_OK) k = convert_field(c, &kv->children[1], EL, &out->children[1]);
    path_pop(c, old);
    DF_TRY(k);
    out->field.type = df_type_map(&out->children[0].field, &out->children[1].field, false);
    return out->field.type ? DF_OK : DF_OOM(c->err);
}

/* Converts a node that is not repeated (or whose repetition was handled by the caller). */
static df_errkind convert_node(build_ctx *c, const snode *s, levels L, bool nullable, pq_node *out) {
    df_errkind k = DF_OK;
    out->def = nullable ? level_add(L.def, c->err, &k) : L.def;
    out->slot_def = L.slot_def;
    out->slot_rep = L.slot_rep;
    out->leaf = -1;
    DF_TRY(k);
    if (!is_group(s->e)) {
        k = convert_leaf(c, s, out);
    } else if (is_annotated(s, PQ_LT_LIST)) {
        k = convert_list_group(c, s, L, out);
    } else if (is_annotated(s, PQ_LT_MAP)) {
        k = convert_map_group(c, s, L, out);
    } else {
        levels CL = {out->def, L.rep, L.slot_def, L.slot_rep};
        k = convert_struct_children(c, s, CL, out);
    }
    DF_TRY(k);
    df_type *t = out->field.type;
    out->field.type = NULL;
    return set_field(out, s->e->name, t, nullable, c->err);
}

static df_errkind convert_field(build_ctx *c, const snode *s, levels L, pq_node *out) {
    df_errkind k = DF_OK;
    size_t old = path_push(c, s->e->name, &k);
    DF_TRY(k);
    int32_t first_leaf = c->nleaves;
    if (s->e->repetition == PQ_REPEATED) {
        if (is_group(s->e) && (is_annotated(s, PQ_LT_LIST) || is_annotated(s, PQ_LT_MAP))) {
            k = df_error_set(c->err, DF_ERR_PARQUET_UNSUPPORTED,
                             "Parquet schema: repeated LIST or MAP group '%s' is not supported", s->e->name);
        } else {
            /* An unannotated repeated field: a non-null list of non-null elements. */
            out->def = L.def;
            out->slot_def = L.slot_def;
            out->slot_rep = L.slot_rep;
            out->leaf = -1;
            k = convert_list(c, s, s, true, false, L, out);
            if (k == DF_OK) {
                df_type *t = out->field.type;
                out->field.type = NULL;
                k = set_field(out, s->e->name, t, false, c->err);
            }
        }
    } else {
        k = convert_node(c, s, L, s->e->repetition == PQ_OPTIONAL, out);
    }
    path_pop(c, old);
    out->first_leaf = first_leaf;
    out->nleaves = c->nleaves - first_leaf;
    return k;
}

/* Fills leaf back-pointers and level maxima once the tree is final. */
static void link_leaves(pq_node *n, pq_leaf *leaves, int16_t def, int16_t rep) {
    (void)def;
    (void)rep;
    if (n->kind == PQ_NODE_LEAF) {
        pq_leaf *l = &leaves[n->leaf];
        l->node = n;
        l->type = n->field.type;
        l->max_def = n->def;
        l->max_rep = n->slot_rep;
        return;
    }
    for (int32_t i = 0; i < n->nchildren; i++) link_leaves(&n->children[i], leaves, def, rep);
}

void df__parquet_node_clear(pq_node *n) {
    for (int32_t i = 0; i < n->nchildren; i++) df__parquet_node_clear(&n->children[i]);
    df_free(n->children);
    df_field_clear(&n->field);
    n->children = NULL;
    n->nchildren = 0;
}

df_errkind df__parquet_schema_build(const pq_schema_element *elems, uint32_t n, pq_schema *out, df_error *err) {
    memset(out, 0, sizeof *out);
    out->root.leaf = -1;
    if (n == 0) return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: no elements");
    if (!is_group(&elems[0]) && n > 1)
        return df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: the root is not a group");
    snode root;
    uint32_t pos = 0;
    df_errkind k;
    if (n == 1 && elems[0].num_children <= 0) {
        /* A file without columns. */
        root = (snode){&elems[0], 0, NULL};
        pos = 1;
        k = DF_OK;
    } else {
        k = unflatten(elems, n, &pos, 0, &root, err);
    }
    if (k == DF_OK && pos != n)
        k = df_error_set(err, DF_ERR_PARQUET_FORMAT, "invalid Parquet schema: %u elements after the root's children",
                         n - pos);
    build_ctx c = {0};
    c.err = err;
    df_buf_init(&c.path, 1 << 20);
    if (k == DF_OK && root.nchildren > 0) k = alloc_children(&out->root, root.nchildren, err);
    out->root.kind = PQ_NODE_STRUCT;
    for (int32_t i = 0; k == DF_OK && i < root.nchildren; i++) {
        c.field = i;
        k = convert_field(&c, &root.children[i], (levels){0, 0, 0, 0}, &out->root.children[i]);
    }
    snode_free(&root);
    df_buf_free(&c.path);
    out->leaves = c.leaves;
    out->nleaves = c.nleaves;
    if (k == DF_OK) {
        link_leaves(&out->root, out->leaves, 0, 0);
        out->root.first_leaf = 0;
        out->root.nleaves = c.nleaves;
        df_field *fields = df_calloc((size_t)(out->root.nchildren ? out->root.nchildren : 1), sizeof *fields);
        if (!fields) k = DF_OOM(err);
        for (int32_t i = 0; k == DF_OK && i < out->root.nchildren; i++) fields[i] = out->root.children[i].field;
        if (k == DF_OK) k = df_schema_new(fields, out->root.nchildren, &out->arrow, err);
        df_free(fields);
    }
    if (k != DF_OK) df__parquet_schema_free(out);
    return k;
}

void df__parquet_schema_free(pq_schema *s) {
    df__parquet_node_clear(&s->root);
    for (int32_t i = 0; i < s->nleaves; i++) df_free(s->leaves[i].path);
    df_free(s->leaves);
    df_schema_release(s->arrow);
    memset(s, 0, sizeof *s);
}

/* ---- pruning (leaf projection) -------------------------------------------- */

df_errkind df__parquet_node_prune(const pq_node *node, const bool *keep, pq_node *out, bool *kept, df_error *err) {
    memset(out, 0, sizeof *out);
    *kept = false;
    *out = *node;
    out->children = NULL;
    out->nchildren = 0;
    out->field.name = NULL;
    out->field.type = NULL;
    if (node->kind == PQ_NODE_LEAF) {
        if (!keep[node->leaf]) return DF_OK;
        *kept = true;
        return df_field_copy(&out->field, &node->field, err);
    }
    bool any = false;
    for (int32_t i = node->first_leaf; i < node->first_leaf + node->nleaves; i++) any |= keep[i];
    if (!any) return DF_OK;
    out->children = df_calloc((size_t)node->nchildren, sizeof *out->children);
    if (!out->children) return DF_OOM(err);
    df_errkind k = DF_OK;
    int32_t n = 0;
    for (int32_t i = 0; i < node->nchildren && k == DF_OK; i++) {
        bool ck;
        const pq_node *child = &node->children[i];
        if (node->kind == PQ_NODE_MAP) {
            /* Keep the whole key and value subtrees of a map that is kept at all. */
            bool *all = df_calloc((size_t)(child->first_leaf + child->nleaves), sizeof *all);
            if (!all) {
                k = DF_OOM(err);
                break;
            }
            for (int32_t j = child->first_leaf; j < child->first_leaf + child->nleaves; j++) all[j] = true;
            k = df__parquet_node_prune(child, all, &out->children[n], &ck, err);
            df_free(all);
        } else {
            k = df__parquet_node_prune(child, keep, &out->children[n], &ck, err);
        }
        if (k == DF_OK && ck) n++;
    }
    out->nchildren = n;
    if (k == DF_OK) {
        df_field *fields = df_calloc((size_t)n, sizeof *fields);
        if (!fields) k = DF_OOM(err);
        for (int32_t i = 0; k == DF_OK && i < n; i++) fields[i] = out->children[i].field;
        df_type *t = NULL;
        if (k == DF_OK) {
            switch (node->kind) {
            case PQ_NODE_STRUCT: t = df_type_struct(fields, n); break;
            case PQ_NODE_LIST: t = df_type_list(&fields[0]); break;
            case PQ_NODE_MAP: t = df_type_map(&fields[0], &fields[1], false); break;
            default: break;
            }
            if (!t) k = DF_OOM(err);
        }
        df_free(fields);
        if (k == DF_OK) k = df_field_init(&out->field, node->field.name, t, node->field.nullable, err);
        df_type_release(t);
    }
    if (k != DF_OK) {
        df__parquet_node_clear(out);
        return k;
    }
    out->first_leaf = node->first_leaf;
    out->nleaves = node->nleaves;
    *kept = true;
    return DF_OK;
}
