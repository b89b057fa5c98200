/*
 * Delta schema JSON -> Arrow schema and a column tree.
 *
 * The Delta schema is Spark's JSON form: a "struct" with "fields", each
 * {name, type, nullable, metadata}; a type is a primitive name ("long",
 * "decimal(10,2)", ...) or an object ("struct", "array" with elementType and
 * containsNull, "map" with keyType, valueType and valueContainsNull).
 *
 * Type mapping: byte/short/integer/long -> int8/16/32/64, float, double,
 * boolean, string -> utf8, binary, date -> date32, timestamp ->
 * timestamp(us, "UTC"), timestamp_ntz -> timestamp(us) without zone,
 * decimal(p,s) -> decimal128, void -> null.  Lists name their element
 * "element"; maps use an "entries" struct of non-null "key" and "value".
 *
 * Beside the Arrow schema we keep a tree of df__delta_column that carries
 * what Arrow fields cannot: the column-mapping physical name and field id of
 * every (nested) field.  File readers use it to find columns in Parquet files.
 * Recursion follows the JSON nesting, which the JSON parser already bounds.
 */
#include "delta/delta_int.h"

#include <stdlib.h>

static void column_clear(df__delta_column *c) {
    if (!c) return;
    for (int32_t i = 0; i < c->nchildren; i++) column_clear(&c->children[i]);
    df_free(c->children);
    df_free(c->name);
    df_free(c->physical);
    df_type_release(c->type);
    memset(c, 0, sizeof *c);
}

void df__delta_schema_clear(df__delta_schema *s) {
    if (!s) return;
    for (int32_t i = 0; i < s->ncolumns; i++) column_clear(&s->columns[i]);
    df_free(s->columns);
    df_schema_release(s->schema);
    memset(s, 0, sizeof *s);
}

static df_errkind bad_schema(df_error *err, const char *what, const char *detail) {
    return df_error_set(err, DF_ERR_DELTA_SOURCE_SCHEMA, "invalid Delta schema: %s%s%s", what, detail ? " " : "",
                        detail ? detail : "");
}

/* Parses "decimal(p,s)" (spaces allowed) or plain "decimal" (10,0). */
static df_errkind parse_decimal(const char *name, df_type **out, df_error *err) {
    const char *p = name + 7;
    long prec = 10, scale = 0;
    if (*p) {
        char *end;
        if (*p++ != '(') return bad_schema(err, "malformed decimal type", name);
        prec = strtol(p, &end, 10);
        if (end == p) return bad_schema(err, "malformed decimal type", name);
        p = end;
        while (*p == ' ') p++;
        if (*p++ != ',') return bad_schema(err, "malformed decimal type", name);
        scale = strtol(p, &end, 10);
        if (end == p) return bad_schema(err, "malformed decimal type", name);
        p = end;
        while (*p == ' ') p++;
        if (*p++ != ')' || *p) return bad_schema(err, "malformed decimal type", name);
    }
    if (prec < 1 || prec > 38 || scale < 0 || scale > prec)
        return bad_schema(err, "decimal precision/scale out of range:", name);
    *out = df_type_decimal((int)prec, (int)scale);
    return *out ? DF_OK : DF_OOM(err);
}

static df_errkind primitive_type(const char *name, df__delta_schema *s, df_type **out, df_error *err) {
    static const struct { const char *name; df_type_id id; } prims[] = {
        {"byte", DF_TYPE_INT8},      {"short", DF_TYPE_INT16},   {"integer", DF_TYPE_INT32},
        {"long", DF_TYPE_INT64},     {"float", DF_TYPE_FLOAT32}, {"double", DF_TYPE_FLOAT64},
        {"boolean", DF_TYPE_BOOL},   {"string", DF_TYPE_UTF8},   {"binary", DF_TYPE_BINARY},
        {"date", DF_TYPE_DATE32},    {"void", DF_TYPE_NULL},
    };
    *out = NULL;
    for (size_t i = 0; i < DF_ARRAY_LEN(prims); i++) {
        if (strcmp(name, prims[i].name) == 0) {
            *out = df_type_primitive(prims[i].id);
            return DF_OK;
        }
    }
    if (strcmp(name, "timestamp") == 0) {
        *out = df_type_timestamp(DF_UNIT_MICRO, "UTC");
        return *out ? DF_OK : DF_OOM(err);
    }
    if (strcmp(name, "timestamp_ntz") == 0) {
        s->has_timestamp_ntz = true;
        *out = df_type_timestamp(DF_UNIT_MICRO, NULL);
        return *out ? DF_OK : DF_OOM(err);
    }
    if (strncmp(name, "decimal", 7) == 0) return parse_decimal(name, out, err);
    if (strcmp(name, "variant") == 0)
        return df_error_set(err, DF_ERR_DELTA_PROTOCOL, "unsupported Delta reader feature `variantType`");
    return df_error_set(err, DF_ERR_DELTA_SOURCE_SCHEMA, "unsupported Delta data type `%s`", name);
}

static df_errkind parse_type(const df_json_value *t, df__delta_schema *s, df__delta_column *col, df_error *err);

/* Fills col (name/physical/id/nullable) from a struct field object, then its type. */
static df_errkind parse_field(const df_json_value *f, df__delta_schema *s, df__delta_column *col, df_error *err) {
    const char *name = df_json_get_string(f, "name");
    if (!name) return bad_schema(err, "field without a name", NULL);
    col->field_id = -1;
    col->name = df_strdup(name);
    if (!col->name) return DF_OOM(err);
    bool nullable = true;
    df_json_get_bool(f, "nullable", &nullable);
    col->nullable = nullable;
    const df_json_value *md = df_json_get(f, "metadata");
    const char *phys = df_json_get_string(md, "delta.columnMapping.physicalName");
    col->physical = df_strdup(phys ? phys : name);
    if (!col->physical) return DF_OOM(err);
    int64_t id;
    if (df_json_get_i64(md, "delta.columnMapping.id", &id)) col->field_id = id;
    const df_json_value *t = df_json_get(f, "type");
    if (!t) return bad_schema(err, "field without a type:", name);
    df_errkind k = parse_type(t, s, col, err);
    if (k != DF_OK && k != DF_ERR_OUT_OF_MEMORY && k != DF_ERR_DELTA_PROTOCOL) df_error_prefix(err, "column `%s`", name);
    return k;
}

/* Builds an Arrow field array from child columns (names copied by the type constructors). */
static void child_fields(const df__delta_column *cols, int32_t n, df_field *fields) {
    for (int32_t i = 0; i < n; i++) {
        fields[i].name = cols[i].name;
        fields[i].type = cols[i].type;
        fields[i].nullable = cols[i].nullable;
    }
}

static df_errkind alloc_children(df__delta_column *col, int32_t n, df_error *err) {
    col->children = df_calloc((size_t)(n ? n : 1), sizeof *col->children);
    if (!col->children) return DF_OOM(err);
    col->nchildren = n;
    for (int32_t i = 0; i < n; i++) col->children[i].field_id = -1;
    return DF_OK;
}

/* A synthetic child (list element, map key/value): name, physical name = name. */
static df_errkind synthetic_child(df__delta_column *c, const char *name, bool nullable, df_error *err) {
    c->name = df_strdup(name);
    c->physical = df_strdup(name);
    c->nullable = nullable;
    return c->name && c->physical ? DF_OK : DF_OOM(err);
}

static df_errkind parse_struct(const df_json_value *t, df__delta_schema *s, df__delta_column *col, df_error *err) {
    const df_json_value *fields = df_json_get(t, "fields");
    if (!df_json_is_array(fields)) return bad_schema(err, "struct without fields", NULL);
    if (fields->u.arr.n > 100000) return bad_schema(err, "struct with too many fields", NULL);
    int32_t n = (int32_t)fields->u.arr.n;
    DF_TRY(alloc_children(col, n, err));
    for (int32_t i = 0; i < n; i++) DF_TRY(parse_field(&fields->u.arr.items[i], s, &col->children[i], err));
    df_field *f = df_calloc((size_t)(n ? n : 1), sizeof *f);
    if (!f) return DF_OOM(err);
    child_fields(col->children, n, f);
    col->type = df_type_struct(f, n);
    df_free(f);
    return col->type ? DF_OK : DF_OOM(err);
}

static df_errkind parse_array(const df_json_value *t, df__delta_schema *s, df__delta_column *col, df_error *err) {
    const df_json_value *et = df_json_get(t, "elementType");
    if (!et) return bad_schema(err, "array without elementType", NULL);
    bool contains_null = true;
    df_json_get_bool(t, "containsNull", &contains_null);
    DF_TRY(alloc_children(col, 1, err));
    DF_TRY(synthetic_child(&col->children[0], "element", contains_null, err));
    DF_TRY(parse_type(et, s, &col->children[0], err));
    df_field f = {"element", col->children[0].type, contains_null};
    col->type = df_type_list(&f);
    return col->type ? DF_OK : DF_OOM(err);
}

static df_errkind parse_map(const df_json_value *t, df__delta_schema *s, df__delta_column *col, df_error *err) {
    const df_json_value *kt = df_json_get(t, "keyType"), *vt = df_json_get(t, "valueType");
    if (!kt || !vt) return bad_schema(err, "map without keyType or valueType", NULL);
    bool value_null = true;
    df_json_get_bool(t, "valueContainsNull", &value_null);
    DF_TRY(alloc_children(col, 2, err));
    DF_TRY(synthetic_child(&col->children[0], "key", false, err));
    DF_TRY(synthetic_child(&col->children[1], "value", value_null, err));
    DF_TRY(parse_type(kt, s, &col->children[0], err));
    DF_TRY(parse_type(vt, s, &col->children[1], err));
    df_field key = {"key", col->children[0].type, false};
    df_field value = {"value", col->children[1].type, value_null};
    col->type = df_type_map(&key, &value, false);
    return col->type ? DF_OK : DF_OOM(err);
}

static df_errkind parse_type(const df_json_value *t, df__delta_schema *s, df__delta_column *col, df_error *err) {
    if (df_json_is_string(t)) return primitive_type(t->u.str.ptr, s, &col->type, err);
    const char *kind = df_json_get_string(t, "type");
    if (!kind) return bad_schema(err, "type is neither a name nor an object with a type", NULL);
    if (strcmp(kind, "struct") == 0) return parse_struct(t, s, col, err);
    if (strcmp(kind, "array") == 0) return parse_array(t, s, col, err);
    if (strcmp(kind, "map") == 0) return parse_map(t, s, col, err);
    if (strcmp(kind, "variant") == 0)
        return df_error_set(err, DF_ERR_DELTA_PROTOCOL, "unsupported Delta reader feature `variantType`");
    return df_error_set(err, DF_ERR_DELTA_SOURCE_SCHEMA, "unsupported Delta data type `%s`", kind);
}

df_errkind df__delta_schema_parse(const char *text, size_t len, df__delta_schema *out, df_error *err) {
    memset(out, 0, sizeof *out);
    df_arena arena;
    df_arena_init(&arena, 16 * 1024, 0);
    df_json_value *root = NULL;
    df_errkind k = df_json_parse(text, len, &arena, NULL, &root, err);
    if (k != DF_OK) {
        if (k == DF_ERR_JSON_FORMAT) {
            df_error_prefix(err, "Delta schema");
            k = df__delta_rekind(err, DF_ERR_DELTA_SOURCE_SCHEMA);
        }
        df_arena_destroy(&arena);
        return k;
    }
    df__delta_column top = {0};
    top.field_id = -1;
    const char *kind = df_json_get_string(root, "type");
    if (!kind || strcmp(kind, "struct") != 0) k = bad_schema(err, "the top level is not a struct", NULL);
    if (k == DF_OK) k = parse_struct(root, out, &top, err);
    if (k == DF_OK) {
        /* The top-level struct's children become the table columns. */
        int32_t n = top.nchildren;
        df_field *f = df_calloc((size_t)(n ? n : 1), sizeof *f);
        if (!f) {
            k = DF_OOM(err);
        } else {
            child_fields(top.children, n, f);
            k = df_schema_new(f, n, &out->schema, err);
            df_free(f);
        }
        /* Column names must be unique regardless of case. */
        for (int32_t i = 0; k == DF_OK && i < n; i++)
            for (int32_t j = i + 1; j < n; j++)
                if (df_ascii_casecmp(top.children[i].name, top.children[j].name) == 0) {
                    k = df_error_set(err, DF_ERR_DELTA_SOURCE_SCHEMA, "duplicate column name `%s`", top.children[j].name);
                    break;
                }
    }
    if (k == DF_OK) {
        out->ncolumns = top.nchildren;
        out->columns = top.children;
        top.children = NULL;
        top.nchildren = 0;
    }
    column_clear(&top);
    df_arena_destroy(&arena);
    if (k != DF_OK) df__delta_schema_clear(out);
    return k;
}
