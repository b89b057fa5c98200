#!/bin/sh
# A real operation-scoped ranked profile of a full-scan preview: builds
# bench/report/preview_profile.c against an optimised build, previews
# TABLE_DIR (default: a 2,000,000-row datagen table made on the fly) under
# a 1000 Hz capture and prints the ranked operation roots.  The HTML report
# and .dfprofile are left in the output directory.
#
#   bench/report/preview.sh [TABLE_DIR] [OUT_DIR] [BUILD_DIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
table=${1:-}
out=${2:-$(mktemp -d "${TMPDIR:-/tmp}/df-preview-profile.XXXXXX")}
build=${3:-$root/build-bench-report}
if [ ! -d "$build" ]; then
    meson setup "$build" "$root" -Dbuildtype=release -Dpython=false -Dtests=true >/dev/null
fi
ninja -C "$build" libdeltafunnel_core.a programs/deltafunnel >/dev/null
if [ -z "$table" ]; then
    table="$out/table"
    [ -d "$table" ] || "$build/programs/deltafunnel" datagen --output "$table" --rows 2000000 --files 4 >/dev/null
fi
cc -O2 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer -I"$root/include" -I"$root/src" \
    "$here/preview_profile.c" "$build/libdeltafunnel_core.a" \
    $(pkg-config --libs zlib libzstd liblz4 libbrotlidec libbrotlienc) $(pkg-config --libs libdw 2>/dev/null || true) \
    -lsnappy -lrt -lpthread -lm -o "$out/preview_profile"
rm -f "$out/profile.pftrace"
"$out/preview_profile" "$table" "$out/profile" "SELECT * FROM t WHERE id % 1000003 = 7" 1000
echo "report: $out/profile.profile.html  artifact: $out/profile.dfprofile"
