#!/bin/sh
# Capture overhead on a 10M-row full-scan preview: diagnostics off, spans
# only, 100 Hz and 1000 Hz sampling, as ratios of medians against "off"
# from RUNS interleaved runs (default 11), then CPU instructions of the
# same four modes under callgrind on a smaller table (instruction counts do
# not suffer from the timing noise of a shared machine).
#
#   bench/diag/overhead.sh [TABLE_DIR] [RUNS] [BUILD_DIR]
#
# TABLE_DIR defaults to a 10,000,000-row datagen table made once in
# $TMPDIR/df-overhead; BUILD_DIR to build-bench-diag (release, created).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${TMPDIR:-/tmp}/df-overhead
mkdir -p "$work"
table=${1:-$work/t10m}
runs=${2:-11}
build=${3:-$root/build-bench-diag}
if [ ! -d "$build" ]; then
    meson setup "$build" "$root" -Dbuildtype=release -Dpython=false -Dtests=false >/dev/null
fi
ninja -C "$build" libdeltafunnel_core.a programs/deltafunnel >/dev/null
if [ ! -d "$table/_delta_log" ]; then
    "$build/programs/deltafunnel" datagen --output "$table" --rows 10000000 --files 8 >/dev/null
fi
cc -O2 -std=c11 -D_GNU_SOURCE -fno-omit-frame-pointer -I"$root/include" -I"$root/src" \
    "$here/overhead.c" "$build/libdeltafunnel_core.a" \
    $(pkg-config --libs zlib libzstd liblz4 libbrotlidec libbrotlienc) $(pkg-config --libs libdw 2>/dev/null || true) \
    -lsnappy -lrt -lpthread -lm -o "$build/diag_overhead"
echo "== wall time, $runs interleaved runs (10M rows)"
"$build/diag_overhead" "$table" "$runs" | tee "$work/overhead.jsonl" | grep summary
if command -v valgrind >/dev/null 2>&1; then
    small=$work/t1m
    [ -d "$small/_delta_log" ] || "$build/programs/deltafunnel" datagen --output "$small" --rows 1000000 --files 2 >/dev/null
    echo "== CPU instructions under callgrind (1M rows, one preview per mode after a warm-up preview)"
    # Every mode twice: with one and with two measured previews.  For "off" the difference is one
    # preview's cost (setup and the warm-up preview cancel out); for a capture mode, the extra of
    # its difference over off's is the steady cost per preview, and the rest of its one-preview
    # extra is paid once per capture (starting the sampler, loading symbol tables).  Under valgrind
    # a CPU-time timer fires per emulated CPU second, tens of times more often per instruction than
    # natively, so the sampling modes' per-preview figures are upper bounds.
    for spec in off:1 off:2 spans:1 spans:2 100:1 100:2 1000:1 1000:2; do
        m=${spec%:*}; n=${spec#*:}
        out="$work/callgrind.$m.$n.out"
        rm -f "$out"
        valgrind --tool=callgrind --callgrind-out-file="$out" "$build/diag_overhead" "$small" "$n" "$m" >/dev/null 2>&1
        ir=$(sed -n 's/^summary: //p' "$out" | head -1)
        echo "{\"mode\": \"$m\", \"previews\": $n, \"instructions\": ${ir:-0}}"
    done | tee "$work/instructions.jsonl"
    python3 - "$work/instructions.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ir = {(r["mode"], r["previews"]): r["instructions"] for r in rows}
one = ir[("off", 2)] - ir[("off", 1)]
print(f"one preview: {one:,d} instructions")
for m in ("spans", "100", "1000"):
    extra = ir[(m, 1)] - ir[("off", 1)]
    steady = (ir[(m, 2)] - ir[(m, 1)]) - one
    print(f"{m:>6}: {extra:+,d} instructions per preview = {100.0 * extra / one:+.2f}%"
          f" (steady {steady:+,d} per preview = {100.0 * steady / one:+.2f}%, once per capture {extra - steady:+,d})")
PY
fi
