#!/bin/sh
# Report generation benchmark: a synthetic trace with 1,000,000 CPU samples
# and 100,000 spans (10 preview operations x 8 worker lanes x 588 activities
# with a nested scan poll, plus one scan-output wait per activity of lane 1,
# phases, stages and query planning) is turned into the HTML report and the
# .dfprofile artifact by delta-funnel-perfetto, built optimised.
#
#   bench/report/run.sh [BUILD_DIR]   (default: build-bench-report, -Dbuildtype=release)
#
# Prints wall time, peak RSS (GNU time) and output sizes, and fails when a
# bound is exceeded: 2 s, 1 GB peak RSS, 20 MB of HTML.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build-bench-report}
if [ ! -d "$build" ]; then
    meson setup "$build" "$root" -Dbuildtype=release -Dpython=false -Dtests=true >/dev/null
fi
ninja -C "$build" programs/delta-funnel-perfetto/delta-funnel-perfetto tests/unit/report/report_synth_tool >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/df-report-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
OPS=10 ACTIVITIES=588 SAMPLES=1000000 THREADS=8 DEPTH=16 FUNCTIONS=400
"$build/tests/unit/report/report_synth_tool" large "$work/bench.pftrace" $OPS $ACTIVITIES $SAMPLES $THREADS $DEPTH $FUNCTIONS
trace_bytes=$(stat -c %s "$work/bench.pftrace")
/usr/bin/time -f '%e %M' -o "$work/time" \
    "$build/programs/delta-funnel-perfetto/delta-funnel-perfetto" report "$work/bench.pftrace" \
    --output "$work/bench.profile.html" --artifact-output "$work/bench.dfprofile" >/dev/null
read -r secs rss_kb < "$work/time"
html_bytes=$(stat -c %s "$work/bench.profile.html")
art_bytes=$(stat -c %s "$work/bench.dfprofile")
/usr/bin/time -f '%e %M' -o "$work/time2" \
    "$build/programs/delta-funnel-perfetto/delta-funnel-perfetto" inspect "$work/bench.dfprofile" --depth 2 >/dev/null
read -r isecs irss_kb < "$work/time2"
echo "trace: $trace_bytes bytes, $SAMPLES samples, about $((OPS * (THREADS * ACTIVITIES * 2 + ACTIVITIES + 9))) spans"
echo "report: ${secs}s wall, peak RSS $((rss_kb / 1024)) MiB; HTML $html_bytes bytes; artifact $art_bytes bytes"
echo "inspect (artifact): ${isecs}s wall, peak RSS $((irss_kb / 1024)) MiB"
fail=0
awk "BEGIN { exit !($secs > 2.0) }" && { echo "FAIL: report took more than 2 s"; fail=1; }
[ "$rss_kb" -gt 1048576 ] && { echo "FAIL: peak RSS above 1 GB"; fail=1; }
[ "$html_bytes" -gt 20000000 ] && { echo "FAIL: HTML above 20 MB"; fail=1; }
exit $fail
