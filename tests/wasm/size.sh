#!/usr/bin/env bash
# Prints the raw, gzip -9 and brotli (quality 11) sizes of a wasm file and
# fails when the gzip size passes the hard limit (3 MB, issue 12).
set -euo pipefail
f=${1:?usage: size.sh FILE.wasm}
limit=${WASM_GZIP_LIMIT:-3000000}
raw=$(stat -c %s "$f")
gz=$(gzip -9 -c "$f" | wc -c)
if command -v brotli >/dev/null 2>&1; then
	br=$(brotli -q 11 -c "$f" | wc -c)
else
	br=$(node -e 'const z=require("zlib");const b=require("fs").readFileSync(process.argv[1]);process.stdout.write(String(z.brotliCompressSync(b,{params:{[z.constants.BROTLI_PARAM_QUALITY]:11,[z.constants.BROTLI_PARAM_SIZE_HINT]:b.length}}).length))' "$f")
fi
printf 'kv0.wasm: %d bytes raw, %d gzip -9, %d brotli (limit %d gzip)\n' "$raw" "$gz" "$br" "$limit"
if [ "$gz" -gt "$limit" ]; then
	echo "kv0.wasm is over the size limit: $gz bytes gzip > $limit" >&2
	exit 1
fi
