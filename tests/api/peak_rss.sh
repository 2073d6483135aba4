#!/bin/sh
# Measures the peak resident set (VmHWM) of kv0 serve answering the request
# of docs/benchmarks.md ("kv0 serve: memory of one request"): 1,000 copies
# of the id of one series of 16,000 points, every point (max_points=0), once
# and then ten at once, under an address-space limit (prlimit --as).
#
#   tests/api/peak_rss.sh [KV0]        # KV0: the binary (default bin/kv0)
#   AS=unlimited AT_ONCE=0 tests/api/peak_rss.sh /tmp/kv0-old
#
# AS is the address-space limit (default 3 GiB), AT_ONCE how many requests
# are sent at once after the first (default 10; 0: none).
set -eu
KV0=${1:-bin/kv0}
AS=${AS:-3221225472}
AT_ONCE=${AT_ONCE:-10}
PORT=${PORT:-18399}
DIR=$(mktemp -d)
pid=
trap 'test -z "$pid" || kill "$pid" 2>/dev/null; rm -rf "$DIR"' EXIT
awk 'BEGIN { for (s = 0; s < 16000; s++) printf "{\"name\": \"loss\", \"value\": %.6f, \"step\": %d}\n", sin(s / 97) / 3, s }' |
	"$KV0" track "$DIR/repo" --run one >/dev/null 2>&1
prlimit --as="$AS" "$KV0" serve "$DIR/repo" --listen 127.0.0.1:$PORT >"$DIR/serve.out" 2>&1 &
pid=$!
until curl -sf http://127.0.0.1:$PORT/healthz >/dev/null; do sleep 0.1; done
id=$(curl -sf "http://127.0.0.1:$PORT/api/v1/series?newest=1" | sed -n 's/.*"series_id":"\([0-9]*\)".*/\1/p')
hwm() { sed -n 's/VmHWM:[ \t]*//p' /proc/$pid/status 2>/dev/null || echo "(exited)"; }
one=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' "http://127.0.0.1:$PORT/api/v1/series/points?max_points=0&ids=$id")
echo "one series: $one bytes; peak RSS $(hwm)"
ids=$(awk -v id="$id" 'BEGIN { for (i = 0; i < 1000; i++) printf "%s%s", (i ? "," : ""), id }')
url="http://127.0.0.1:$PORT/api/v1/series/points?max_points=0&ids=$ids"
echo "1,000 ids (a ${#url}-byte URL): $(curl -s -o /dev/null -w '%{http_code} %{size_download}' "$url") bytes; peak RSS $(hwm)"
[ "$AT_ONCE" -gt 0 ] || exit 0
clients=
for i in $(seq "$AT_ONCE"); do
	curl -s -o /dev/null -w '%{http_code} %{size_download}\n' "$url" >"$DIR/c$i" &
	clients="$clients $!"
done
wait $clients || true
echo "$AT_ONCE at once: $(sort "$DIR"/c* | uniq -c | awk '{ printf "%s× %s %s bytes; ", $1, $2, $3 }')peak RSS $(hwm)"
grep -m1 'fatal error' "$DIR/serve.out" || true
