#!/usr/bin/env bash
# Runs every Go fuzz target in the module for the given time each (default 60s).
# Usage: tests/fuzz.sh [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-60s}
go=${GO:-go}
status=0
for pkg in $($go list ./...); do
  dir=$($go list -f '{{.Dir}}' "$pkg")
  targets=$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$dir"/*_test.go 2>/dev/null | sed 's/^func //' | sort -u || true)
  for t in $targets; do
    echo "fuzz $pkg $t ($time)"
    if ! $go test -run='^$' -fuzz="^${t}\$" -fuzztime="$time" -fuzzminimizetime=0s "$pkg" >/tmp/kv0-fuzz.log 2>&1; then
      cat /tmp/kv0-fuzz.log
      status=1
    fi
  done
done
exit $status
