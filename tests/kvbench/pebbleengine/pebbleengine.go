// Package pebbleengine is Pebble (v2) as a benchmark engine.
package pebbleengine

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/kv0/kv0/tests/kvbench/workload"
)

// Engine is a Pebble database; in batch mode a goroutine syncs its WAL
// every 100 ms.
type Engine struct {
	db   *pebble.DB
	stop chan struct{}
	wg   sync.WaitGroup
}

var _ workload.Engine = (*Engine)(nil)

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)      {}
func (quietLogger) Errorf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (quietLogger) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// Open implements workload.Opener. Pebble runs with its defaults plus
// 10-bit bloom filters on every level (the usual setting for point reads)
// and a block cache of twice the raw data (the memory budget kv0 targets,
// so reads compare at equal memory rather than against Pebble's 8 MiB
// default). Batch mode writes without syncing and syncs the WAL every
// 100 ms, as kv0's batch mode does.
func Open(dir string, batch bool) (workload.Engine, error) {
	cache := pebble.NewCache(int64(2 * workload.NumKeys() * (workload.KeySize + workload.ValueSize)))
	defer cache.Unref()
	o := &pebble.Options{Logger: quietLogger{}, Cache: cache}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(filepath.Join(dir, "pebble"), o)
	if err != nil {
		return nil, err
	}
	e := &Engine{db: db, stop: make(chan struct{})}
	if batch {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-e.stop:
					return
				case <-t.C:
					_ = db.LogData([]byte("s"), pebble.Sync)
				}
			}
		}()
	}
	return e, nil
}

// Put implements workload.Engine.
func (e *Engine) Put(k, v []byte) error { return e.db.Set(k, v, pebble.NoSync) }

// Get implements workload.Engine.
func (e *Engine) Get(k []byte) ([]byte, error) {
	v, c, err := e.db.Get(k)
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, len(v)), v...)
	return out, c.Close()
}

// Scan implements workload.Engine.
func (e *Engine) Scan(fn func(k, v []byte)) error {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
	}
	return it.Close()
}

// Flush implements workload.Engine: a synced WAL record.
func (e *Engine) Flush() error { return e.db.LogData([]byte("s"), pebble.Sync) }

// Close implements workload.Engine.
func (e *Engine) Close() error {
	close(e.stop)
	e.wg.Wait()
	return e.db.Close()
}
