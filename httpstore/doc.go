// Package httpstore is a read-only store.Store over HTTP(S) range requests.
// Requests go through a Transport: net/http natively, and on js/wasm the
// JavaScript fetch function through syscall/js, so a wasm binary does not
// link net/http (megabytes) and a browser applies its own CORS and cache.
//
// Two modes:
//
//   - Static (OpenStatic): any web server or CDN serving a repository folder
//     at a base URL. Listing is impossible, so List returns
//     store.ErrNotSupported and Lance resolves versions through
//     _versions/latest_version_hint.json and probing.
//   - Signed (OpenSigned): a Signer turns (operation, key) into a URL, for
//     example an S3 presigned GetObject or ListObjectsV2 URL handed out by
//     "kv0 sign-server". List parses the S3 ListBucketResult XML (also GCS XML),
//     Azure List Blobs XML (EnumerationResults) and GCS JSON object lists.
//
// Requests follow the lessons of browser readers:
//
//   - No suffix ranges (bytes=-N): browsers send a CORS preflight for them.
//     Sizes come from listings or from the Content-Range header of a first
//     ranged GET; Stat is "GET Range: bytes=0-0" because HEAD is refused on
//     GET-presigned URLs. ReadTail (store.TailReader) takes one request when
//     the size is known or the object fits in the requested tail.
//   - Range reads run concurrently under a bound (Options.MaxConcurrency).
//     Reads of one object that wait for a free slot are coalesced: nearby
//     ranges (gap at most Options.CoalesceGap) go out as one request.
//   - 5xx, 429, broken connections and truncated bodies are retried with
//     exponential backoff. A body shorter than its range is never returned.
//   - Errors are typed: store.ErrNotFound for 404, ErrForbidden for 403
//     (an expired or wrong signature), ErrNetwork for failures before any
//     answer (in a browser usually CORS), ErrTruncated, ErrServer. They name
//     the URL without its query string, so signatures never reach logs.
//
// Writes return store.ErrNotSupported. A Store is safe for concurrent use.
package httpstore
