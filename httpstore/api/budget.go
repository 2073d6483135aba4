package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// The memory budgets (Options.RequestMemory, Options.ServerMemory).
//
// A request that builds its answer in memory (points, and the series
// lists of many runs) tells the budget of the bytes it is about to hold
// before it holds them: the points its reads decode (tracking's
// ReadOptions.Reserve), the points it keeps, the answer it encodes. Those
// bytes come from the server's budget, a byte semaphore shared by every
// request, and are given back when the answer is sent (or each part of a
// streamed answer once written). One request may hold at most its own
// budget: an answer that needs more is streamed in parts that fit when its
// form allows it, and is refused with 413 TooLarge otherwise. A request
// that finds the server's budget taken waits for room a moment, then is
// refused with 503 Busy and Retry-After.
const (
	// DefaultRequestMemory is the default of Options.RequestMemory:
	// 256 MiB. A dashboard's read (1,000 points of ten series, or every
	// point of a series of a million) holds a few to some hundred MiB.
	DefaultRequestMemory = 256 << 20
	// DefaultServerMemory is the default of Options.ServerMemory: 1 GiB.
	DefaultServerMemory = 1 << 30
	// defaultBusyWait is how long a request waits, in all, for room in
	// the server's budget before it is refused.
	defaultBusyWait = 2 * time.Second
)

// memBudget is the server's budget: a byte semaphore.
type memBudget struct {
	sem        *semaphore.Weighted
	server     int64 // the semaphore's size
	perRequest int64 // the most one request holds
	wait       time.Duration
}

func newMemBudget(server, perRequest int64) *memBudget {
	return &memBudget{sem: semaphore.NewWeighted(server), server: server, perRequest: min(perRequest, server),
		wait: defaultBusyWait}
}

// reservation is one request's share of the budget. Its grow may be
// called from several goroutines at once (a read's).
type reservation struct {
	b   *memBudget
	ctx context.Context

	mu       sync.Mutex
	held     int64
	deadline time.Time // of the waits for room, once one began
}

// reserve starts the request's share of the budget (holding nothing).
func (b *memBudget) reserve(ctx context.Context) *reservation {
	return &reservation{b: b, ctx: ctx}
}

// grow takes n more bytes from the server's budget: a *apiError TooLarge
// when the request would hold more than its budget, Busy when the server's
// has no room for them within the wait.
func (r *reservation) grow(n int64) error {
	if n <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held+n > r.b.perRequest {
		return tooLarge(r.b.perRequest)
	}
	if !r.b.sem.TryAcquire(n) {
		if r.deadline.IsZero() {
			r.deadline = time.Now().Add(r.b.wait)
		}
		ctx, cancel := context.WithDeadline(r.ctx, r.deadline)
		err := r.b.sem.Acquire(ctx, n)
		cancel()
		if err != nil {
			if r.ctx.Err() != nil {
				return r.ctx.Err() // the client went away
			}
			return busy(r.b.server)
		}
	}
	r.held += n
	return nil
}

// shrinkTo gives back what the request holds above n bytes.
func (r *reservation) shrinkTo(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held > n {
		r.b.sem.Release(r.held - max(n, 0))
		r.held = max(n, 0)
	}
}

// release gives back everything the request holds.
func (r *reservation) release() { r.shrinkTo(0) }

// size is what the request holds.
func (r *reservation) size() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

func tooLarge(limit int64) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: CodeTooLarge,
		msg: "the answer needs more memory than one request may hold (" + mib(limit) +
			", kv0 serve --request-memory): ask for fewer series, fewer points (max_points) or a narrower step or time range"}
}

func busy(limit int64) error {
	return &apiError{status: http.StatusServiceUnavailable, code: CodeBusy, retryAfter: 1,
		msg: "the server's answers under way hold all the memory it gives them (" + mib(limit) +
			", kv0 serve --server-memory): try again in a moment"}
}

// isTooLarge reports whether err is a request's budget refusing more.
func isTooLarge(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.code == CodeTooLarge
}
