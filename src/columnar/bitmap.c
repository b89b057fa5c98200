/*
 * LSB-first bitmaps (Arrow validity and boolean buffers).
 */
#include "columnar/columnar.h"

int64_t df_bitmap_count(const uint8_t *bits, int64_t offset, int64_t length) {
    int64_t count = 0, i = offset, end = offset + length;
    while (i < end && (i & 63)) count += df_bit_get(bits, i++);
    for (; i + 64 <= end; i += 64) count += df_popcount64(df_load_le64(bits + (i >> 3)));
    while (i < end) count += df_bit_get(bits, i++);
    return count;
}

void df_bitmap_fill(uint8_t *bits, int64_t offset, int64_t length, bool value) {
    int64_t i = offset, end = offset + length;
    while (i < end && (i & 7)) df_bit_put(bits, i++, value);
    int64_t whole = (end - i) >> 3;
    if (whole > 0) {
        memset(bits + (i >> 3), value ? 0xff : 0, (size_t)whole);
        i += whole << 3;
    }
    while (i < end) df_bit_put(bits, i++, value);
}

void df_bitmap_copy(uint8_t *dst, int64_t dst_offset, const uint8_t *src, int64_t src_offset, int64_t length) {
    if (((dst_offset | src_offset) & 7) == 0) {
        int64_t whole = length >> 3;
        memcpy(dst + (dst_offset >> 3), src + (src_offset >> 3), (size_t)whole);
        for (int64_t i = whole << 3; i < length; i++)
            df_bit_put(dst, dst_offset + i, df_bit_get(src, src_offset + i));
        return;
    }
    for (int64_t i = 0; i < length; i++) df_bit_put(dst, dst_offset + i, df_bit_get(src, src_offset + i));
}
