#!/usr/bin/env bash
# make bench: kv0 and lancedb side by side on the same data, in one run.
# Prints a markdown table; docs/benchmarks.md records the results.
#
#   KV0_BENCH_DIR         where the lancedb-written data lives (default out/bench)
#   KV0_BENCH_ROWS        rows of the metrics table (default 10,000,000)
#   KV0_BENCH_WRITE_RUNS  write runs of each side, the best counts (default 1)
#   KV0_BENCH_LANCEDB12   a folder whose node_modules holds lancedb 0.39
#                         (lance 12), for the 2.2 write and scan (default
#                         tests/interop/lance12; without it those rows are left out)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${KV0_BENCH_DIR:-out/bench}
rows=${KV0_BENCH_ROWS:-10000000}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -d "$dir/metrics.lance" ] && [ "$(cat "$dir/rows" 2>/dev/null)" != "$rows" ]; then rm -rf "$dir"/*; fi
echo "$rows" > "$dir/rows"

writeruns=${KV0_BENCH_WRITE_RUNS:-1}
export KV0_BENCH_ROWS=$rows KV0_BENCH_WRITE_RUNS=$writeruns

echo "== lancedb 0.31 (lance 8, format 2.1): write and scan $rows rows" >&2
lance_json=$(cd tests/interop && node bench.mjs "$dir" "$rows")
echo "$lance_json" >&2

l12=${KV0_BENCH_LANCEDB12:-tests/interop/lance12}
lance12_json=
if [ -d "$l12/node_modules/@lancedb/lancedb" ]; then
	l12=$(cd "$l12" && pwd)
	echo "== lancedb 0.39 (lance 12, format 2.2): write and scan $rows rows" >&2
	mkdir -p "$dir/lance12"
	lance12_json=$(cd tests/interop && KV0_BENCH_LANCEDB="$l12" node bench.mjs "$dir/lance12" "$rows")
	echo "$lance12_json" >&2
else
	echo "== no lancedb 0.39 in $l12: the 2.2 write and scan have no lance 12 rows" >&2
fi

# The Go writer is given the same rows: TestMetricsMatchLancedb checks the
# generator against the table lancedb wrote before the write is timed.
echo "== kv0 (Go): write $rows rows, formats 2.1 and 2.2" >&2
go_write=$(KV0_BENCH_DIR="$dir" go test -run='^TestMetricsMatchLancedb$' -bench='^BenchmarkWriteMetrics$' \
	-benchtime="${writeruns}x" -count=1 -v ./tests/bench/ | grep -v '^=== ')
echo "$go_write" >&2

# One process a table, so that each peak RSS is its own.
echo "== kv0 (Go): scan the tables" >&2
tables=lance8
if [ -n "$lance12_json" ]; then tables="lance12 lance8"; fi
go_out=$(for t in $tables; do
	KV0_BENCH_DIR="$dir" go test -run='^$' -bench="^BenchmarkScanMetrics\$/^$t\$" -benchtime=3x -count=1 ./tests/bench/
done)
echo "$go_out" >&2

echo "== kv0 (Go): commits of one-row appends on local disk" >&2
go_commit=$(go test -run='^$' -bench='^BenchmarkCommitAppend$' -benchtime=3s -count=1 ./core/lance/)
echo "$go_commit" >&2

field() { echo "$1" | sed -n "s/.*\"$2\":\([0-9.e+]*\).*/\1/p"; }
metric() { echo "${3:-$go_out}" | awk -v m="$2" -v b="$1" '$1 ~ b { for (i = 2; i < NF; i++) if ($(i+1) == m) print $i }'; }
toarrow=$(field "$lance_json" toarrow_rows_per_s)
toarrowcpu=$(field "$lance_json" toarrow_rows_per_cpu_s)
native=$(field "$lance_json" native_rows_per_s)
nativecpu=$(field "$lance_json" native_rows_per_cpu_s)
toarrow12=$(field "$lance12_json" toarrow_rows_per_s)
toarrowcpu12=$(field "$lance12_json" toarrow_rows_per_cpu_s)
native12=$(field "$lance12_json" native_rows_per_s)
nativecpu12=$(field "$lance12_json" native_rows_per_cpu_s)
goscan=$(metric 'BenchmarkScanMetrics/lance8-' rows/s)
goscancpu=$(metric 'BenchmarkScanMetrics/lance8-' rows/cpu-s)
gorss=$(metric 'BenchmarkScanMetrics/lance8-' peak-RSS-MiB)
goscan12=$(metric 'BenchmarkScanMetrics/lance12-' rows/s)
goscancpu12=$(metric 'BenchmarkScanMetrics/lance12-' rows/cpu-s)
gorss12=$(metric 'BenchmarkScanMetrics/lance12-' peak-RSS-MiB)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "n/a" }'; }
ratio3() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.4f×", a / b; else print "n/a" }'; }
mrows() { awk -v a="$1" 'BEGIN { printf "%.1fM", a / 1e6 }'; }
num() { awk -v a="$1" -v d="${2:-1}" 'BEGIN { printf "%.*f", d, a }'; }
mb() { awk -v a="$1" 'BEGIN { printf "%.1f MB", a / 1e6 }'; }
perrow() { awk -v a="$1" -v r="$rows" 'BEGIN { printf "%.2f", a / r }'; }

lwrite=$(field "$lance_json" write_rows_per_s)
lwritemb=$(field "$lance_json" write_mb_per_s)
lbytes=$(field "$lance_json" write_bytes_on_disk)
gwrite=$(metric 'BenchmarkWriteMetrics/format=2[.]1' rows/s "$go_write")
gwritemb=$(metric 'BenchmarkWriteMetrics/format=2[.]1' MB/s "$go_write")
gwritecpu=$(metric 'BenchmarkWriteMetrics/format=2[.]1' rows/cpu-s "$go_write")
gwritecpu22=$(metric 'BenchmarkWriteMetrics/format=2[.]2' rows/cpu-s "$go_write")
lwritecpu=$(field "$lance_json" write_rows_per_cpu_s)
gbytes=$(metric 'BenchmarkWriteMetrics/format=2[.]1' bytes-on-disk "$go_write")
gwrite22=$(metric 'BenchmarkWriteMetrics/format=2[.]2' rows/s "$go_write")
gwritemb22=$(metric 'BenchmarkWriteMetrics/format=2[.]2' MB/s "$go_write")
gbytes22=$(metric 'BenchmarkWriteMetrics/format=2[.]2' bytes-on-disk "$go_write")
commits=$(metric BenchmarkCommitAppend commits/s "$go_commit")

cat <<TABLE

Write of the metrics table ($rows rows in 1M-row batches, 32 bytes of input a row, local disk, best of $writeruns), format 2.2

| writer | rows/s | rows/CPU-s | MB/s of input | bytes on disk | bytes/row | rows/s ÷ lancedb | rows/CPU-s ÷ lancedb | bytes ÷ lancedb |
|---|---|---|---|---|---|---|---|---|
TABLE
if [ -n "$lance12_json" ]; then
	l12write=$(field "$lance12_json" write_rows_per_s)
	l12writemb=$(field "$lance12_json" write_mb_per_s)
	l12writecpu=$(field "$lance12_json" write_rows_per_cpu_s)
	l12bytes=$(field "$lance12_json" write_bytes_on_disk)
	cat <<TABLE
| kv0 Go writer (\`lance.Create\`, fsstore) | $(mrows "$gwrite22") | $(mrows "$gwritecpu22") | $(num "$gwritemb22") | $(mb "$gbytes22") | $(perrow "$gbytes22") | $(ratio "$gwrite22" "$l12write") | $(ratio "$gwritecpu22" "$l12writecpu") | $(ratio3 "$gbytes22" "$l12bytes") |
| lancedb 0.39 (lance 12) \`createTable\` + \`add\` | $(mrows "$l12write") | $(mrows "$l12writecpu") | $(num "$l12writemb") | $(mb "$l12bytes") | $(perrow "$l12bytes") | 1.00× | 1.00× | 1.00× |
TABLE
else
	cat <<TABLE
| kv0 Go writer (\`lance.Create\`, fsstore) | $(mrows "$gwrite22") | $(mrows "$gwritecpu22") | $(num "$gwritemb22") | $(mb "$gbytes22") | $(perrow "$gbytes22") | n/a | n/a | n/a |
TABLE
fi
cat <<TABLE

The same in format 2.1

| writer | rows/s | rows/CPU-s | MB/s of input | bytes on disk | bytes/row | rows/s ÷ lancedb | rows/CPU-s ÷ lancedb | bytes ÷ lancedb |
|---|---|---|---|---|---|---|---|---|
| kv0 Go writer (\`lance.Create\`, fsstore) | $(mrows "$gwrite") | $(mrows "$gwritecpu") | $(num "$gwritemb") | $(mb "$gbytes") | $(perrow "$gbytes") | $(ratio "$gwrite" "$lwrite") | $(ratio "$gwritecpu" "$lwritecpu") | $(ratio3 "$gbytes" "$lbytes") |
| lancedb 0.31 (lance 8) \`createTable\` + \`add\` | $(mrows "$lwrite") | $(mrows "$lwritecpu") | $(num "$lwritemb") | $(mb "$lbytes") | $(perrow "$lbytes") | 1.00× | 1.00× | 1.00× |

Commits of one-row appends on local disk (fsync; kv0, one writer): $(num "$commits" 0) commits/s

Full scan of the metrics table ($rows rows, 4 columns) as each lance writes it by default: rows a second of
wall time, and rows a CPU-second of the process (every thread)

| table | reader | rows/s | rows/CPU-s | kv0 ÷ this | kv0 ÷ this, CPU |
|---|---|---|---|---|---|
| lance 12, format 2.2 | kv0 Go reader → Arrow batches | $(mrows "$goscan12") | $(mrows "$goscancpu12") | 1.00× | 1.00× |
| | lance 12 native scan (filter matching no row) | $(mrows "$native12") | $(mrows "$nativecpu12") | $(ratio "$goscan12" "$native12") | $(ratio "$goscancpu12" "$nativecpu12") |
| | lancedb 0.39 \`query().toArrow()\` | $(mrows "$toarrow12") | $(mrows "$toarrowcpu12") | $(ratio "$goscan12" "$toarrow12") | $(ratio "$goscancpu12" "$toarrowcpu12") |
| lance 8, format 2.1 | kv0 Go reader → Arrow batches | $(mrows "$goscan") | $(mrows "$goscancpu") | 1.00× | 1.00× |
| | lance 8 native scan (filter matching no row) | $(mrows "$native") | $(mrows "$nativecpu") | $(ratio "$goscan" "$native") | $(ratio "$goscancpu" "$nativecpu") |
| | lancedb 0.31 \`query().toArrow()\` | $(mrows "$toarrow") | $(mrows "$toarrowcpu") | $(ratio "$goscan" "$toarrow") | $(ratio "$goscancpu" "$toarrowcpu") |

kv0 peak RSS during the scans: ${gorss12} MiB (2.2), ${gorss} MiB (2.1)
TABLE
