/*
 * Nested layouts that current writers no longer produce (2-level lists,
 * repeated fields without annotation, legacy MAP_KEY_VALUE maps, optional
 * map keys), in files built here byte by byte from levels and values, and
 * read back through the whole reader.
 */
#include "df_test.h"

#include "parquet/metadata.h"
#include "parquet/parquet.h"
#include "parquet/rle.h"

/* One leaf column: its levels and its non-null INT32 values. */
typedef struct leaf_spec {
    const int16_t *rep;
    const int16_t *def;
    int n;                  /* level entries */
    const int32_t *values;
    int nvalues;
    int max_rep, max_def;
} leaf_spec;

static void put_levels(df_buf *b, const int16_t *lv, int n, int max) {
    uint32_t tmp[64];
    for (int i = 0; i < n; i++) tmp[i] = (uint32_t)lv[i];
    size_t at = b->len;
    df_buf_append(b, "\0\0\0\0", 4, NULL);
    DF_ASSERT_OK(df__parquet_rle_encode(tmp, (size_t)n, df__parquet_bit_width((uint64_t)max), b, NULL), NULL);
    df_store_le32(b->data + at, (uint32_t)(b->len - at - 4));
}

/* Builds a one-row-group file with the given schema and leaves (uncompressed v1 pages). */
static void build_file(df_buf *file, pq_schema_element *schema, uint32_t nschema, const leaf_spec *leaves, int nleaves,
                       int64_t rows, const char *const *paths) {
    df_buf_init(file, 0);
    df_buf_append(file, "PAR1", 4, NULL);
    pq_column_chunk cols[4];
    memset(cols, 0, sizeof cols);
    static int32_t encodings[2] = {PQ_ENC_PLAIN, PQ_ENC_RLE};
    for (int l = 0; l < nleaves; l++) {
        const leaf_spec *s = &leaves[l];
        df_buf body;
        df_buf_init(&body, 0);
        if (s->max_rep) put_levels(&body, s->rep, s->n, s->max_rep);
        if (s->max_def) put_levels(&body, s->def, s->n, s->max_def);
        df_buf_append(&body, s->values, (size_t)s->nvalues * 4, NULL);
        pq_page_header h;
        memset(&h, 0, sizeof h);
        h.type = PQ_PAGE_DATA;
        h.uncompressed_size = h.compressed_size = (int32_t)body.len;
        h.has_data = true;
        h.data.num_values = s->n;
        h.data.encoding = PQ_ENC_PLAIN;
        h.data.def_encoding = h.data.rep_encoding = PQ_ENC_RLE;
        int64_t start = (int64_t)file->len;
        DF_ASSERT_OK(df__parquet_write_page_header(&h, file, NULL), NULL);
        df_buf_append(file, body.data, body.len, NULL);
        df_buf_free(&body);
        pq_column_meta *m = &cols[l].meta;
        cols[l].has_meta = true;
        cols[l].file_offset = start;
        m->type = DF_PARQUET_INT32;
        m->encodings = encodings;
        m->nencodings = 2;
        m->path = (const char **)&paths[l * 3];
        m->npath = 0;
        while (m->npath < 3 && paths[l * 3 + m->npath]) m->npath++;
        m->codec = DF_PARQUET_UNCOMPRESSED;
        m->num_values = s->n;
        m->total_uncompressed_size = m->total_compressed_size = (int64_t)file->len - start;
        m->data_page_offset = start;
        m->dictionary_page_offset = -1;
    }
    pq_row_group rg;
    memset(&rg, 0, sizeof rg);
    rg.columns = cols;
    rg.ncolumns = (uint32_t)nleaves;
    rg.num_rows = rows;
    rg.file_offset = rg.total_compressed_size = -1;
    rg.ordinal = -1;
    pq_file_meta meta;
    memset(&meta, 0, sizeof meta);
    meta.version = 1;
    meta.schema = schema;
    meta.nschema = nschema;
    meta.num_rows = rows;
    meta.row_groups = &rg;
    meta.nrow_groups = 1;
    size_t at = file->len;
    DF_ASSERT_OK(df__parquet_write_file_meta(&meta, file, NULL), NULL);
    uint8_t tail[8];
    df_store_le32(tail, (uint32_t)(file->len - at));
    memcpy(tail + 4, "PAR1", 4);
    df_buf_append(file, tail, 8, NULL);
}

static pq_schema_element el(const char *name, int type, int rep, int children, int ct) {
    pq_schema_element e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.type = type;
    e.repetition = rep;
    e.num_children = children;
    e.converted_type = ct;
    e.type_length = e.scale = e.precision = e.field_id = -1;
    return e;
}

/* Reads a one-column file and returns its column as a vector (one batch). */
static df_vec *read_column(const df_buf *file, int batch) {
    df_error e_ = {0}, *err = &e_;
    df_input *in;
    DF_ASSERT_OK(df_input_open_memory(file->data, file->len, &in, err), err);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open(in, &f, err), err);
    df_parquet_read_options o = {0};
    o.batch_size = batch;
    df_batch_stream *s;
    DF_ASSERT_OK(df_parquet_reader_open(f, &o, &s, err), err);
    df_parquet_file_close(f);
    df_vec *parts[16];
    int np = 0;
    for (;;) {
        df_batch *b;
        DF_ASSERT_OK(df_batch_stream_next(s, &b, err), err);
        if (!b) break;
        DF_ASSERT_OK(df_vec_validate(b->cols[0], true, err), err);
        parts[np++] = df_vec_retain(b->cols[0]);
        df_batch_release(b);
    }
    df_batch_stream_close(s);
    df_vec *all;
    DF_ASSERT_OK(df_vec_concat(parts, np, &all, err), err);
    for (int i = 0; i < np; i++) df_vec_release(parts[i]);
    return all;
}

/* Renders list<int32> / map<int32,int32> values as text: "[1,2] [] null [3]". */
static void render(const df_vec *v, df_buf *out) {
    const int32_t *off = df_vec_offsets(v);
    const df_vec *child = v->children[0];
    for (int64_t i = 0; i < v->length; i++) {
        if (i) df_buf_append_char(out, ' ', NULL);
        if (df_vec_is_null(v, i)) {
            df_buf_append_str(out, "null", NULL);
            continue;
        }
        df_buf_append_char(out, '[', NULL);
        for (int32_t j = off[i]; j < off[i + 1]; j++) {
            if (j > off[i]) df_buf_append_char(out, ',', NULL);
            if (v->type->id == DF_TYPE_MAP) {
                const df_vec *k = child->children[0], *val = child->children[1];
                df_buf_printf(out, NULL, "%d:", DF_VEC_VALUES(k, int32_t)[j]);
                if (df_vec_is_null(val, j)) df_buf_append_str(out, "null", NULL);
                else df_buf_printf(out, NULL, "%d", DF_VEC_VALUES(val, int32_t)[j]);
            } else if (child->type->id == DF_TYPE_STRUCT) {
                const df_vec *x = child->children[0];
                if (df_vec_is_null(x, j)) df_buf_append_str(out, "{null}", NULL);
                else df_buf_printf(out, NULL, "{%d}", DF_VEC_VALUES(x, int32_t)[j]);
            } else {
                df_buf_printf(out, NULL, "%d", DF_VEC_VALUES(child, int32_t)[j]);
            }
        }
        df_buf_append_char(out, ']', NULL);
    }
}

static void expect_rows(const df_buf *file, const char *want) {
    static const int batches[] = {1, 3, 8192};
    for (size_t i = 0; i < DF_ARRAY_LEN(batches); i++) {
        df_vec *v = read_column(file, batches[i]);
        df_buf text;
        df_buf_init(&text, 0);
        render(v, &text);
        DF_ASSERT_EQ_STR(text.data, want);
        df_buf_free(&text);
        df_vec_release(v);
    }
}

DF_TEST(two_level_list_of_required_ints) {
    /* optional group a (LIST) { repeated int32 array; }: rows [1,2] [] null [3] */
    pq_schema_element schema[3] = {el("schema", -1, -1, 1, -1), el("a", -1, PQ_OPTIONAL, 1, PQ_CT_LIST),
                                   el("array", DF_PARQUET_INT32, PQ_REPEATED, -1, -1)};
    static const int16_t rep[] = {0, 1, 0, 0, 0}, def[] = {2, 2, 1, 0, 2};
    static const int32_t vals[] = {1, 2, 3};
    leaf_spec leaf = {rep, def, 5, vals, 3, 1, 2};
    const char *paths[3] = {"a", "array", NULL};
    df_buf file;
    build_file(&file, schema, 3, &leaf, 1, 4, paths);
    expect_rows(&file, "[1,2] [] null [3]");
    df_buf_free(&file);
}

DF_TEST(repeated_field_without_annotation) {
    /* repeated int32 r: a required list of required ints; rows [5,6,7] [] [8] */
    pq_schema_element schema[2] = {el("schema", -1, -1, 1, -1), el("r", DF_PARQUET_INT32, PQ_REPEATED, -1, -1)};
    static const int16_t rep[] = {0, 1, 1, 0, 0}, def[] = {1, 1, 1, 0, 1};
    static const int32_t vals[] = {5, 6, 7, 8};
    leaf_spec leaf = {rep, def, 5, vals, 4, 1, 1};
    const char *paths[3] = {"r", NULL, NULL};
    df_buf file;
    build_file(&file, schema, 2, &leaf, 1, 3, paths);
    expect_rows(&file, "[5,6,7] [] [8]");
    df_buf_free(&file);
}

DF_TEST(list_of_one_field_groups_named_array_are_structs) {
    /* optional group a (LIST) { repeated group array { optional int32 x; } }: [{1},{null}] null [] */
    pq_schema_element schema[4] = {el("schema", -1, -1, 1, -1), el("a", -1, PQ_OPTIONAL, 1, PQ_CT_LIST),
                                   el("array", -1, PQ_REPEATED, 1, -1), el("x", DF_PARQUET_INT32, PQ_OPTIONAL, -1, -1)};
    static const int16_t rep[] = {0, 1, 0, 0}, def[] = {3, 2, 0, 1};
    static const int32_t vals[] = {1};
    leaf_spec leaf = {rep, def, 4, vals, 1, 1, 3};
    const char *paths[3] = {"a", "array", "x"};
    df_buf file;
    build_file(&file, schema, 4, &leaf, 1, 3, paths);
    expect_rows(&file, "[{1},{null}] null []");
    df_buf_free(&file);
}

DF_TEST(legacy_map_key_value_and_optional_keys) {
    for (int optional_key = 0; optional_key <= 1; optional_key++) {
        /* optional group m (MAP) { repeated group map (MAP_KEY_VALUE) { key; optional int32 value; } } */
        pq_schema_element schema[5] = {
            el("schema", -1, -1, 1, -1), el("m", -1, PQ_OPTIONAL, 1, PQ_CT_MAP),
            el("map", -1, PQ_REPEATED, 2, PQ_CT_MAP_KEY_VALUE),
            el("key", DF_PARQUET_INT32, optional_key ? PQ_OPTIONAL : PQ_REQUIRED, -1, -1),
            el("value", DF_PARQUET_INT32, PQ_OPTIONAL, -1, -1)};
        /* rows {1:10, 2:null} null {} {3:30} */
        static const int16_t rep[] = {0, 1, 0, 0, 0};
        static const int16_t kdef_req[] = {2, 2, 0, 1, 2}, kdef_opt[] = {3, 3, 0, 1, 3};
        static const int16_t vdef[] = {3, 2, 0, 1, 3};
        static const int32_t keys[] = {1, 2, 3}, vals[] = {10, 30};
        leaf_spec leaves[2] = {{rep, optional_key ? kdef_opt : kdef_req, 5, keys, 3, 1, 2 + optional_key},
                               {rep, vdef, 5, vals, 2, 1, 3}};
        const char *paths[6] = {"m", "map", "key", "m", "map", "value"};
        df_buf file;
        build_file(&file, schema, 5, leaves, 2, 4, paths);
        expect_rows(&file, "[1:10,2:null] null [] [3:30]");
        df_buf_free(&file);
    }
}

DF_TEST(inconsistent_levels_are_errors) {
    /* Definition levels that claim more values than the page holds. */
    pq_schema_element schema[2] = {el("schema", -1, -1, 1, -1), el("r", DF_PARQUET_INT32, PQ_REPEATED, -1, -1)};
    static const int16_t rep[] = {0, 1, 1}, def[] = {1, 1, 1};
    static const int32_t vals[] = {5};
    leaf_spec leaf = {rep, def, 3, vals, 1, 1, 1};
    const char *paths[3] = {"r", NULL, NULL};
    df_buf file;
    build_file(&file, schema, 2, &leaf, 1, 1, paths);
    df_error e_ = {0}, *err = &e_;
    df_input *in;
    DF_ASSERT_OK(df_input_open_memory(file.data, file.len, &in, err), err);
    df_parquet_file *f;
    DF_ASSERT_OK(df_parquet_file_open(in, &f, err), err);
    df_batch_stream *s;
    DF_ASSERT_OK(df_parquet_reader_open(f, NULL, &s, err), err);
    df_batch *b;
    DF_ASSERT_KIND(df_batch_stream_next(s, &b, err), DF_ERR_PARQUET_FORMAT);
    df_batch_stream_close(s);
    df_parquet_file_close(f);
    /* A first repetition level of 1. */
    static const int16_t rep1[] = {1, 0};
    static const int16_t def1[] = {1, 1};
    static const int32_t vals2[] = {1, 2};
    leaf_spec bad = {rep1, def1, 2, vals2, 2, 1, 1};
    df_buf_free(&file);
    build_file(&file, schema, 2, &bad, 1, 1, paths);
    DF_ASSERT_OK(df_input_open_memory(file.data, file.len, &in, err), err);
    DF_ASSERT_OK(df_parquet_file_open(in, &f, err), err);
    DF_ASSERT_OK(df_parquet_reader_open(f, NULL, &s, err), err);
    DF_ASSERT_KIND(df_batch_stream_next(s, &b, err), DF_ERR_PARQUET_FORMAT);
    DF_ASSERT(strstr(err->message, "first repetition level") != NULL);
    df_batch_stream_close(s);
    df_parquet_file_close(f);
    df_buf_free(&file);
}
