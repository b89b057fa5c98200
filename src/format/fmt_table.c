/*
 * Preview tables: the text grid and the HTML view.
 *
 * Text grid (Arrow's pretty printer layout):
 *
 *   +----+-------+
 *   | id | name  |
 *   +----+-------+
 *   | 1  | a     |
 *   +----+-------+
 *
 * Every cell is rendered once into one buffer (nulls blank); a cell whose
 * text holds '\n' spans several lines of its row.  Column width = the
 * widest line of the header or any cell, in terminal columns.  A result
 * without rows prints "++\n++", as the reference does.
 *
 * HTML: a self-contained <div class="deltafunnel-preview"> with its style,
 * header cells showing the name and the Arrow type, numeric columns marked
 * "df-num", nulls as "null", everything escaped.
 */
#include "format/format_int.h"

/* Rendered cells of the shown rows, row-major, plus the header names. */
typedef struct cell_grid {
    df_buf text;            /* all cell texts back to back */
    size_t *start;          /* per cell: offset in text */
    size_t *len;            /* per cell: length */
    int64_t rows;           /* shown rows */
    int32_t cols;           /* columns */
} cell_grid;

static int64_t shown_rows(const df_fmt_input *in) {
    int64_t total = 0;
    for (int64_t b = 0; b < in->nbatches; b++) total += in->batches[b]->nrows;
    return in->max_rows >= 0 && in->max_rows < total ? in->max_rows : total;
}

static void grid_free(cell_grid *g) {
    df_buf_free(&g->text);
    df_free(g->start);
    df_free(g->len);
}

/* Renders every shown cell with the given null text. */
static df_errkind grid_build(const df_fmt_input *in, const char *null_text, cell_grid *g, df_error *err) {
    memset(g, 0, sizeof *g);
    df_buf_init(&g->text, 0);
    g->rows = shown_rows(in);
    g->cols = in->schema->nfields;
    size_t ncells;
    if (df_mul_overflow_size((size_t)g->rows, (size_t)g->cols, &ncells))
        return df_error_set(err, DF_ERR_LIMIT_EXCEEDED, "preview is too large");
    g->start = df_malloc(sizeof(size_t) * (ncells ? ncells : 1));
    g->len = df_malloc(sizeof(size_t) * (ncells ? ncells : 1));
    if (!g->start || !g->len) return DF_OOM(err);
    df_fmt_ctx ctx;
    df__fmt_ctx_init(&ctx, null_text);
    df_errkind k = DF_OK;
    size_t cell = 0;
    for (int64_t b = 0; b < in->nbatches && cell < ncells && k == DF_OK; b++) {
        const df_batch *batch = in->batches[b];
        for (int64_t r = 0; r < batch->nrows && cell < ncells && k == DF_OK; r++) {
            for (int32_t c = 0; c < g->cols && k == DF_OK; c++, cell++) {
                g->start[cell] = g->text.len;
                k = df__fmt_value(&g->text, &ctx, batch->cols[c], r, err);
                g->len[cell] = g->text.len - g->start[cell];
            }
        }
    }
    df__fmt_ctx_clear(&ctx);
    return k;
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */

/* Calls fn for each '\n'-separated line of s[0..n). */
static size_t line_count(const char *s, size_t n) {
    size_t lines = 1;
    for (size_t i = 0; i < n; i++) lines += s[i] == '\n';
    return lines;
}

/* Returns line `which` of s[0..n) as [*ls, *ls + *ll); empty past the end. */
static void nth_line(const char *s, size_t n, size_t which, const char **ls, size_t *ll) {
    size_t i = 0, line = 0;
    while (line < which && i < n) {
        if (s[i++] == '\n') line++;
    }
    if (line < which) {
        *ls = s + n;
        *ll = 0;
        return;
    }
    size_t j = i;
    while (j < n && s[j] != '\n') j++;
    *ls = s + i;
    *ll = j - i;
}

static size_t max_line_width(const char *s, size_t n) {
    size_t best = 0, start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '\n') {
            size_t w = df__fmt_text_width(s + start, i - start);
            if (w > best) best = w;
            start = i + 1;
        }
    }
    return best;
}

static df_errkind write_border(df_buf *out, const size_t *width, int32_t cols, df_error *err) {
    DF_TRY(df_buf_append_char(out, '+', err));
    for (int32_t c = 0; c < cols; c++) {
        DF_TRY(df_buf_reserve(out, width[c] + 3, err));
        memset(out->data + out->len, '-', width[c] + 2);
        out->len += width[c] + 2;
        out->data[out->len++] = '+';
        out->data[out->len] = '\0';
    }
    return DF_OK;
}

static df_errkind write_padded(df_buf *out, const char *s, size_t n, size_t width, df_error *err) {
    size_t w = df__fmt_text_width(s, n);
    DF_TRY(df_buf_append_char(out, ' ', err));
    DF_TRY(df_buf_append(out, s, n, err));
    size_t pad = width > w ? width - w : 0;
    DF_TRY(df_buf_reserve(out, pad + 2, err));
    memset(out->data + out->len, ' ', pad + 1);
    out->len += pad + 1;
    out->data[out->len++] = '|';
    out->data[out->len] = '\0';
    return DF_OK;
}

/* Writes one logical row (possibly several lines) of cells given as (ptr, len) pairs. */
static df_errkind write_row(df_buf *out, const char *const *cell, const size_t *len, const size_t *width,
                            int32_t cols, df_error *err) {
    size_t lines = 1;
    for (int32_t c = 0; c < cols; c++) lines = DF_MAX(lines, line_count(cell[c], len[c]));
    for (size_t l = 0; l < lines; l++) {
        DF_TRY(df_buf_append(out, "\n|", 2, err));
        for (int32_t c = 0; c < cols; c++) {
            const char *ls;
            size_t ll;
            nth_line(cell[c], len[c], l, &ls, &ll);
            DF_TRY(write_padded(out, ls, ll, width[c], err));
        }
    }
    return DF_OK;
}

static df_errkind text_from_grid(const df_fmt_input *in, const cell_grid *g, df_buf *out, df_error *err) {
    int32_t cols = g->cols;
    size_t *width = df_calloc((size_t)cols + 1, sizeof(size_t));
    const char **cell = df_malloc(sizeof(char *) * ((size_t)cols + 1));
    size_t *len = df_malloc(sizeof(size_t) * ((size_t)cols + 1));
    df_errkind k = DF_OK;
    if (!width || !cell || !len) {
        k = DF_OOM(err);
        goto done;
    }
    for (int32_t c = 0; c < cols; c++) {
        const char *name = in->schema->fields[c].name;
        width[c] = max_line_width(name, strlen(name));
    }
    for (int64_t r = 0; r < g->rows; r++)
        for (int32_t c = 0; c < cols; c++) {
            size_t i = (size_t)r * (size_t)cols + (size_t)c;
            width[c] = DF_MAX(width[c], max_line_width(g->text.data + g->start[i], g->len[i]));
        }
    if ((k = write_border(out, width, cols, err)) != DF_OK) goto done;
    for (int32_t c = 0; c < cols; c++) {
        cell[c] = in->schema->fields[c].name;
        len[c] = strlen(cell[c]);
    }
    if ((k = write_row(out, cell, len, width, cols, err)) != DF_OK) goto done;
    if ((k = df_buf_append_char(out, '\n', err)) != DF_OK) goto done;
    if ((k = write_border(out, width, cols, err)) != DF_OK) goto done;
    for (int64_t r = 0; r < g->rows && k == DF_OK; r++) {
        for (int32_t c = 0; c < cols; c++) {
            size_t i = (size_t)r * (size_t)cols + (size_t)c;
            cell[c] = g->text.data + g->start[i];
            len[c] = g->len[i];
        }
        k = write_row(out, cell, len, width, cols, err);
    }
    if (k == DF_OK && (k = df_buf_append_char(out, '\n', err)) == DF_OK) k = write_border(out, width, cols, err);
done:
    df_free(width);
    df_free(cell);
    df_free(len);
    return k;
}

df_errkind df__fmt_text_table(const df_fmt_input *in, char **out, size_t *len, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    if (shown_rows(in) == 0 || in->schema->nfields == 0) {
        DF_TRY(df_buf_append_str(&b, "++\n++", err));
        return df_buf_take_text(&b, out, len, err);
    }
    cell_grid g;
    df_errkind k = grid_build(in, "", &g, err);
    if (k == DF_OK) {
        /* Cells are ready; give an empty grid text a valid pointer for the row loop. */
        if (!g.text.data) k = df_buf_reserve(&g.text, 1, err);
    }
    if (k == DF_OK) k = text_from_grid(in, &g, &b, err);
    grid_free(&g);
    if (k != DF_OK) {
        df_buf_free(&b);
        return k;
    }
    return df_buf_take_text(&b, out, len, err);
}

/* ------------------------------------------------------------------------ */
/* HTML                                                                      */

static const char html_style[] =
    "<style>.deltafunnel-preview{font-family:ui-sans-serif,system-ui,-apple-system,BlinkMacSystemFont,"
    "\"Segoe UI\",sans-serif;font-size:12px;line-height:1.35;color:var(--vscode-editor-foreground,#111827)}"
    ".deltafunnel-preview .df-wrap{display:inline-block;max-width:100%;overflow:auto;border:1px solid "
    "rgba(127,127,127,.35);border-radius:6px;background:var(--vscode-editor-background,#fff)}"
    ".deltafunnel-preview table{border-collapse:separate;border-spacing:0}"
    ".deltafunnel-preview th,.deltafunnel-preview td{padding:6px 10px;border-bottom:1px solid "
    "rgba(127,127,127,.18);white-space:nowrap;text-align:left;vertical-align:top}"
    ".deltafunnel-preview th{position:sticky;top:0;background:var(--vscode-editor-background,#fff);"
    "font-weight:600;border-bottom:1px solid rgba(127,127,127,.35)}"
    ".deltafunnel-preview tbody tr:nth-child(even){background:rgba(127,127,127,.05)}"
    ".deltafunnel-preview .df-type,.deltafunnel-preview .df-footer{color:var(--vscode-descriptionForeground,"
    "#64748b);font-size:11px}"
    ".deltafunnel-preview .df-num{text-align:right;font-variant-numeric:tabular-nums}"
    ".deltafunnel-preview .df-footer{margin-top:6px}"
    "@media (prefers-color-scheme:dark){.deltafunnel-preview{color:var(--vscode-editor-foreground,#e5e7eb)}"
    ".deltafunnel-preview .df-wrap,.deltafunnel-preview th{background:var(--vscode-editor-background,#0b1220)}}"
    "</style>";

static bool numeric_type(const df_type *t) {
    return df_type_is_integer(t) || df_type_is_floating(t) || df_type_is_decimal(t);
}

static df_errkind html_header(df_buf *out, const df_schema *s, df_error *err) {
    df_buf type;
    df_buf_init(&type, 0);
    df_errkind k = df_buf_append_str(out, "<thead><tr>", err);
    for (int32_t c = 0; c < s->nfields && k == DF_OK; c++) {
        const df_field *f = &s->fields[c];
        df_buf_reset(&type);
        k = df_type_display(f->type, &type, err);
        if (k == DF_OK) k = df_buf_append_str(out, numeric_type(f->type) ? "<th class=\"df-num\"><span>" : "<th><span>", err);
        if (k == DF_OK) k = df__fmt_html_escape(out, f->name, strlen(f->name), err);
        if (k == DF_OK) k = df_buf_append_str(out, "</span><br><span class=\"df-type\">", err);
        if (k == DF_OK) k = df__fmt_html_escape(out, type.data ? type.data : "", type.len, err);
        if (k == DF_OK) k = df_buf_append_str(out, "</span></th>", err);
    }
    df_buf_free(&type);
    if (k == DF_OK) k = df_buf_append_str(out, "</tr></thead>", err);
    return k;
}

static df_errkind html_body(df_buf *out, const df_fmt_input *in, const cell_grid *g, df_error *err) {
    DF_TRY(df_buf_append_str(out, "<tbody>", err));
    for (int64_t r = 0; r < g->rows; r++) {
        DF_TRY(df_buf_append_str(out, "<tr>", err));
        for (int32_t c = 0; c < g->cols; c++) {
            size_t i = (size_t)r * (size_t)g->cols + (size_t)c;
            bool num = numeric_type(in->schema->fields[c].type);
            DF_TRY(df_buf_append_str(out, num ? "<td class=\"df-num\">" : "<td>", err));
            DF_TRY(df__fmt_html_escape(out, g->text.data + g->start[i], g->len[i], err));
            DF_TRY(df_buf_append_str(out, "</td>", err));
        }
        DF_TRY(df_buf_append_str(out, "</tr>", err));
    }
    return df_buf_append_str(out, "</tbody>", err);
}

static df_errkind html_build(const df_fmt_input *in, df_buf *out, df_error *err) {
    DF_TRY(df_buf_append_str(out, "<div class=\"deltafunnel-preview\">", err));
    DF_TRY(df_buf_append_str(out, html_style, err));
    DF_TRY(df_buf_append_str(out, "<div class=\"df-wrap\">", err));
    int64_t rows = 0;
    if (in->schema->nfields == 0) {
        DF_TRY(df_buf_append_str(out, "(No columns)", err));
    } else {
        cell_grid g;
        df_errkind k = grid_build(in, "null", &g, err);
        if (k == DF_OK && !g.text.data) k = df_buf_reserve(&g.text, 1, err);
        if (k == DF_OK) k = df_buf_append_str(out, "<table>", err);
        if (k == DF_OK) k = html_header(out, in->schema, err);
        if (k == DF_OK) k = html_body(out, in, &g, err);
        if (k == DF_OK) k = df_buf_append_str(out, "</table>", err);
        rows = g.rows;
        grid_free(&g);
        DF_TRY(k);
    }
    return df_buf_printf(out, err,
                         "</div><div class=\"df-footer\">Showing <b>%lld</b> rows, <b>%d</b> columns.</div></div>",
                         (long long)rows, (int)in->schema->nfields);
}

df_errkind df__fmt_html_table(const df_fmt_input *in, char **out, size_t *len, df_error *err) {
    *out = NULL;
    df_buf b;
    df_buf_init(&b, 0);
    df_errkind k = html_build(in, &b, err);
    if (k != DF_OK) {
        df_buf_free(&b);
        return k;
    }
    return df_buf_take_text(&b, out, len, err);
}
df_errkind df__fmt_html_escape(df_buf *out, const char *s, size_t n, df_error *err) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        const char *rep = NULL;
        switch (s[i]) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        default: continue;
        }
        if (i > run) DF_TRY(df_buf_append(out, s + run, i - run, err));
        DF_TRY(df_buf_append_str(out, rep, err));
        run = i + 1;
    }
    if (n > run) DF_TRY(df_buf_append(out, s + run, n - run, err));
    return DF_OK;
}

