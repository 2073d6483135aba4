#!/usr/bin/env bash
# Key-value benchmarks: kv0 and Pebble v2.1.7 side by side on local disk, in
# one run, same keys (16 B) and values (100 B). Prints a markdown table.
#
#   bash tests/kvbench/run.sh                        # 1M keys
#   KV0_BENCH_KEYS=10000000 bash tests/kvbench/run.sh  # 10M keys
#
#   KV0_BENCH_KEYS  number of keys (default 1,000,000)
#   KV0_BENCH_DIR   where the databases live (default: a temporary folder)
set -euo pipefail
cd "$(dirname "$0")/../.."
keys=${KV0_BENCH_KEYS:-1000000}
echo "== go test -bench BenchmarkKV ($keys keys)" >&2
out=$(KV0_BENCH_KEYS=$keys go test -run '^$' -bench '^BenchmarkKV$' -benchtime 1x -count 1 -timeout 6h ./tests/kvbench/ 2>&1 | tee /dev/stderr)

# metric ENGINE OP UNIT: the value reported next to UNIT.
metric() {
	echo "$out" | awk -v e="engine=$1/op=$2-" -v u="$3" 'index($1, e) { for (i = 2; i < NF; i++) if ($(i+1) == u) print $i }' | head -1
}
fmt_ops() { awk -v a="$1" 'BEGIN { if (a == "") print "n/a"; else if (a >= 1e6) printf "%.2fM", a / 1e6; else printf "%.0fk", a / 1e3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f×", a / b; else print "n/a" }'; }

row_ops() { # OP LABEL TARGET
	local k p
	k=$(metric kv0 "$1" ops/s); p=$(metric pebble "$1" ops/s)
	echo "| $2 | $(fmt_ops "$k") ops/s | $(fmt_ops "$p") ops/s | $(ratio "$k" "$p") | $3 |"
}
kr=$(metric kv0 reopen s/reopen); pr=$(metric pebble reopen s/reopen)
km=$(metric kv0 memory x-raw); pm=$(metric pebble memory x-raw)
kmb=$(metric kv0 memory peak-RSS-MiB); pmb=$(metric pebble memory peak-RSS-MiB)
raw=$(awk -v n="$keys" 'BEGIN { printf "%.0f", n * 116 / 1048576 }')

cat <<TABLE

kv0 vs Pebble v2.1.7, $keys keys (16 B keys, 100 B values, $raw MiB raw), local disk, $(nproc) cores

| workload | kv0 | Pebble | kv0 ÷ Pebble | target |
|---|---|---|---|---|
$(row_ops put-batch "random puts, WAL batch (fsync ~100 ms)" "≥ 1×")
$(row_ops put-nosync "random puts, WAL no-sync" "≥ 1×")
$(row_ops get "random gets" "≥ 2×")
$(row_ops scan "forward scan" "")
| reopen (kv0 with snapshot) | $(awk -v a="$kr" 'BEGIN{printf "%.3f s", a}') | $(awk -v a="$pr" 'BEGIN{printf "%.3f s", a}') | $(ratio "$pr" "$kr") (speed) | ≤ 2 s at 10M keys |
| peak RSS ÷ raw key+value bytes | ${km}× (${kmb} MiB) | ${pm}× (${pmb} MiB) | | ≤ 2× |

Command: \`KV0_BENCH_KEYS=$keys bash tests/kvbench/run.sh\`. Pebble runs with 10-bit bloom filters and a block
cache of 2× the raw data; its batch mode is NoSync writes plus a WAL sync every 100 ms. Peak RSS is VmHWM of a child
process that holds only that engine's code (tests/kvbench/memchild), loads every key (no-sync WAL), reads each
back and closes the database.
TABLE
