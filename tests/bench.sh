#!/usr/bin/env bash
# make bench: kv0 and lancedb side by side on the same data, in one run.
# Prints a markdown table; docs/benchmarks.md records the results.
#
#   KV0_BENCH_DIR   where the lancedb-written data lives (default out/bench)
#   KV0_BENCH_ROWS  rows of the metrics table (default 10,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KV0_BENCH_DIR:-out/bench}
rows=${KV0_BENCH_ROWS:-10000000}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -d "$dir/metrics.lance" ] && [ "$(cat "$dir/rows" 2>/dev/null)" != "$rows" ]; then rm -rf "$dir"/*; fi
echo "$rows" > "$dir/rows"

echo "== lancedb 0.31 (node): write and scan $rows rows" >&2
lance_json=$(cd tests/interop && node bench.mjs "$dir" "$rows")
echo "$lance_json" >&2
[ -f "$dir/lancedb-write.json" ] || echo "$lance_json" > "$dir/lancedb-write.json"

echo "== kv0 (Go): scan" >&2
go_out=$(KV0_BENCH_DIR="$dir" go test -run='^$' -bench='^BenchmarkScanMetrics$' -benchtime=3x -count=1 ./tests/bench/)
echo "$go_out" >&2

field() { echo "$1" | sed -n "s/.*\"$2\":\([0-9.e+]*\).*/\1/p"; }
metric() { echo "$go_out" | awk -v m="$2" -v b="$1" '$1 ~ b { for (i = 2; i < NF; i++) if ($(i+1) == m) print $i }'; }
toarrow=$(field "$lance_json" toarrow_rows_per_s)
native=$(field "$lance_json" native_rows_per_s)
goscan=$(metric BenchmarkScanMetrics rows/s)
gorss=$(metric BenchmarkScanMetrics peak-RSS-MiB)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "n/a" }'; }
mrows() { awk -v a="$1" 'BEGIN { printf "%.1fM", a / 1e6 }'; }

cat <<TABLE

Full scan of the metrics table ($rows rows, 4 columns, written by lancedb with its defaults)

| reader | rows/s | kv0 ÷ this |
|---|---|---|
| kv0 Go reader → Arrow batches | $(mrows "$goscan") | 1.00× |
| lancedb \`query().toArrow()\` | $(mrows "$toarrow") | $(ratio "$goscan" "$toarrow") |
| lance native scan (filter matching no row) | $(mrows "$native") | $(ratio "$goscan" "$native") |

kv0 peak RSS during the scan: ${gorss} MiB
TABLE
