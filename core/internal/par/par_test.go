package par

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestDoBoundsAndErrors(t *testing.T) {
	var running, peak, calls atomic.Int32
	err := Do(context.Background(), 50, 3, func(ctx context.Context, i int) error {
		calls.Add(1)
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		defer running.Add(-1)
		return nil
	})
	if err != nil || calls.Load() != 50 || peak.Load() > 3 {
		t.Fatalf("err %v, %d calls, peak %d", err, calls.Load(), peak.Load())
	}
	boom := errors.New("boom")
	err = Do(context.Background(), 100, 2, func(ctx context.Context, i int) error {
		if i == 5 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Do(ctx, 10, 2, func(ctx context.Context, i int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled context: err %v", err)
	}
}
