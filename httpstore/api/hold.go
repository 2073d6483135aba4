package api

import (
	"context"
	"net/http"
)

// WriteHolder lets a whole answer leave in one write to its connection. A
// host of the handler whose connections implement it puts each one in its
// requests' contexts (WithWriteHolder); the handler then holds the writes
// of an answer it has whole in memory (points, statistics, every JSON
// document), headers and body, and releases them at once. net/http
// writes an answer through a 4 KiB buffer: the first 4 KiB (the headers
// and the body's start) and then the rest, two writes whose first wakes
// the client, which on a busy machine takes the CPU from the server
// before it wrote the rest. Streamed answers (rows, files) are never held.
type WriteHolder interface {
	// Hold keeps what is written to the connection from now on in memory.
	Hold()
	// Release writes what was kept, in one write, and stops keeping.
	Release() error
}

type holderKey struct{}

// WithWriteHolder returns ctx carrying the connection's WriteHolder (for
// http.Server.ConnContext).
func WithWriteHolder(ctx context.Context, h WriteHolder) context.Context {
	return context.WithValue(ctx, holderKey{}, h)
}

// holdLimit is the largest answer held: above it the answer is many
// segments on any network and the two writes cost nothing more.
const holdLimit = 4 << 20

// writeHeld writes an answer of n body bytes through write, in one write
// to the connection when the request's context carries a WriteHolder.
func writeHeld(w http.ResponseWriter, r *http.Request, n int, write func()) {
	hold, _ := r.Context().Value(holderKey{}).(WriteHolder)
	f, flusher := w.(http.Flusher)
	if hold == nil || !flusher || n <= 2048 || n > holdLimit {
		write()
		return
	}
	hold.Hold()
	write()
	f.Flush()          // everything net/http buffered reaches the connection, held
	_ = hold.Release() // a failed write fails the connection's next use too
}
