package glue

import "context"

// MaxConnections is how many outgoing connections one request may hold
// open at once: Cloudflare counts fetch, R2 and Cache API calls against a
// limit of six per invocation and stalls or fails the rest.
const MaxConnections = 6

// Limiter bounds the connections of one request. Acquire waits for a free
// slot (the queue is first come, first served); Release frees it. A
// connection with a body holds its slot until the body is read to its end
// or closed.
type Limiter struct {
	slots chan struct{}
}

// NewLimiter returns a limiter of n simultaneous connections.
func NewLimiter(n int) *Limiter {
	return &Limiter{slots: make(chan struct{}, max(n, 1))}
}

// Acquire takes a slot, or returns ctx's error if it ends first.
func (l *Limiter) Acquire(ctx context.Context) error {
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release frees a slot taken by Acquire.
func (l *Limiter) Release() { <-l.slots }

// InUse is the number of slots taken.
func (l *Limiter) InUse() int { return len(l.slots) }
