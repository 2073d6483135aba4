// Package glue is the Go half of kv0's edge worker glue: it serves an
// http.Handler to the JavaScript half (edge/worker.mjs) from one Go
// instance that lives as long as its isolate, and performs the handler's
// outgoing I/O (fetch, R2) inside the request that needs it.
//
// Cloudflare's runtime ties every I/O object (a fetch, an R2 read, a
// response stream) to the request that created it, and the Go scheduler
// runs whichever goroutines are ready when JavaScript calls into it, which
// may be during another request. So Go never calls an I/O function
// itself: it hands each operation to its request's Gate, a queue that the
// JavaScript half drains from a promise continuation of that request.
// A Gate also bounds the request's simultaneous connections (Limiter) and
// keeps the request alive (waitUntil) while operations it started run.
//
// See docs/edge.md for how this differs from syumai/workers' stock glue.
package glue
