package wal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/core/store"
)

// countingLog counts the rows ScanFragments hands out.
type countingLog struct {
	kv.OpLog
	rows atomic.Int64
}

func (c *countingLog) ScanFragments(ctx context.Context, v uint64, f []uint64, fn func([]kv.Row) error) error {
	return c.OpLog.ScanFragments(ctx, v, f, func(b []kv.Row) error {
		c.rows.Add(int64(len(b)))
		return fn(b)
	})
}

type env struct {
	t    *testing.T
	ctx  context.Context
	log  *kvtest.Log
	o    Options
	opts kv.Options
}

func newEnv(t *testing.T) *env {
	return &env{
		t:    t,
		ctx:  context.Background(),
		log:  kvtest.NewLog(store.NewMemory(), "", nil),
		o:    Options{Dir: t.TempDir(), Mode: SyncAlways},
		opts: kv.Options{FlushInterval: -1, RefreshInterval: -1, MaxFragments: -1},
	}
}

// open opens a DB on a killable handle of the shared log.
func (e *env) open(extra func(*kv.Options)) (*kv.DB, *kvtest.Killable, error) {
	w, err := Open(crashURI, e.o)
	if err != nil {
		return nil, nil, err
	}
	h := &kvtest.Killable{OpLog: e.log}
	o := e.opts
	o.WAL = w
	if extra != nil {
		extra(&o)
	}
	db, err := kv.Open(e.ctx, h, &o)
	return db, h, err
}

func (e *env) mustOpen(extra func(*kv.Options)) (*kv.DB, *kvtest.Killable) {
	e.t.Helper()
	db, h, err := e.open(extra)
	if err != nil {
		e.t.Fatal(err)
	}
	return db, h
}

// crash abandons db: its log handle dies, so Close cannot commit and the
// WAL keeps its segments.
func crash(db *kv.DB, h *kvtest.Killable) {
	h.Kill()
	_ = db.Close()
}

func (e *env) rows() []kv.Row {
	rows, err := e.log.AllRows(e.ctx, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
}

func TestDBReplaySkipsMarkedRecords(t *testing.T) {
	e := newEnv(t)
	fsys := &faultFS{}
	e.o.FS = fsys
	db, h := e.mustOpen(nil)
	db.Put(e.ctx, []byte("a"), []byte("1"), nil)
	fsys.failRemove = true // the committed segment survives the flush
	if err := db.Flush(e.ctx); err != nil {
		t.Fatal(err)
	}
	db.Put(e.ctx, []byte("b"), []byte("2"), nil)
	crash(db, h)
	fsys.failRemove = false

	db, _ = e.mustOpen(nil)
	defer db.Close()
	for k, want := range map[string]string{"a": "1", "b": "2"} {
		if v, err := db.Get(e.ctx, []byte(k)); err != nil || string(v) != want {
			t.Fatalf("%s = %q, %v", k, v, err)
		}
	}
	n := map[string]int{}
	for _, r := range e.rows() {
		if r.Op == kv.OpPut {
			n[string(r.Key)]++
		}
	}
	if n["a"] != 1 || n["b"] != 1 {
		t.Fatalf("puts stored %v; want each once", n)
	}
}

func TestDBStaleWAL(t *testing.T) {
	e := newEnv(t)
	past := func(o *kv.Options) { o.Now = func() time.Time { return time.Now().Add(-40 * 24 * time.Hour) } }
	db, h := e.mustOpen(past)
	db.Put(e.ctx, []byte("old"), []byte("x"), nil)
	crash(db, h)

	_, _, err := e.open(nil)
	if !errors.Is(err, kv.ErrStaleWAL) || !strings.Contains(err.Error(), e.o.Dir) {
		t.Fatalf("open over a stale WAL: %v", err)
	}
	db, _ = e.mustOpen(func(o *kv.Options) { o.ReplayStaleWAL = true })
	defer db.Close()
	if v, err := db.Get(e.ctx, []byte("old")); err != nil || string(v) != "x" {
		t.Fatalf("old = %q, %v", v, err)
	}
}

func TestDBWriterIDReuse(t *testing.T) {
	e := newEnv(t)
	for i := range 4 {
		db, _ := e.mustOpen(nil)
		db.Put(e.ctx, []byte{byte(i)}, []byte("v"), nil)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	writers := map[string]bool{}
	for _, r := range e.rows() {
		if r.Op == kv.OpMark {
			writers[string(r.Key)] = true
		}
	}
	if len(writers) != 1 {
		t.Fatalf("marks of %d writers after sequential opens; want 1", len(writers))
	}
}

func TestDBFailedWALAppend(t *testing.T) {
	e := newEnv(t)
	fsys := &faultFS{}
	e.o.FS = fsys
	db, h := e.mustOpen(nil)
	fsys.failWrite = 1
	if err := db.Put(e.ctx, []byte("lost"), []byte("x"), nil); !errors.Is(err, kv.ErrStoreIO) {
		t.Fatalf("put with a failing WAL: %v", err)
	}
	if _, err := db.Get(e.ctx, []byte("lost")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a failed write is visible: %v", err)
	}
	db.Put(e.ctx, []byte("kept"), []byte("y"), nil)
	crash(db, h)
	db, _ = e.mustOpen(nil)
	defer db.Close()
	if _, err := db.Get(e.ctx, []byte("lost")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("failed write replayed: %v", err)
	}
	if v, err := db.Get(e.ctx, []byte("kept")); err != nil || string(v) != "y" {
		t.Fatalf("kept = %q, %v", v, err)
	}
}

func TestDBSnapshotReopen(t *testing.T) {
	e := newEnv(t)
	snaps, err := OpenSnapshots(crashURI, e.o)
	if err != nil {
		t.Fatal(err)
	}
	e.opts.Snapshots = snaps
	e.opts.SnapshotMinEntries = 1
	cl := &countingLog{OpLog: e.log}
	open := func() *kv.DB {
		w, err := Open(crashURI, e.o)
		if err != nil {
			t.Fatal(err)
		}
		o := e.opts
		o.WAL = w
		db, err := kv.Open(e.ctx, cl, &o)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	for i := range 300 {
		db.Put(e.ctx, []byte{byte(i >> 8), byte(i)}, []byte("v"), nil)
	}
	db.Close()
	snapPath := filepath.Join(filepath.Dir(snaps.path), snapName)
	if _, err := os.Stat(snapPath); err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	cl.rows.Store(0)
	db = open()
	if n := cl.rows.Load(); n != 0 {
		t.Fatalf("reopen with a snapshot scanned %d rows", n)
	}
	db.Put(e.ctx, []byte("new"), []byte("v"), nil)
	db.Close()
	// A damaged snapshot sends the open back to a full scan.
	data, _ := os.ReadFile(snapPath)
	data[len(data)/2] ^= 1
	os.WriteFile(snapPath, data, 0o644)
	cl.rows.Store(0)
	db = open()
	defer db.Close()
	if cl.rows.Load() == 0 {
		t.Fatal("damaged snapshot used")
	}
	if v, err := db.Get(e.ctx, []byte("new")); err != nil || string(v) != "v" {
		t.Fatalf("new = %q, %v", v, err)
	}
}
