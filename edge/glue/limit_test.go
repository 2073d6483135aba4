package glue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimiterBound runs many workers through a limiter and checks that no
// more than its bound ever held a slot together, and that all finished.
func TestLimiterBound(t *testing.T) {
	l := NewLimiter(MaxConnections)
	var cur, peak, done atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Acquire(context.Background()); err != nil {
				t.Error(err)
				return
			}
			n := cur.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			cur.Add(-1)
			l.Release()
			done.Add(1)
		}()
	}
	wg.Wait()
	if p := peak.Load(); p > MaxConnections || p < 2 {
		t.Fatalf("peak %d simultaneous holders, want 2..%d", p, MaxConnections)
	}
	if done.Load() != 64 || l.InUse() != 0 {
		t.Fatalf("done %d, in use %d", done.Load(), l.InUse())
	}
}

// TestLimiterCancel: a waiter whose context ends gets its error and takes
// no slot.
func TestLimiterCancel(t *testing.T) {
	l := NewLimiter(1)
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := l.Acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a full limiter: %v, want DeadlineExceeded", err)
	}
	if l.InUse() != 1 {
		t.Fatalf("in use %d, want 1", l.InUse())
	}
	l.Release()
	if err := l.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
}
