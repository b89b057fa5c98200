#!/bin/sh
# Builds and runs the span overhead benchmark against an optimised build.
#   bench/diag/run.sh [BUILD_DIR]   (default: build-bench, created with -Dbuildtype=release)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-bench}
if [ ! -d "$build" ]; then
    meson setup "$build" "$root" -Dbuildtype=release -Dpython=false -Dtests=false >/dev/null
fi
ninja -C "$build" src/diag/libdf_diag.a src/common/libdf_common.a >/dev/null
cc -O2 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer -I"$root/include" -I"$root/src" \
    "$here/bench_spans.c" "$build/src/diag/libdf_diag.a" "$build/src/common/libdf_common.a" \
    -lpthread -lm $(pkg-config --libs libdw 2>/dev/null || true) -o "$build/bench_spans"
"$build/bench_spans"
