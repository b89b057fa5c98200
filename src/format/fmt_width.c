/*
 * Display widths of text in terminal columns, as the text grid measures
 * cells: combining marks and format characters take no column, control
 * characters one (as the reference's grid counts them),
 * East Asian wide and fullwidth characters (most emoji among them) take
 * two, everything else one.  An emoji skin-tone modifier that follows a
 * wide character joins it and adds nothing.
 */
#include "format/format_int.h"

#include "format/fmt_width_table.h"

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return true;
    }
    return false;
}

int df__fmt_char_width(uint32_t cp) {
    if (cp >= 0x20 && cp < 0x7F) return 1;
    if (in_ranges(zero_width_ranges, DF_ARRAY_LEN(zero_width_ranges), cp)) return 0;
    if (in_ranges(wide_ranges, DF_ARRAY_LEN(wide_ranges), cp)) return 2;
    return 1;
}

size_t df__fmt_text_width(const char *s, size_t n) {
    const uint8_t *p = (const uint8_t *)s;
    size_t width = 0, i = 0;
    int prev = 0;
    while (i < n) {
        if (p[i] >= 0x20 && p[i] < 0x7F) {
            /* ASCII fast path. */
            width++;
            prev = 1;
            i++;
            continue;
        }
        uint32_t cp;
        i += df_utf8_decode(p + i, n - i, &cp);
        int w = df__fmt_char_width(cp);
        if (cp >= 0x1F3FB && cp <= 0x1F3FF && prev == 2) w = 0;
        width += (size_t)w;
        if (w) prev = w;
    }
    return width;
}
