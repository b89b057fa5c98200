/* Unit tests for src/columnar: types, vectors, batches, scalars, Arrow C Data Interface. */
#include "df_test.h"

#include "columnar/columnar.h"
#include "columnar/table_provider.h"

static df_vec *int64_vec(const int64_t *vals, const bool *valid, int64_t n) {
    df_vec *v;
    df_error err = {0};
    DF_ASSERT_OK(df_vec_new(df_type_int64(), n, 0, &v, &err), &err);
    for (int64_t i = 0; i < n; i++) {
        DF_VEC_VALUES(v, int64_t)[i] = vals[i];
        if (valid && !valid[i]) DF_ASSERT_OK(df_vec_set_null(v, i, &err), &err);
    }
    df_vec_set_length(v, n);
    return v;
}

static df_vec *utf8_vec(const char *const *vals, int64_t n) {
    df_vec *v;
    df_error err = {0};
    DF_ASSERT_OK(df_vec_new(df_type_utf8(), 1, 1, &v, &err), &err);
    for (int64_t i = 0; i < n; i++)
        DF_ASSERT_OK(df_vec_append_bytes(v, vals[i], vals[i] ? (int32_t)strlen(vals[i]) : 0, &err), &err);
    return v;
}

DF_TEST(type_display_matches_arrow_names) {
    df_buf b;
    df_buf_init(&b, 0);
    df_type *d = df_type_decimal(10, 2);
    df_type *ts = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    df_type *tsn = df_type_timestamp(DF_UNIT_NANO, NULL);
    df_field el = {.name = "item", .type = df_type_int32(), .nullable = true};
    df_type *list = df_type_list(&el);
    DF_ASSERT_OK(df_type_display(d, &b, NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "Decimal128(10, 2)");
    df_buf_reset(&b);
    DF_ASSERT_OK(df_type_display(ts, &b, NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "Timestamp(\xc2\xb5s, \"UTC\")");
    df_buf_reset(&b);
    DF_ASSERT_OK(df_type_display(tsn, &b, NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "Timestamp(ns)");
    df_buf_reset(&b);
    DF_ASSERT_OK(df_type_display(list, &b, NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "List(Int32)");
    df_buf_reset(&b);
    DF_ASSERT_OK(df_type_arrow_format(ts, &b, NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "tsu:UTC");
    df_buf_reset(&b);
    DF_ASSERT_OK(df_type_arrow_format(d, &b, NULL), NULL);
    DF_ASSERT_EQ_STR(b.data, "d:10,2");
    DF_ASSERT(!df_type_equals(ts, tsn));
    df_type *ts2 = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    DF_ASSERT(df_type_equals(ts, ts2));
    df_type_release(ts2);
    df_type_release(d);
    df_type_release(ts);
    df_type_release(tsn);
    df_type_release(list);
    df_buf_free(&b);
}

DF_TEST(vector_nulls_slice_and_take) {
    int64_t vals[] = {10, 20, 30, 40, 50};
    bool valid[] = {true, false, true, true, false};
    df_vec *v = int64_vec(vals, valid, 5);
    DF_ASSERT_EQ_INT(df_vec_null_count(v), 2);
    df_vec *s;
    DF_ASSERT_OK(df_vec_slice(v, 1, 3, &s, NULL), NULL);
    DF_ASSERT_EQ_INT(s->length, 3);
    DF_ASSERT(df_vec_is_null(s, 0));
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(s, int64_t)[1], 30);
    DF_ASSERT_EQ_INT(df_vec_null_count(s), 1);
    int32_t idx[] = {4, 2, -1, 0};
    df_vec *t;
    DF_ASSERT_OK(df_vec_take(v, idx, 4, &t, NULL), NULL);
    DF_ASSERT(df_vec_is_null(t, 0));
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(t, int64_t)[1], 30);
    DF_ASSERT(df_vec_is_null(t, 2));
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(t, int64_t)[3], 10);
    DF_ASSERT_EQ_INT(df_vec_null_count(t), 2);
    df_vec_release(t);
    df_vec_release(s);
    df_vec_release(v);
}

DF_TEST(strings_append_take_concat) {
    const char *a[] = {"alpha", NULL, "", "gamma"};
    const char *b[] = {"delta", "epsilon"};
    df_vec *va = utf8_vec(a, 4), *vb = utf8_vec(b, 2);
    DF_ASSERT_EQ_INT(va->length, 4);
    DF_ASSERT_EQ_INT(df_vec_null_count(va), 1);
    int32_t len;
    const uint8_t *p = df_vec_bytes(va, 3, &len);
    DF_ASSERT_EQ_INT(len, 5);
    DF_ASSERT(memcmp(p, "gamma", 5) == 0);
    df_vec *parts[2] = {va, vb}, *c;
    DF_ASSERT_OK(df_vec_concat(parts, 2, &c, NULL), NULL);
    DF_ASSERT_EQ_INT(c->length, 6);
    p = df_vec_bytes(c, 5, &len);
    DF_ASSERT(len == 7 && memcmp(p, "epsilon", 7) == 0);
    DF_ASSERT(df_vec_is_null(c, 1));
    DF_ASSERT_OK(df_vec_validate(c, true, NULL), NULL);
    df_vec *sl;
    DF_ASSERT_OK(df_vec_slice(c, 3, 3, &sl, NULL), NULL);
    int32_t idx[] = {2, 0};
    df_vec *t;
    DF_ASSERT_OK(df_vec_take(sl, idx, 2, &t, NULL), NULL);
    p = df_vec_bytes(t, 0, &len);
    DF_ASSERT(len == 7 && memcmp(p, "epsilon", 7) == 0);
    p = df_vec_bytes(t, 1, &len);
    DF_ASSERT(len == 5 && memcmp(p, "gamma", 5) == 0);
    df_vec_release(t);
    df_vec_release(sl);
    df_vec_release(c);
    df_vec_release(va);
    df_vec_release(vb);
}

DF_TEST(scalar_broadcast_and_compare) {
    df_scalar s = {0};
    s.type = df_type_retain(df_type_utf8());
    s.v.bytes.ptr = (uint8_t *)df_strdup("xy");
    s.v.bytes.len = 2;
    df_vec *v;
    DF_ASSERT_OK(df_vec_from_scalar(&s, 3, &v, NULL), NULL);
    int32_t len;
    const uint8_t *p = df_vec_bytes(v, 2, &len);
    DF_ASSERT(len == 2 && memcmp(p, "xy", 2) == 0);
    df_scalar back;
    DF_ASSERT_OK(df_scalar_from_vec(&back, v, 1, NULL), NULL);
    bool comparable;
    DF_ASSERT_EQ_INT(df_scalar_compare(&s, &back, &comparable), 0);
    DF_ASSERT(comparable);
    df_scalar_clear(&back);
    df_vec_release(v);
    df_scalar_clear(&s);

    df_type *dec = df_type_decimal(20, 3);
    df_scalar d = {.type = dec, .v.i128 = -(df_i128)123456789 * 1000000};
    DF_ASSERT_OK(df_vec_from_scalar(&d, 2, &v, NULL), NULL);
    DF_ASSERT(DF_VEC_VALUES(v, df_i128)[1] == d.v.i128);
    df_vec_release(v);
    df_scalar_clear(&d);
}

DF_TEST(nested_list_take_and_concat) {
    df_field el = {.name = "item", .type = df_type_int32(), .nullable = true};
    df_type *lt = df_type_list(&el);
    df_vec *v;
    DF_ASSERT_OK(df_vec_new(lt, 3, 0, &v, NULL), NULL);
    /* [[1, 2], null, [3]] */
    df_vec *child = v->children[0];
    int32_t *cv = DF_VEC_VALUES(child, int32_t);
    cv[0] = 1, cv[1] = 2, cv[2] = 3;
    df_vec_set_length(child, 3);
    int32_t *o = (int32_t *)(void *)v->values->data;
    o[0] = 0, o[1] = 2, o[2] = 2, o[3] = 3;
    DF_ASSERT_OK(df_vec_set_null(v, 1, NULL), NULL);
    df_vec_set_length(v, 3);
    DF_ASSERT_OK(df_vec_validate(v, true, NULL), NULL);
    int32_t idx[] = {2, 0};
    df_vec *t;
    DF_ASSERT_OK(df_vec_take(v, idx, 2, &t, NULL), NULL);
    const int32_t *to = df_vec_offsets(t);
    DF_ASSERT_EQ_INT(to[1], 1);
    DF_ASSERT_EQ_INT(to[2], 3);
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(t->children[0], int32_t)[0], 3);
    DF_ASSERT_EQ_INT(DF_VEC_VALUES(t->children[0], int32_t)[2], 2);
    df_vec *parts[2] = {v, t}, *c;
    DF_ASSERT_OK(df_vec_concat(parts, 2, &c, NULL), NULL);
    DF_ASSERT_EQ_INT(c->length, 5);
    DF_ASSERT_EQ_INT(c->children[0]->length, 6);
    DF_ASSERT_OK(df_vec_validate(c, true, NULL), NULL);
    DF_ASSERT(df_vec_is_null(c, 1));
    df_vec_release(c);
    df_vec_release(t);
    df_vec_release(v);
    df_type_release(lt);
}

DF_TEST(arrow_round_trip_of_a_batch) {
    df_field fields[2];
    df_type *ts = df_type_timestamp(DF_UNIT_MICRO, "UTC");
    DF_ASSERT_OK(df_field_init(&fields[0], "id", df_type_int64(), true, NULL), NULL);
    DF_ASSERT_OK(df_field_init(&fields[1], "name", df_type_utf8(), true, NULL), NULL);
    df_schema *schema;
    DF_ASSERT_OK(df_schema_new(fields, 2, &schema, NULL), NULL);
    df_field_clear(&fields[0]);
    df_field_clear(&fields[1]);
    int64_t ids[] = {1, 2, 3};
    bool valid[] = {true, true, false};
    const char *names[] = {"a", NULL, "ccc"};
    df_vec *cols[2] = {int64_vec(ids, valid, 3), utf8_vec(names, 3)};
    df_batch *b;
    DF_ASSERT_OK(df_batch_new(schema, cols, 3, &b, NULL), NULL);

    struct ArrowSchema as;
    struct ArrowArray aa;
    DF_ASSERT_OK(df_arrow_export_schema(schema, &as, NULL), NULL);
    DF_ASSERT_OK(df_arrow_export_batch(b, &aa, NULL), NULL);
    DF_ASSERT_EQ_STR(as.format, "+s");
    DF_ASSERT_EQ_INT(as.n_children, 2);
    DF_ASSERT_EQ_STR(as.children[1]->format, "u");
    DF_ASSERT_EQ_INT(aa.children[0]->null_count, 1);
    df_batch_release(b); /* the export keeps the data alive */

    df_schema *in_schema;
    DF_ASSERT_OK(df_arrow_import_schema(&as, &in_schema, NULL), NULL);
    DF_ASSERT(df_schema_equals(in_schema, schema));
    df_batch *back;
    df_error err = {0};
    DF_ASSERT_OK(df_arrow_import_batch(&aa, in_schema, &back, &err), &err);
    DF_ASSERT(aa.release == NULL); /* moved */
    DF_ASSERT_EQ_INT(back->nrows, 3);
    DF_ASSERT(df_vec_is_null(back->cols[0], 2));
    DF_ASSERT(df_vec_is_null(back->cols[1], 1));
    int32_t len;
    const uint8_t *p = df_vec_bytes(back->cols[1], 2, &len);
    DF_ASSERT(len == 3 && memcmp(p, "ccc", 3) == 0);
    df_batch_release(back);
    df_schema_release(in_schema);
    as.release(&as);
    df_schema_release(schema);
    df_type_release(ts);
}

DF_TEST(import_rejects_bad_offsets) {
    df_field f;
    DF_ASSERT_OK(df_field_init(&f, "s", df_type_utf8(), true, NULL), NULL);
    df_schema *schema;
    DF_ASSERT_OK(df_schema_new(&f, 1, &schema, NULL), NULL);
    df_field_clear(&f);
    static int32_t offsets[] = {0, 5, 2};
    static const char data[] = "hello";
    const void *child_bufs[3] = {NULL, offsets, data};
    struct ArrowArray child = {.length = 2, .null_count = 0, .n_buffers = 3, .buffers = child_bufs};
    struct ArrowArray *children[1] = {&child};
    const void *root_bufs[1] = {NULL};
    struct ArrowArray root = {.length = 2, .n_buffers = 1, .buffers = root_bufs, .n_children = 1, .children = children};
    df_batch *b;
    df_error err = {0};
    DF_ASSERT_KIND(df_arrow_import_batch(&root, schema, &b, &err), DF_ERR_INVALID_ARGUMENT);
    DF_ASSERT(strstr(err.message, "offsets") != NULL);
    df_schema_release(schema);
}

DF_TEST(memory_provider_projects_and_slices) {
    df_field fields[2];
    DF_ASSERT_OK(df_field_init(&fields[0], "a", df_type_int64(), false, NULL), NULL);
    DF_ASSERT_OK(df_field_init(&fields[1], "b", df_type_int64(), false, NULL), NULL);
    df_schema *schema;
    DF_ASSERT_OK(df_schema_new(fields, 2, &schema, NULL), NULL);
    df_field_clear(&fields[0]);
    df_field_clear(&fields[1]);
    int64_t a[] = {1, 2, 3, 4, 5}, bv[] = {10, 20, 30, 40, 50};
    df_vec *cols[2] = {int64_vec(a, NULL, 5), int64_vec(bv, NULL, 5)};
    df_batch *batch;
    DF_ASSERT_OK(df_batch_new(schema, cols, 5, &batch, NULL), NULL);
    df_table_provider *p;
    DF_ASSERT_OK(df_memory_provider_new(schema, &batch, 1, &p, NULL), NULL);
    df_batch_release(batch);
    int32_t proj[] = {1};
    df_scan_request req = {.projection = proj, .nprojection = 1, .limit = -1, .batch_size = 2};
    df_scan_plan *plan;
    DF_ASSERT_OK(p->vt->plan_scan(p, &req, &plan, NULL), NULL);
    DF_ASSERT_EQ_INT(plan->nunits, 1);
    DF_ASSERT_EQ_STR(plan->schema->fields[0].name, "b");
    df_batch_stream *s;
    DF_ASSERT_OK(p->vt->open_unit(p, plan, 0, &s, NULL), NULL);
    int64_t rows = 0, batches = 0, sum = 0;
    for (;;) {
        df_batch *out;
        DF_ASSERT_OK(df_batch_stream_next(s, &out, NULL), NULL);
        if (!out) break;
        batches++;
        rows += out->nrows;
        for (int64_t i = 0; i < out->nrows; i++) sum += DF_VEC_VALUES(out->cols[0], int64_t)[i];
        df_batch_release(out);
    }
    DF_ASSERT_EQ_INT(rows, 5);
    DF_ASSERT_EQ_INT(batches, 3);
    DF_ASSERT_EQ_INT(sum, 150);
    df_batch_stream_close(s);
    DF_ASSERT_EQ_INT(atomic_load(&plan->metrics->rows_produced), 5);
    p->vt->free_plan(p, plan);
    df_table_provider_release(p);
    df_schema_release(schema);
}

DF_TEST(concat_of_many_strings_keeps_every_byte) {
    /* Enough data that the output's data buffer grows several times while concatenating. */
    enum { PARTS = 40, PER = 50 };
    df_vec *parts[PARTS];
    char text[64];
    for (int p = 0; p < PARTS; p++) {
        DF_ASSERT_OK(df_vec_new(df_type_utf8(), PER, 16, &parts[p], NULL), NULL);
        for (int i = 0; i < PER; i++) {
            int n = snprintf(text, sizeof text, "part-%02d-row-%02d-%s", p, i, "padding-padding-padding");
            DF_ASSERT_OK(df_vec_append_bytes(parts[p], text, n, NULL), NULL);
        }
    }
    df_vec *c;
    DF_ASSERT_OK(df_vec_concat(parts, PARTS, &c, NULL), NULL);
    DF_ASSERT_EQ_INT(c->length, PARTS * PER);
    for (int p = 0; p < PARTS; p++) {
        for (int i = 0; i < PER; i++) {
            int n = snprintf(text, sizeof text, "part-%02d-row-%02d-%s", p, i, "padding-padding-padding");
            int32_t len;
            const uint8_t *got = df_vec_bytes(c, (int64_t)p * PER + i, &len);
            DF_ASSERT_EQ_INT(len, n);
            DF_ASSERT(memcmp(got, text, (size_t)n) == 0);
        }
        df_vec_release(parts[p]);
    }
    DF_ASSERT_OK(df_vec_validate(c, true, NULL), NULL);
    df_vec_release(c);
}
