#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each (default 60s).
# Usage: tests/fuzz.sh [DURATION]
#
# New interesting inputs are minimised for at most 100 executions (a count, not
# a time: some targets are slow per input, and a time-bounded minimisation cut
# off by the end of the run is reported by the fuzzer as "context deadline
# exceeded" without any failing input). Such a run, which wrote no failing
# input, is repeated once; a real finding always writes one under testdata/fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-60s}
go=${GO:-go}
status=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT
run() { $go test -run='^$' -fuzz="^$2\$" -fuzztime="$time" -fuzzminimizetime=100x "$1" >"$log" 2>&1; }
for pkg in $($go list ./...); do
  dir=$($go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($time)"
    if run "$pkg" "$t"; then continue; fi
    if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
      echo "  the fuzzer stopped on its own deadline without a failing input; running $t again"
      if run "$pkg" "$t"; then continue; fi
    fi
    cat "$log"
    status=1
  done
done
exit $status
