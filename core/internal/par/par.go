// Package par runs independent calls concurrently with a bound, the way
// kv0's readers overlap requests to a store.
package par

import (
	"context"
	"sync"
)

// Do calls fn(ctx, i) for i in [0, n) with at most limit calls running at
// once, and returns the first error. After an error the context passed to
// the remaining calls is canceled and calls not yet started are skipped.
func Do(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	if n == 1 {
		return fn(ctx, 0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, max(limit, 1))
	)
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}
