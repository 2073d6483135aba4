// Package kv0engine is kv0's key-value store as a benchmark engine.
package kv0engine

import (
	"context"
	"path/filepath"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/wal"
	"github.com/kv0/kv0/tests/kvbench/workload"
)

// Engine is a kv0 database with its defaults, WAL in dir/wal.
type Engine struct{ DB *kv.DB }

var _ workload.Engine = (*Engine)(nil)

// Open implements workload.Opener: WAL mode batch or none.
func Open(dir string, batch bool) (workload.Engine, error) {
	mode := wal.SyncNone
	if batch {
		mode = wal.SyncBatch
	}
	db, err := kvdb.Open(context.Background(), filepath.Join(dir, "db.lance"), kvdb.Options{WALDir: filepath.Join(dir, "wal"), WALMode: mode})
	if err != nil {
		return nil, err
	}
	return &Engine{DB: db}, nil
}

// Put implements workload.Engine.
func (e *Engine) Put(k, v []byte) error { return e.DB.Put(context.Background(), k, v, nil) }

// Get implements workload.Engine.
func (e *Engine) Get(k []byte) ([]byte, error) { return e.DB.Get(context.Background(), k) }

// Scan implements workload.Engine.
func (e *Engine) Scan(fn func(k, v []byte)) error {
	it, err := e.DB.NewIter(context.Background(), nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
	}
	err = it.Error()
	it.Close()
	return err
}

// Flush implements workload.Engine.
func (e *Engine) Flush() error { return e.DB.Flush(context.Background()) }

// Close implements workload.Engine.
func (e *Engine) Close() error { return e.DB.Close() }
