package kvtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/kv0/kv0/core/kv"
)

// ErrKilled is returned by handles after Kill.
var ErrKilled = errors.New("kvtest: killed")

// MemWALRoot is an in-memory stand-in for a machine's WAL directories of
// one database: writers open logs, a killed writer leaves its records for
// the next Open to claim, a clean close leaves an idle writer id for reuse.
// Safe for concurrent use.
type MemWALRoot struct {
	mu      sync.Mutex
	writers map[string]*memWriter
	next    int
}

type memWriter struct {
	id      string
	locked  bool
	sealed  [][][]byte // sealed segments
	current [][]byte
	base    uint64 // token of sealed[0]
}

// NewMemWALRoot returns an empty root.
func NewMemWALRoot() *MemWALRoot { return &MemWALRoot{writers: map[string]*memWriter{}} }

// Open opens a writer: it adopts an idle writer id when there is one and
// claims every abandoned writer holding records.
func (r *MemWALRoot) Open() *MemWAL {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := &MemWAL{root: r}
	ids := make([]string, 0, len(r.writers))
	for id := range r.writers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		mw := r.writers[id]
		if mw.locked {
			continue
		}
		if mw.empty() {
			if w.w == nil {
				mw.locked = true
				w.w = mw
			}
			continue
		}
		mw.locked = true
		var recs [][]byte
		for _, s := range mw.sealed {
			recs = append(recs, s...)
		}
		recs = append(recs, mw.current...)
		w.claimed = append(w.claimed, kv.ClaimedLog{WriterID: id, Dir: "mem:" + id, Records: recs})
		w.claimedW = append(w.claimedW, mw)
	}
	if w.w == nil {
		r.next++
		id := fmt.Sprintf("w%03d", r.next)
		w.w = &memWriter{id: id, locked: true}
		r.writers[id] = w.w
	}
	return w
}

func (m *memWriter) empty() bool {
	if len(m.current) > 0 {
		return false
	}
	for _, s := range m.sealed {
		if len(s) > 0 {
			return false
		}
	}
	return true
}

// Records returns the number of records held by every writer (tests check
// that committed segments are deleted).
func (r *MemWALRoot) Records() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, w := range r.writers {
		n += len(w.current)
		for _, s := range w.sealed {
			n += len(s)
		}
	}
	return n
}

// MemWAL is one writer's log in a MemWALRoot; it implements kv.WAL.
type MemWAL struct {
	root     *MemWALRoot
	w        *memWriter
	claimed  []kv.ClaimedLog
	claimedW []*memWriter
	dead     bool
	// FailAppend, when set, is called before each append; an error fails it.
	FailAppend func() error
}

var _ kv.WAL = (*MemWAL)(nil)

// WriterID implements kv.WAL.
func (w *MemWAL) WriterID() string { return w.w.id }

// Claimed implements kv.WAL.
func (w *MemWAL) Claimed() []kv.ClaimedLog { return w.claimed }

// ReleaseClaimed implements kv.WAL.
func (w *MemWAL) ReleaseClaimed() error {
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.dead {
		return ErrKilled
	}
	for _, mw := range w.claimedW {
		delete(w.root.writers, mw.id)
	}
	w.claimed, w.claimedW = nil, nil
	return nil
}

// Append implements kv.WAL.
func (w *MemWAL) Append(rec []byte) error {
	if w.FailAppend != nil {
		if err := w.FailAppend(); err != nil {
			return err
		}
	}
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.dead {
		return ErrKilled
	}
	w.w.current = append(w.w.current, slices.Clone(rec))
	return nil
}

// Sync implements kv.WAL.
func (w *MemWAL) Sync() error { return nil }

// Rotate implements kv.WAL.
func (w *MemWAL) Rotate() (uint64, error) {
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.dead {
		return 0, ErrKilled
	}
	w.w.sealed = append(w.w.sealed, w.w.current)
	w.w.current = nil
	return w.w.base + uint64(len(w.w.sealed)) - 1, nil
}

// Release implements kv.WAL.
func (w *MemWAL) Release(token uint64) error {
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.dead {
		return ErrKilled
	}
	for len(w.w.sealed) > 0 && w.w.base <= token {
		w.w.sealed = w.w.sealed[1:]
		w.w.base++
	}
	return nil
}

// Close implements kv.WAL.
func (w *MemWAL) Close(clean bool) error {
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.dead {
		return ErrKilled
	}
	w.dead = true
	if clean {
		w.w.sealed, w.w.current = nil, nil
	}
	w.w.locked = false
	for _, mw := range w.claimedW {
		mw.locked = false
	}
	return nil
}

// Kill simulates the writer's process dying: the records stay for the next
// Open and every later call fails.
func (w *MemWAL) Kill() {
	w.root.mu.Lock()
	defer w.root.mu.Unlock()
	if w.dead {
		return
	}
	w.dead = true
	w.w.locked = false
	for _, mw := range w.claimedW {
		mw.locked = false
	}
}

// MemSnapshots is an in-memory kv.SnapshotStore.
type MemSnapshots struct {
	mu   sync.Mutex
	data []byte
	// Saves counts successful saves.
	Saves int
}

var _ kv.SnapshotStore = (*MemSnapshots)(nil)

// LoadSnapshot implements kv.SnapshotStore.
func (s *MemSnapshots) LoadSnapshot() ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.data), nil
}

// SaveSnapshot implements kv.SnapshotStore.
func (s *MemSnapshots) SaveSnapshot(b []byte) error {
	if err := kv.ValidateSnapshot(b); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = slices.Clone(b)
	s.Saves++
	return nil
}

// RemoveSnapshot implements kv.SnapshotStore.
func (s *MemSnapshots) RemoveSnapshot() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = nil
	return nil
}

// Killable wraps an OpLog for one handle; after Kill every call fails, so
// a handle abandoned by a simulated crash never commits again.
type Killable struct {
	kv.OpLog
	mu   sync.Mutex
	dead bool
}

var _ kv.OpLog = (*Killable)(nil)

// Kill makes every later call fail with ErrKilled.
func (k *Killable) Kill() {
	k.mu.Lock()
	k.dead = true
	k.mu.Unlock()
}

func (k *Killable) check() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dead {
		return ErrKilled
	}
	return nil
}

// Append implements kv.OpLog.
func (k *Killable) Append(ctx context.Context, rows []kv.Row) (kv.CommitResult, error) {
	if err := k.check(); err != nil {
		return kv.CommitResult{}, err
	}
	return k.OpLog.Append(ctx, rows)
}

// Materialize implements kv.OpLog.
func (k *Killable) Materialize(ctx context.Context, v uint64, rows func(func(kv.Row) bool), remove []uint64) (kv.CommitResult, error) {
	if err := k.check(); err != nil {
		return kv.CommitResult{}, err
	}
	return k.OpLog.Materialize(ctx, v, rows, remove)
}

// CompactFiles implements kv.OpLog.
func (k *Killable) CompactFiles(ctx context.Context) (kv.CommitResult, error) {
	if err := k.check(); err != nil {
		return kv.CommitResult{}, err
	}
	return k.OpLog.CompactFiles(ctx)
}

// CleanupOldVersions implements kv.OpLog.
func (k *Killable) CleanupOldVersions(ctx context.Context, d time.Duration) (int, error) {
	if err := k.check(); err != nil {
		return 0, err
	}
	return k.OpLog.CleanupOldVersions(ctx, d)
}
