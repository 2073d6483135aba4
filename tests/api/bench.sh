#!/bin/sh
# Runs the HTTP read API's benchmarks (docs/benchmarks.md): kv0 serve as a
# process on loopback against the same reads in-process, and the streamed
# rows against kv0 lance cat.
#
#   tests/api/bench.sh                      # fixtures in a temporary folder
#   DIR=/tmp/apibench tests/api/bench.sh    # keep (and reuse) the fixtures
#   LOAD=10s ROWS=1000000 tests/api/bench.sh
set -eu
cd "$(dirname "$0")/../.."
LOAD=${LOAD:-5s}
ROWS=${ROWS:-1000000}
if [ -z "${DIR:-}" ]; then
	DIR=$(mktemp -d)
	trap 'rm -rf "$DIR"' EXIT
fi
flags="-apibench.dir $DIR -apibench.load $LOAD -apibench.rows $ROWS"
bench() { go test ./tests/api -run '^$' -bench "$1" -benchtime "$2" -timeout 1h $flags; }
bench 'BenchmarkSeriesRead/warm-pair$' 400x
bench 'BenchmarkSeriesRead/warm$' 2000x
bench 'BenchmarkSeriesRead/warm-blocks' 1000x
bench 'BenchmarkSeriesRead/cold' 30x
bench 'BenchmarkSeriesLoad' 1x
bench 'BenchmarkRowsStream' 3x
echo "($(go env GOOS)/$(go env GOARCH), $(nproc 2>/dev/null || echo ?) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo ?), $(date -u +%Y-%m-%d))"
