#!/bin/sh
# Runs the tracking benchmarks (kv0 and MLflow's schema in SQLite side by
# side, one process) and prints a markdown table.
#
#   tests/trackbench/run.sh                 # full shapes: A 100k steps, B 1k steps
#   STEPS_A=20000 STEPS_B=200 tests/trackbench/run.sh   # smaller shapes
#   DIR=/tmp/tb tests/trackbench/run.sh     # keep (and reuse) the fixtures
set -eu
cd "$(dirname "$0")/../.."
STEPS_A=${STEPS_A:-100000}
STEPS_B=${STEPS_B:-1000}
BENCHTIME=${BENCHTIME:-1s}
args="-trackbench.steps-a $STEPS_A -trackbench.steps-b $STEPS_B"
[ -n "${DIR:-}" ] && args="$args -trackbench.dir $DIR"
cmd="go test -v ./tests/trackbench -run '^\$' -bench . -benchtime $BENCHTIME -timeout 3h $args"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
eval "$cmd" | tee "$out" >&2
echo
echo "Command: \`$cmd\` ($(go env GOOS)/$(go env GOARCH), $(nproc 2>/dev/null || echo ?) CPUs, $(date -u +%Y-%m-%d))"
echo
awk '
function val(line,   i, n, f) {
	n = split(line, f, /[ \t]+/)
	for (i = 3; i < n; i++) {
		if (f[i+1] == "points/s") return sprintf("%.2fM points/s", f[i] / 1e6)
		if (f[i+1] == "bytes") return sprintf("%.1f MB", f[i] / 1e6)
	}
	for (i = 3; i < n; i++) if (f[i+1] == "ns/op") {
		if (f[i] >= 1e6) return sprintf("%.2f ms", f[i] / 1e6)
		return sprintf("%.1f µs", f[i] / 1e3)
	}
	return "?"
}
function num(line,   i, n, f) {
	n = split(line, f, /[ \t]+/)
	for (i = 3; i < n; i++) if (f[i+1] == "points/s" || f[i+1] == "bytes") return f[i]
	for (i = 3; i < n; i++) if (f[i+1] == "ns/op") return f[i]
	return 0
}
/^Benchmark.*ns\/op/ {
	name = $1; sub(/-[0-9]+$/, "", name); sub(/^Benchmark/, "", name)
	store = name; sub(/.*\//, "", store); op = name; sub(/\/[^\/]*$/, "", op)
	if (!(op in seen)) { seen[op] = 1; order[++k] = op }
	v[op, store] = val($0); x[op, store] = num($0)
}
END {
	print "| benchmark | kv0 | SQLite (MLflow schema) | kv0 vs SQLite |"
	print "|---|---|---|---|"
	for (i = 1; i <= k; i++) {
		op = order[i]
		a = ((op, "kv0") in v) ? v[op, "kv0"] : "–"
		b = ((op, "sqlite") in v) ? v[op, "sqlite"] : "–"
		r = "–"
		if (((op, "kv0") in x) && ((op, "sqlite") in x) && x[op, "kv0"] > 0 && x[op, "sqlite"] > 0) {
			if (index(a, "points/s")) r = sprintf("%.1f× the rate", x[op, "kv0"] / x[op, "sqlite"])
			else if (index(a, "MB")) r = sprintf("%.2f× the bytes", x[op, "kv0"] / x[op, "sqlite"])
			else r = sprintf("%.1f× faster", x[op, "sqlite"] / x[op, "kv0"])
		}
		print "| " op " | " a " | " b " | " r " |"
	}
}' "$out"
