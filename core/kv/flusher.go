package kv

import (
	"context"
	"sync"
	"time"
	"weak"
)

// tickInterval is the period of the shared background goroutine: WAL syncs
// in batch mode, interval flushes and refreshes of every open handle.
const tickInterval = 100 * time.Millisecond

// registry holds the open handles the background goroutine serves. It keeps
// only weak references, so a DB nobody references can be collected (its
// cleanup then flushes and closes it); Close removes a handle at once. The
// goroutine runs while at least one handle is registered.
var registry struct {
	mu      sync.Mutex
	handles map[*db]weak.Pointer[DB]
	running bool
}

func register(pub *DB) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.handles == nil {
		registry.handles = map[*db]weak.Pointer[DB]{}
	}
	registry.handles[pub.d] = weak.Make(pub)
	if !registry.running {
		registry.running = true
		go background()
	}
}

func unregister(d *db) {
	registry.mu.Lock()
	delete(registry.handles, d)
	registry.mu.Unlock()
}

func background() {
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	var batch []weak.Pointer[DB]
	for range t.C {
		registry.mu.Lock()
		if len(registry.handles) == 0 {
			registry.running = false
			registry.mu.Unlock()
			return
		}
		batch = batch[:0]
		for _, w := range registry.handles {
			batch = append(batch, w)
		}
		registry.mu.Unlock()
		for _, w := range batch {
			if pub := w.Value(); pub != nil {
				pub.d.tick(context.Background(), pub.d.opts.Now().UnixNano())
			}
		}
		clear(batch)
	}
}
