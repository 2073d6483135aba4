package kvdb_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/core/kv/lancelog"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

var (
	flagSeed  = flag.Uint64("kvdb.seed", 0, "seed of the model test on the Lance binding (0: fixed CI seeds)")
	flagSteps = flag.Int("kvdb.steps", 0, "steps per model-test run (0: default)")
	flagFor   = flag.Duration("kvdb.duration", 0, "run the model test with fresh seeds for this long")
)

// mop is one write of the model's history.
type mop struct {
	op     kv.Op
	k, v   string
	logged bool
}

// world is the reference model: what readers of the handle must see (live)
// and what is committed to the log (stored), plus the writes in between.
type world struct {
	live, stored map[string]string
	pending      []mop
}

func applyTo(m map[string]string, o mop) {
	switch o.op {
	case kv.OpPut:
		m[o.k] = o.v
	case kv.OpDelete:
		delete(m, o.k)
	case kv.OpDeleteRange:
		for k := range m {
			if k >= o.k && k < o.v {
				delete(m, k)
			}
		}
	}
}

func (w *world) write(ops ...mop) {
	for _, o := range ops {
		applyTo(w.live, o)
		w.pending = append(w.pending, o)
	}
}

func (w *world) committed() {
	for _, o := range w.pending {
		applyTo(w.stored, o)
	}
	w.pending = nil
}

// crashed keeps what a WAL replay restores: the logged pending writes.
func (w *world) crashed() {
	for _, o := range w.pending {
		if o.logged {
			applyTo(w.stored, o)
		}
	}
	w.pending = nil
	w.live = maps(w.stored)
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

type modelRun struct {
	t      *testing.T
	ctx    context.Context
	rng    *rand.Rand
	log    *lancelog.Log
	walRt  *kvtest.MemWALRoot
	snaps  *kvtest.MemSnapshots
	opts   kv.Options
	db     *kv.DB
	handle *kvtest.Killable
	wal    *kvtest.MemWAL
	ro     *kv.DB
	w      world
	step   int
	trail  []string
}

func (m *modelRun) note(format string, args ...any) {
	m.trail = append(m.trail, fmt.Sprintf(format, args...))
	if len(m.trail) > 40 {
		m.trail = m.trail[1:]
	}
}

func (m *modelRun) fail(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("step %d: %s\nrecent steps:\n  %s", m.step, fmt.Sprintf(format, args...), strings.Join(m.trail, "\n  "))
}

func (m *modelRun) open() {
	m.handle = &kvtest.Killable{OpLog: m.log}
	m.wal = m.walRt.Open()
	o := m.opts
	o.WAL = m.wal
	db, err := kv.Open(m.ctx, m.handle, &o)
	if err != nil {
		m.fail("open: %v", err)
	}
	m.db = db
}

func (m *modelRun) key() string {
	if m.rng.IntN(25) == 0 {
		return string([]byte{byte(m.rng.IntN(256)), byte(m.rng.IntN(256))})
	}
	return fmt.Sprintf("key%03d", m.rng.IntN(300))
}

func (m *modelRun) value() string {
	switch m.rng.IntN(12) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("L", 100+m.rng.IntN(5000)) // lazy under some thresholds
	}
	return fmt.Sprintf("val-%d-%d", m.step, m.rng.IntN(100))
}

func (m *modelRun) randomOp() mop {
	switch r := m.rng.IntN(20); {
	case r < 13:
		return mop{op: kv.OpPut, k: m.key(), v: m.value()}
	case r < 18:
		return mop{op: kv.OpDelete, k: m.key()}
	default:
		a, b := m.key(), m.key()
		if a > b {
			a, b = b, a
		}
		return mop{op: kv.OpDeleteRange, k: a, v: b}
	}
}

func (m *modelRun) do() {
	m.step++
	ctx := m.ctx
	switch r := m.rng.IntN(100); {
	case r < 50:
		o := m.randomOp()
		wo := &kv.WriteOptions{DisableWAL: m.rng.IntN(8) == 0}
		o.logged = !wo.DisableWAL
		m.note("%v %q %.12q", o.op, o.k, o.v)
		var err error
		switch o.op {
		case kv.OpPut:
			err = m.db.Put(ctx, []byte(o.k), []byte(o.v), wo)
		case kv.OpDelete:
			err = m.db.Delete(ctx, []byte(o.k), wo)
		default:
			err = m.db.DeleteRange(ctx, []byte(o.k), []byte(o.v), wo)
		}
		if err != nil {
			m.fail("write: %v", err)
		}
		m.w.write(o)
	case r < 60:
		b := m.db.NewBatch()
		ops := make([]mop, 1+m.rng.IntN(5))
		for i := range ops {
			ops[i] = m.randomOp()
			ops[i].logged = true
			switch ops[i].op {
			case kv.OpPut:
				b.Put([]byte(ops[i].k), []byte(ops[i].v))
			case kv.OpDelete:
				b.Delete([]byte(ops[i].k))
			default:
				b.DeleteRange([]byte(ops[i].k), []byte(ops[i].v))
			}
		}
		sync := m.rng.IntN(4) == 0
		m.note("batch of %d sync=%v", len(ops), sync)
		if err := m.db.Write(ctx, b, &kv.WriteOptions{Sync: sync}); err != nil {
			m.fail("batch: %v", err)
		}
		m.w.write(ops...)
		if sync {
			m.w.committed()
			m.checkFollower()
		}
	case r < 70:
		m.note("gets")
		keys := [][]byte{[]byte(m.key()), []byte(m.key()), []byte(m.key())}
		for _, k := range keys {
			v, err := m.db.Get(ctx, k)
			want, ok := m.w.live[string(k)]
			if ok != (err == nil) || (ok && string(v) != want) || (!ok && !errors.Is(err, kv.ErrNotFound)) {
				m.fail("get %q = %.12q, %v; want %.12q (present %v)", k, v, err, want, ok)
			}
		}
		vals, err := m.db.MultiGet(ctx, keys)
		if err != nil {
			m.fail("multiget: %v", err)
		}
		for i, k := range keys {
			want, ok := m.w.live[string(k)]
			if ok != (vals[i] != nil) || string(vals[i]) != want {
				m.fail("multiget %q = %.12q want %.12q", k, vals[i], want)
			}
		}
	case r < 78:
		m.note("bounded walk")
		m.checkBounded()
	case r < 86:
		m.note("flush")
		if err := m.db.Flush(ctx); err != nil {
			m.fail("flush: %v", err)
		}
		m.w.committed()
		m.checkFollower()
	case r < 89:
		m.note("compact")
		if err := m.db.CompactRange(ctx, nil, nil); err != nil {
			m.fail("compact: %v", err)
		}
		m.w.committed()
		m.checkFollower()
	case r < 91:
		m.note("cleanup")
		if err := m.db.Flush(ctx); err != nil {
			m.fail("flush: %v", err)
		}
		m.w.committed()
		if _, err := m.db.CleanupOldVersions(ctx, 0); err != nil {
			m.fail("cleanup: %v", err)
		}
		m.checkFollower()
	case r < 94:
		m.note("reopen")
		if err := m.db.Close(); err != nil {
			m.fail("close: %v", err)
		}
		m.w.committed()
		if m.rng.IntN(2) == 0 {
			_ = m.snaps.RemoveSnapshot()
		}
		m.open()
		m.checkAll(m.db, m.w.live)
	case r < 97:
		m.note("crash")
		m.handle.Kill()
		m.wal.Kill()
		m.w.crashed()
		m.open()
		m.checkAll(m.db, m.w.live)
		m.checkFollower()
	default:
		m.note("refresh")
		if err := m.db.Refresh(ctx); err != nil {
			m.fail("refresh: %v", err)
		}
	}
}

func (m *modelRun) checkFollower() {
	if err := m.ro.Refresh(m.ctx); err != nil {
		m.fail("follower refresh: %v", err)
	}
	m.checkAll(m.ro, m.w.stored)
}

func sorted(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkAll walks db forward and backward and compares with want.
func (m *modelRun) checkAll(db *kv.DB, want map[string]string) {
	it, err := db.NewIter(m.ctx, nil)
	if err != nil {
		m.fail("iter: %v", err)
	}
	defer it.Close()
	keys := sorted(want)
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		k := string(it.Key())
		if w, ok := want[k]; !ok || w != string(it.Value()) {
			m.fail("forward walk: %q=%.12q, want %.12q (present %v)", k, it.Value(), w, ok)
		}
		got = append(got, k)
	}
	if it.Error() != nil || !slices.Equal(got, keys) {
		m.fail("forward walk: %d keys, want %d (err %v)", len(got), len(keys), it.Error())
	}
	got = got[:0]
	for ok := it.Last(); ok; ok = it.Prev() {
		got = append(got, string(it.Key()))
	}
	slices.Reverse(got)
	if it.Error() != nil || !slices.Equal(got, keys) {
		m.fail("backward walk: %d keys, want %d (err %v)", len(got), len(keys), it.Error())
	}
}

// checkBounded seeks inside random bounds and compares a few steps.
func (m *modelRun) checkBounded() {
	lo, hi := []byte(m.key()), []byte(m.key())
	if string(lo) > string(hi) {
		lo, hi = hi, lo
	}
	it, err := m.db.NewIter(m.ctx, &kv.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		m.fail("iter: %v", err)
	}
	defer it.Close()
	var keys []string
	for _, k := range sorted(m.w.live) {
		if k >= string(lo) && k < string(hi) {
			keys = append(keys, k)
		}
	}
	seek := m.key()
	i, _ := slices.BinarySearch(keys, seek)
	ok := it.SeekGE([]byte(seek))
	for range 5 {
		if ok != (i < len(keys)) || (ok && string(it.Key()) != keys[i]) {
			m.fail("seekge %q in [%q,%q) then next: at %d of %d, got %v %q", seek, lo, hi, i, len(keys), ok, it.Key())
		}
		if !ok {
			break
		}
		i++
		ok = it.Next()
	}
	p := sort(keys, seek) - 1
	ok = it.SeekLT([]byte(seek))
	for range 5 {
		if ok != (p >= 0) || (ok && string(it.Key()) != keys[p]) {
			m.fail("seeklt %q then prev: at %d, got %v %q", seek, p, ok, it.Key())
		}
		if !ok {
			break
		}
		p--
		ok = it.Prev()
	}
}

func sort(keys []string, k string) int { i, _ := slices.BinarySearch(keys, k); return i }

func runModel(t *testing.T, st store.Store, seed uint64, steps int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	log, err := lancelog.Open(ctx, st, "db.lance", lancelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &modelRun{t: t, ctx: ctx, rng: rng, log: log, walRt: kvtest.NewMemWALRoot(), snaps: &kvtest.MemSnapshots{},
		w: world{live: map[string]string{}, stored: map[string]string{}}}
	m.opts = kv.Options{
		FlushInterval:   -1,
		RefreshInterval: -1,
		// Size-triggered flushes would commit without telling the model.
		WriteBufferSize:    1 << 30,
		LazyValueThreshold: []int{64, 4096, -1}[rng.IntN(3)],
		MaxFragments:       []int{-1, 4, 10}[rng.IntN(3)],
		ValueCacheSize:     []int64{-1, 8 << 10, 0}[rng.IntN(3)],
		Snapshots:          m.snaps,
		SnapshotMinEntries: 1,
	}
	t.Logf("seed %d: lazy threshold %d, max fragments %d, cache %d", seed, m.opts.LazyValueThreshold, m.opts.MaxFragments, m.opts.ValueCacheSize)
	defer func() {
		if t.Failed() {
			t.Logf("rerun with -kvdb.seed=%d", seed)
		}
	}()
	m.open()
	ro, err := kv.Open(ctx, log, &kv.Options{ReadOnly: true, RefreshInterval: -1, LazyValueThreshold: m.opts.LazyValueThreshold})
	if err != nil {
		t.Fatal(err)
	}
	m.ro = ro
	for range steps {
		m.do()
		if t.Failed() {
			return
		}
	}
	if err := ro.Delete(ctx, []byte("x"), nil); !errors.Is(err, kv.ErrNotSupported) {
		t.Fatalf("read-only delete: %v", err)
	}
	if err := m.db.Close(); err != nil {
		t.Fatal(err)
	}
	m.w.committed()
	m.checkFollower()
	ro.Close()
}

// TestModelLance runs random histories through kv.DB on the real Lance
// binding, on a memory store and on a local folder.
func TestModelLance(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 150
	}
	if *flagSteps > 0 {
		steps = *flagSteps
	}
	stores := map[string]func(t *testing.T) store.Store{
		"memory": func(t *testing.T) store.Store { return store.NewMemory() },
		"fsstore": func(t *testing.T) store.Store {
			st, err := fsstore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			switch {
			case *flagSeed != 0:
				runModel(t, mk(t), *flagSeed, steps)
			case *flagFor > 0:
				end := time.Now().Add(*flagFor)
				for time.Now().Before(end) && !t.Failed() {
					seed := uint64(time.Now().UnixNano())
					t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, mk(t), seed, steps) })
				}
			default:
				for _, seed := range []uint64{1, 2, 3} {
					t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, mk(t), seed, steps) })
				}
			}
		})
	}
}
