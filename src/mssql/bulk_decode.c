/*
 * Bulk-load stream decoding (the server side of BULK_LOAD): COLMETADATA as
 * a bulk client sends it, then ROW tokens and an optional DONE.  Used by
 * the loopback peer while a message streams in, and whole-buffer by the
 * fuzz targets.  Only bounds-checked reads; no recursion.
 *
 * Two row decoders share the rules of tds_types.c: the general one builds
 * a df__tds_value per column (the peer stores those), and the row plan
 * (df__tds_bulk_rows_skim) checks rows in place for the peer's discard
 * mode.  The plan's checks are the general reader's, specialised per
 * column when the metadata arrives; whatever the plan does not accept it
 * leaves to the general reader, which alone writes error messages.
 */
#include "mssql/tds.h"

/* Parses COLMETADATA at the reader. */
df_errkind df__tds_bulk_meta_read(df__tds_rd *r, df__tds_bulk_meta *m, df_error *err) {
    uint8_t tok;
    uint16_t n;
    DF_TRY(df__tds_rd_u8(r, &tok, err));
    if (tok != TDS_TOK_COLMETADATA) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "bulk stream starts with token 0x%02X, not COLMETADATA", tok);
    DF_TRY(df__tds_rd_u16(r, &n, err));
    if (n == 0 || n == 0xFFFF || n > 4096) return df_error_set(err, DF_ERR_TDS_PROTOCOL, "bulk COLMETADATA has %u columns", n);
    /* At least 8 bytes per column; a shorter buffer is "truncated" so a streaming reader waits for more. */
    DF_TRY(df__tds_rd_need(r, (size_t)n * 8, "COLMETADATA", err));
    df__tds_typeinfo *ti = df_calloc(n, sizeof *ti);
    if (!ti) return DF_OOM(err);
    df_errkind k = DF_OK;
    for (unsigned i = 0; k == DF_OK && i < n; i++) {
        uint32_t usertype;
        uint16_t flags;
        char name[130];
        k = df__tds_rd_u32(r, &usertype, err);
        if (k == DF_OK) k = df__tds_rd_u16(r, &flags, err);
        if (k == DF_OK) k = df__tds_typeinfo_read(r, &ti[i], true, err);
        if (k == DF_OK) k = df__tds_rd_bvarchar(r, name, sizeof name, err);
    }
    if (k != DF_OK) {
        df_free(ti);
        return k;
    }
    m->ncols = n;
    m->ti = ti;
    return DF_OK;
}

/*
 * Parses one ROW's values (after the token).  PLP values sent in several
 * chunks are assembled one after another in `scratch`, which may move when
 * a later value grows it: such values remember their offset (in `i`,
 * unused by byte values) and get their pointers once the row is complete.
 */
df_errkind df__tds_bulk_row_read(df__tds_rd *r, const df__tds_bulk_meta *m, df_buf *scratch, df__tds_value *vals, df_error *err) {
    df_buf_reset(scratch);
    bool assembled = false;
    for (int i = 0; i < m->ncols; i++) {
        df__tds_value *v = &vals[i];
        DF_TRY(df__tds_value_read(r, &m->ti[i], scratch, v, err));
        if (v->kind != TDS_V_BYTES) continue;
        uintptr_t at = (uintptr_t)v->bytes, base = (uintptr_t)scratch->data;
        bool in_scratch = scratch->data && at >= base && at <= base + scratch->len;
        v->i = in_scratch ? (int64_t)(at - base) + 1 : 0;
        assembled |= in_scratch;
    }
    if (assembled) {
        for (int i = 0; i < m->ncols; i++) {
            df__tds_value *v = &vals[i];
            if (v->kind != TDS_V_BYTES || v->i <= 0) continue;
            v->bytes = (const uint8_t *)scratch->data + (v->i - 1);
            v->i = 0;
        }
    }
    return DF_OK;
}

/*
 * Decodes a whole bulk message (see df__tds_bulk_decode); with a plan
 * builder (`planned`), runs of rows go through the row plan and only the
 * items it stops at through the general reader, as the peer's discard
 * mode does.
 */
static df_errkind bulk_decode(const uint8_t *p, size_t n, int ncols, bool planned, int64_t *rows, df_error *err) {
    *rows = 0;
    df__tds_rd r;
    df__tds_rd_init(&r, p, n);
    df__tds_bulk_meta m = {0};
    DF_TRY(df__tds_bulk_meta_read(&r, &m, err));
    df_errkind k = DF_OK;
    if (ncols >= 0 && m.ncols != ncols) k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "bulk metadata has %d columns, INSERT BULK %d", m.ncols, ncols);
    df__tds_value *vals = df_calloc((size_t)m.ncols, sizeof *vals);
    df_buf scratch, text;
    df_buf_init(&scratch, TDS_MAX_VALUE);
    df_buf_init(&text, 0);
    if (!vals && k == DF_OK) k = DF_OOM(err);
    df__tds_bulk_plan plan = {0};
    if (k == DF_OK && planned) {
        df_errkind pk = df__tds_bulk_plan_init(&plan, &m, NULL, NULL);
        if (pk == DF_ERR_OUT_OF_MEMORY) k = DF_OOM(err);
        planned = pk == DF_OK;
    }
    while (k == DF_OK && df__tds_rd_left(&r) > 0) {
        if (planned) {
            size_t used;
            df__tds_skim_stop why;
            *rows += (int64_t)df__tds_bulk_rows_skim(&plan, r.p, df__tds_rd_left(&r), SIZE_MAX, &used, &why);
            r.p += used;
            if (df__tds_rd_left(&r) == 0) break;
        }
        uint8_t tok;
        k = df__tds_rd_u8(&r, &tok, err);
        if (k != DF_OK) break;
        if (tok == TDS_TOK_DONE) {
            k = df__tds_rd_skip(&r, 12, err);
            if (k == DF_OK && df__tds_rd_left(&r)) k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "bytes after the bulk DONE");
            break;
        }
        if (tok != TDS_TOK_ROW) { k = df_error_set(err, DF_ERR_TDS_PROTOCOL, "token 0x%02X in a bulk stream", tok); break; }
        k = df__tds_bulk_row_read(&r, &m, &scratch, vals, err);
        /* Exercise the text formatting used for storage. */
        for (int i = 0; k == DF_OK && i < m.ncols; i++) {
            char buf[64];
            const df__tds_value *v = &vals[i];
            if (v->kind == TDS_V_DECIMAL) df__tds_format_decimal(v->dec, m.ti[i].scale, buf, sizeof buf);
            else if (v->kind == TDS_V_DATE || v->kind == TDS_V_DATETIME2 || v->kind == TDS_V_DTO) df__tds_format_date(v->i, buf, sizeof buf);
            else if (v->kind == TDS_V_TIME) df__tds_format_time(v->ticks, m.ti[i].scale, buf, sizeof buf);
            else if (v->kind == TDS_V_GUID) df__tds_format_guid(v->bytes, buf);
            else if (v->kind == TDS_V_BYTES && (m.ti[i].type == TDS_T_NVARCHAR || m.ti[i].type == TDS_T_NCHAR)) {
                df_buf_reset(&text);
                k = df__tds_utf16le_to_utf8(v->bytes, v->len & ~(size_t)1, &text, err);
            }
        }
        if (k == DF_OK) (*rows)++;
    }
    df__tds_bulk_plan_free(&plan);
    df_free(vals);
    df_free(m.ti);
    df_buf_free(&scratch);
    df_buf_free(&text);
    return k;
}

df_errkind df__tds_bulk_decode(const uint8_t *p, size_t n, int ncols, int64_t *rows, df_error *err) {
    return bulk_decode(p, n, ncols, false, rows, err);
}

df_errkind df__tds_bulk_decode_planned(const uint8_t *p, size_t n, int ncols, int64_t *rows, df_error *err) {
    return bulk_decode(p, n, ncols, true, rows, err);
}

/* ------------------------------------------------------------------------ */
/* Row plans                                                                 */

/* Largest day number of a date (9999-12-31), as tds_types.c checks it. */
#define MAX_DAY 3652058u

/* Fills the plan step for one column; false when the type has none. */
static bool plan_step(const df__tds_typeinfo *ti, bool nonull, df__tds_bulk_step *s) {
    memset(s, 0, sizeof *s);
    s->nonull = nonull;
    switch (ti->size_class) {
    case TDS_SC_FIXED:
        switch (ti->type) {
        case TDS_T_INT1: case TDS_T_BIT: case TDS_T_INT2: case TDS_T_INT4: case TDS_T_INT8:
        case TDS_T_FLT4: case TDS_T_FLT8: case TDS_T_MONEY4: case TDS_T_MONEY:
            s->op = TDS_STEP_SKIP;
            s->n = ti->max_len;
            return true;
        case TDS_T_DATETIM4: case TDS_T_DATETIME:
            s->op = TDS_STEP_DATETIME;
            s->n = ti->max_len;
            return true;
        default:
            return false;
        }
    case TDS_SC_BYTELEN:
        switch (ti->type) {
        /* Lengths the general reader accepts whatever the declared maximum (bit 0: NULL). */
        case TDS_T_INTN: s->op = TDS_STEP_LEN1; s->lenmask = 1u | 1u << 1 | 1u << 2 | 1u << 4 | 1u << 8; return true;
        case TDS_T_FLTN: case TDS_T_MONEYN: s->op = TDS_STEP_LEN1; s->lenmask = 1u | 1u << 4 | 1u << 8; return true;
        case TDS_T_BITN: s->op = TDS_STEP_LEN1; s->lenmask = 1u | 1u << 1; return true;
        case TDS_T_GUID: s->op = TDS_STEP_LEN1; s->lenmask = 1u | 1u << 16; return true;
        case TDS_T_DATETIMN: s->op = TDS_STEP_DATETIME; s->n = 0; return true;
        case TDS_T_DATEN: s->op = TDS_STEP_DATE; return true;
        case TDS_T_DECIMALN: case TDS_T_NUMERICN:
            if (ti->precision < 1 || ti->precision > 38) return false;
            s->op = TDS_STEP_DECIMAL;
            s->dec_limit = (df_u128)df__tds_pow10(ti->precision);
            return true;
        case TDS_T_TIMEN: case TDS_T_DATETIME2N: case TDS_T_DATETIMEOFFSETN:
            if (ti->scale > 7) return false;
            s->op = TDS_STEP_TIME;
            s->time_len = (uint8_t)df__tds_time_len(ti->scale);
            s->date_off = ti->type == TDS_T_TIMEN ? 0 : ti->type == TDS_T_DATETIME2N ? 1 : 2;
            s->n = s->time_len + (s->date_off ? 3u : 0u) + (s->date_off == 2 ? 2u : 0u);
            s->tick_limit = 86400ULL * df__tds_pow10_u64[ti->scale];
            return true;
        default:
            return false;
        }
    case TDS_SC_USHORTLEN:
        s->op = TDS_STEP_USHORT;
        s->n = ti->max_len;
        return true;
    case TDS_SC_PLP:
        s->op = TDS_STEP_PLP;
        return true;
    default:
        return false;
    }
}

/* Sets the plan's usual row shape when every column is fixed or LEN1 with an allowed declared length. */
static void plan_shape(df__tds_bulk_plan *pl, const df__tds_bulk_meta *m) {
    size_t off = 1;
    int nshape = 0;
    for (int i = 0; i < m->ncols; i++) {
        const df__tds_typeinfo *ti = &m->ti[i];
        df__tds_bulk_step s;
        if (!plan_step(ti, false, &s)) return;
        if (s.op == TDS_STEP_SKIP) {
            off += s.n;
            continue;
        }
        if (s.op != TDS_STEP_LEN1 || ti->max_len == 0 || ti->max_len >= 64 || !(s.lenmask >> ti->max_len & 1) ||
            nshape == TDS_PLAN_SHAPE_MAX)
            return;
        pl->shape_off[nshape] = (uint32_t)off;
        pl->shape_len[nshape] = (uint8_t)ti->max_len;
        nshape++;
        off += 1 + ti->max_len;
    }
    if (nshape == 0) return; /* all fixed: fixed_row covers it */
    pl->nshape = nshape;
    pl->shape_row = off;
}

df_errkind df__tds_bulk_plan_init(df__tds_bulk_plan *pl, const df__tds_bulk_meta *m, const bool *nonull, df_error *err) {
    memset(pl, 0, sizeof *pl);
    if (m->ncols < 1) return df_error_set(err, DF_ERR_UNSUPPORTED, "no columns to plan");
    df__tds_bulk_step *steps = df_calloc((size_t)m->ncols, sizeof *steps);
    if (!steps) return DF_OOM(err);
    int ns = 0;
    for (int i = 0; i < m->ncols; i++) {
        df__tds_bulk_step s;
        if (!plan_step(&m->ti[i], nonull && nonull[i], &s)) {
            df_free(steps);
            return df_error_set(err, DF_ERR_UNSUPPORTED, "column %d of type 0x%02X has no row plan", i + 1, m->ti[i].type);
        }
        /* Adjacent fixed columns become one bounds check. */
        if (s.op == TDS_STEP_SKIP && ns > 0 && steps[ns - 1].op == TDS_STEP_SKIP) steps[ns - 1].n += s.n;
        else steps[ns++] = s;
    }
    pl->nsteps = ns;
    pl->steps = steps;
    pl->fixed_row = ns == 1 && steps[0].op == TDS_STEP_SKIP ? 1 + (size_t)steps[0].n : 0;
    plan_shape(pl, m);
    return DF_OK;
}

void df__tds_bulk_plan_free(df__tds_bulk_plan *pl) {
    df_free(pl->steps);
    pl->steps = NULL;
    pl->nsteps = 0;
}

/* Little-endian unsigned of 1..8 bytes. */
static inline uint64_t load_le_n(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Result of checking one value or row: accepted, incomplete input, or left to the general reader. */
enum { SKIM_OK = 1, SKIM_SHORT = 0, SKIM_OTHER = -1 };

/* Checks a decimal body of len bytes (sign + magnitude). */
static inline bool decimal_ok(const df__tds_bulk_step *s, const uint8_t *q, unsigned len) {
    if (q[0] > 1) return false;
    df_u128 mag;
    if (len <= 9) mag = load_le_n(q + 1, len - 1);
    else mag = (df_u128)load_le_n(q + 9, len - 9) << 64 | df_load_le64(q + 1);
    return mag < s->dec_limit;
}

/* Checks a time / datetime2 / datetimeoffset body of s->n bytes. */
static inline bool time_ok(const df__tds_bulk_step *s, const uint8_t *q) {
    if (load_le_n(q, s->time_len) >= s->tick_limit) return false;
    if (s->date_off == 0) return true;
    if (load_le_n(q + s->time_len, 3) > MAX_DAY) return false;
    if (s->date_off == 1) return true;
    int16_t off = (int16_t)df_load_le16(q + s->time_len + 3);
    return off >= -840 && off <= 840;
}

/* Checks the PLP value at *qp; advances *qp; *multi += bytes the general reader would assemble. */
static inline int plp_ok(const df__tds_bulk_step *s, const uint8_t **qp, const uint8_t *end, uint64_t *multi) {
    const uint8_t *q = *qp;
    if (end - q < 8) return SKIM_SHORT;
    uint64_t total = df_load_le64(q);
    q += 8;
    if (total == UINT64_MAX) {
        *qp = q;
        return s->nonull ? SKIM_OTHER : SKIM_OK;
    }
    bool known = total != 0xFFFFFFFFFFFFFFFEULL;
    if (known && total > TDS_MAX_VALUE) return SKIM_OTHER;
    uint64_t sum = 0;
    unsigned chunks = 0;
    for (;;) {
        if (end - q < 4) return SKIM_SHORT;
        uint32_t c = df_load_le32(q);
        q += 4;
        if (c == 0) break;
        if ((size_t)(end - q) < c) return SKIM_SHORT;
        q += c;
        sum += c;
        chunks++;
    }
    if (known && sum != total) return SKIM_OTHER;
    /* Values in several chunks are assembled in a capped buffer: leave large ones to the general reader. */
    if (chunks > 1 && (*multi += sum) > TDS_MAX_VALUE / 2) return SKIM_OTHER;
    *qp = q;
    return SKIM_OK;
}

/* Checks one ROW token at q (q < end) and sets *next past it. */
static int skim_row(const df__tds_bulk_plan *pl, const uint8_t *q, const uint8_t *end, const uint8_t **next) {
    if (*q != TDS_TOK_ROW) return SKIM_OTHER;
    q++;
    uint64_t multi = 0;
    for (int i = 0; i < pl->nsteps; i++) {
        const df__tds_bulk_step *s = &pl->steps[i];
        size_t left = (size_t)(end - q);
        unsigned len;
        switch (s->op) {
        case TDS_STEP_SKIP:
            if (left < s->n) return SKIM_SHORT;
            q += s->n;
            continue;
        case TDS_STEP_USHORT:
            if (left < 2) return SKIM_SHORT;
            len = df_load_le16(q);
            if (len == 0xFFFF) {
                if (s->nonull) return SKIM_OTHER;
                q += 2;
                continue;
            }
            if (len > s->n) return SKIM_OTHER;
            if (left - 2 < len) return SKIM_SHORT;
            q += 2 + len;
            continue;
        case TDS_STEP_PLP: {
            int r = plp_ok(s, &q, end, &multi);
            if (r != SKIM_OK) return r;
            continue;
        }
        default:
            break;
        }
        /* The rest: an optional 1-byte length, then a body checked by type. */
        if (s->op == TDS_STEP_DATETIME && s->n) {
            len = s->n;
        } else {
            if (left < 1) return SKIM_SHORT;
            len = *q++;
            left--;
            if (len == 0) {
                if (s->nonull) return SKIM_OTHER;
                continue;
            }
        }
        switch (s->op) {
        case TDS_STEP_LEN1:
            if (len >= 64 || !(s->lenmask >> len & 1)) return SKIM_OTHER;
            if (left < len) return SKIM_SHORT;
            break;
        case TDS_STEP_DATE:
            if (len != 3) return SKIM_OTHER;
            if (left < 3) return SKIM_SHORT;
            if (load_le_n(q, 3) > MAX_DAY) return SKIM_OTHER;
            break;
        case TDS_STEP_TIME:
            if (len != s->n) return SKIM_OTHER;
            if (left < len) return SKIM_SHORT;
            if (!time_ok(s, q)) return SKIM_OTHER;
            break;
        case TDS_STEP_DECIMAL:
            if (len < 2 || len > 17) return SKIM_OTHER;
            if (left < len) return SKIM_SHORT;
            if (!decimal_ok(s, q, len)) return SKIM_OTHER;
            break;
        case TDS_STEP_DATETIME:
            if (len != 4 && len != 8) return SKIM_OTHER;
            if (left < len) return SKIM_SHORT;
            if (len == 4 ? df_load_le16(q + 2) >= 1440 : df_load_le32(q + 4) >= 300u * 86400u) return SKIM_OTHER;
            break;
        default:
            return SKIM_OTHER;
        }
        q += len;
    }
    *next = q;
    return SKIM_OK;
}

size_t df__tds_bulk_rows_skim(const df__tds_bulk_plan *pl, const uint8_t *p, size_t n, size_t max_rows, size_t *used,
                              df__tds_skim_stop *why) {
    size_t rows = 0;
    if (pl->fixed_row) {
        /* Every value is fixed-width and any bytes are valid: only the row tokens need looking at. */
        size_t w = pl->fixed_row, avail = DF_MIN(n / w, max_rows);
        while (rows < avail && p[rows * w] == TDS_TOK_ROW) rows++;
        size_t off = rows * w;
        *used = off;
        if (rows < avail) *why = TDS_SKIM_OTHER;
        else if (rows == max_rows || off == n) *why = TDS_SKIM_END;
        else *why = p[off] == TDS_TOK_ROW ? TDS_SKIM_SHORT : TDS_SKIM_OTHER;
        return rows;
    }
    const uint8_t *q = p, *end = p + n;
    *why = TDS_SKIM_END;
    size_t w = pl->shape_row;
    while (rows < max_rows && q < end) {
        if (w && (size_t)(end - q) >= w) {
            /* The usual row: its length bytes are the declared ones, so its width is known; bodies need no checks. */
            unsigned diff = q[0] ^ TDS_TOK_ROW;
            for (int j = 0; j < pl->nshape; j++) diff |= q[pl->shape_off[j]] ^ pl->shape_len[j];
            if (diff == 0) {
                q += w;
                rows++;
                continue;
            }
        }
        const uint8_t *next = q;
        int r = skim_row(pl, q, end, &next);
        if (r != SKIM_OK) {
            *why = r == SKIM_SHORT ? TDS_SKIM_SHORT : TDS_SKIM_OTHER;
            break;
        }
        q = next;
        rows++;
    }
    *used = (size_t)(q - p);
    return rows;
}

