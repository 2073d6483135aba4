package kv_test

import (
	"bytes"
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
	"github.com/kv0/kv0/core/store"
)

var (
	flagSeed     = flag.Uint64("kv.seed", 0, "seed of the randomized model test (0: the fixed CI seeds)")
	flagDuration = flag.Duration("kv.duration", 0, "run the model test with fresh seeds for this long")
)

// model is the reference: a plain map, plus the operations written since
// the last successful flush (to know what a crash keeps).
type model struct {
	committed map[string]string
	live      map[string]string
	pending   []modelOp
}

type modelOp struct {
	ops    []op
	logged bool
}

type op struct {
	kind       kv.Op
	key, value string
}

func (m *model) apply(dst map[string]string, o op) {
	switch o.kind {
	case kv.OpPut:
		dst[o.key] = o.value
	case kv.OpDelete:
		delete(dst, o.key)
	case kv.OpDeleteRange:
		for k := range dst {
			if k >= o.key && k < o.value {
				delete(dst, k)
			}
		}
	}
}

func (m *model) write(ops []op, logged bool) {
	for _, o := range ops {
		m.apply(m.live, o)
	}
	m.pending = append(m.pending, modelOp{ops: ops, logged: logged})
}

func (m *model) flushed() {
	for _, p := range m.pending {
		for _, o := range p.ops {
			m.apply(m.committed, o)
		}
	}
	m.pending = nil
}

// crashed rebuilds the live state a WAL replay gives: committed state plus
// every logged pending write.
func (m *model) crashed() {
	m.live = clone(m.committed)
	for _, p := range m.pending {
		if p.logged {
			for _, o := range p.ops {
				m.apply(m.live, o)
				m.apply(m.committed, o)
			}
		}
	}
	m.pending = nil
}

func clone(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// harness runs one random history.
type harness struct {
	t     *testing.T
	rng   *rand.Rand
	ctx   context.Context
	st    *kvtest.FaultStore
	log   *kvtest.Log
	root  *kvtest.MemWALRoot
	snaps *kvtest.MemSnapshots
	opts  kv.Options

	db     *kv.DB
	handle *kvtest.Killable
	wal    *kvtest.MemWAL
	ro     *kv.DB // read-only follower checked after flushes
	m      model
	steps  int
	trace  []string
}

func (h *harness) logf(format string, args ...any) {
	h.trace = append(h.trace, fmt.Sprintf(format, args...))
	if len(h.trace) > 80 {
		h.trace = h.trace[1:]
	}
}

func (h *harness) fatalf(format string, args ...any) {
	h.t.Helper()
	h.t.Fatalf("step %d: %s\nlast steps:\n  %s", h.steps, fmt.Sprintf(format, args...), strings.Join(h.trace, "\n  "))
}

func (h *harness) open() {
	h.handle = &kvtest.Killable{OpLog: h.log}
	h.wal = h.root.Open()
	o := h.opts
	o.WAL = h.wal
	db, err := kv.Open(h.ctx, h.handle, &o)
	if err != nil {
		h.fatalf("open: %v", err)
	}
	h.db = db
}

func (h *harness) key() string {
	if h.rng.IntN(20) == 0 {
		n := h.rng.IntN(4)
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(h.rng.IntN(256))
		}
		return string(b)
	}
	return fmt.Sprintf("k%03d", h.rng.IntN(600))
}

func (h *harness) value() string {
	switch h.rng.IntN(10) {
	case 0:
		return ""
	case 1:
		return strings.Repeat(string(rune('a'+h.rng.IntN(26))), 4097+h.rng.IntN(200))
	}
	return fmt.Sprintf("v%d-%d", h.steps, h.rng.IntN(1000))
}

func (h *harness) randOp() op {
	switch r := h.rng.IntN(20); {
	case r < 13:
		return op{kind: kv.OpPut, key: h.key(), value: h.value()}
	case r < 18:
		return op{kind: kv.OpDelete, key: h.key()}
	default:
		a, b := h.key(), h.key()
		if a > b && h.rng.IntN(4) != 0 {
			a, b = b, a
		}
		return op{kind: kv.OpDeleteRange, key: a, value: b}
	}
}

func (h *harness) step() {
	h.steps++
	ctx := h.ctx
	switch r := h.rng.IntN(100); {
	case r < 55:
		o := h.randOp()
		wo := &kv.WriteOptions{DisableWAL: h.rng.IntN(10) == 0}
		h.logf("%v %q %.20q wal=%v", o.kind, o.key, o.value, !wo.DisableWAL)
		var err error
		switch o.kind {
		case kv.OpPut:
			err = h.db.Put(ctx, []byte(o.key), []byte(o.value), wo)
		case kv.OpDelete:
			err = h.db.Delete(ctx, []byte(o.key), wo)
		case kv.OpDeleteRange:
			err = h.db.DeleteRange(ctx, []byte(o.key), []byte(o.value), wo)
		}
		if err != nil {
			h.fatalf("write: %v", err)
		}
		h.m.write([]op{o}, !wo.DisableWAL)
	case r < 65:
		b := h.db.NewBatch()
		n := 1 + h.rng.IntN(6)
		ops := make([]op, n)
		for i := range ops {
			ops[i] = h.randOp()
			switch ops[i].kind {
			case kv.OpPut:
				b.Put([]byte(ops[i].key), []byte(ops[i].value))
			case kv.OpDelete:
				b.Delete([]byte(ops[i].key))
			case kv.OpDeleteRange:
				b.DeleteRange([]byte(ops[i].key), []byte(ops[i].value))
			}
		}
		h.logf("batch of %d", n)
		if b.Len() != n {
			h.fatalf("batch len %d want %d", b.Len(), n)
		}
		wo := &kv.WriteOptions{Sync: h.rng.IntN(5) == 0}
		if err := h.db.Write(ctx, b, wo); err != nil {
			h.fatalf("write batch: %v", err)
		}
		h.m.write(ops, true)
		if wo.Sync {
			h.m.flushed()
			h.checkFollower()
		}
	case r < 72:
		h.logf("get")
		for range 5 {
			h.checkGet(h.key())
		}
		keys := [][]byte{[]byte(h.key()), []byte(h.key()), []byte(h.key())}
		vals, err := h.db.MultiGet(ctx, keys)
		if err != nil {
			h.fatalf("multiget: %v", err)
		}
		for i, k := range keys {
			want, ok := h.m.live[string(k)]
			if ok != (vals[i] != nil) || string(vals[i]) != want {
				h.fatalf("multiget %q = %.20q, want %.20q (present %v)", k, vals[i], want, ok)
			}
		}
	case r < 80:
		h.logf("iterate")
		h.checkIter()
	case r < 87:
		h.logf("flush")
		if err := h.db.Flush(ctx); err != nil {
			h.fatalf("flush: %v", err)
		}
		h.m.flushed()
		h.checkFollower()
	case r < 89:
		h.logf("compact")
		if err := h.db.CompactRange(ctx, nil, nil); err != nil {
			h.fatalf("compact: %v", err)
		}
		h.m.flushed()
		h.checkFollower()
	case r < 91:
		h.logf("cleanup")
		if err := h.db.Flush(ctx); err != nil {
			h.fatalf("flush: %v", err)
		}
		h.m.flushed()
		if _, err := h.db.CleanupOldVersions(ctx, 0); err != nil {
			h.fatalf("cleanup: %v", err)
		}
		h.checkFollower()
	case r < 94:
		h.logf("reopen")
		if err := h.db.Close(); err != nil {
			h.fatalf("close: %v", err)
		}
		h.m.flushed()
		if h.rng.IntN(2) == 0 {
			_ = h.snaps.RemoveSnapshot()
		}
		h.open()
		h.checkAll(h.db, h.m.live)
	case r < 96:
		h.logf("crash")
		h.handle.Kill()
		h.wal.Kill()
		h.m.crashed()
		h.open() // replays the killed writer's log and commits it
		h.checkAll(h.db, h.m.live)
		h.checkFollower()
	case r < 98:
		h.logf("failed commit")
		h.st.SetFail(func(op, key string) error {
			if op == "create" {
				return errors.New("injected")
			}
			return nil
		})
		err := h.db.Flush(ctx)
		h.st.SetFail(nil)
		if !errors.Is(err, kv.ErrStoreIO) {
			if len(h.m.pending) > 0 {
				h.fatalf("flush under faults: %v", err)
			}
		}
		h.checkAll(h.db, h.m.live)
	default:
		h.logf("refresh")
		if err := h.db.Refresh(ctx); err != nil {
			h.fatalf("refresh: %v", err)
		}
	}
}

// checkFollower refreshes the read-only handle and compares it with the
// committed state.
func (h *harness) checkFollower() {
	if err := h.ro.Refresh(h.ctx); err != nil {
		h.fatalf("follower refresh: %v", err)
	}
	h.checkAll(h.ro, h.m.committed)
}

func (h *harness) checkGet(k string) {
	v, err := h.db.Get(h.ctx, []byte(k))
	want, ok := h.m.live[k]
	if !ok {
		if !errors.Is(err, kv.ErrNotFound) {
			h.fatalf("get %q = %.20q, %v; want not found", k, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		h.fatalf("get %q = %.20q, %v; want %.20q", k, v, err, want)
	}
}

// checkAll compares a full forward and backward walk with want.
func (h *harness) checkAll(db *kv.DB, want map[string]string) {
	it, err := db.NewIter(h.ctx, nil)
	if err != nil {
		h.fatalf("new iter: %v", err)
	}
	defer it.Close()
	keys := sortedKeys(want)
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != want[keys[i]] {
			got := string(it.Key())
			exp := "<end>"
			if i < len(keys) {
				exp = keys[i]
			}
			h.fatalf("forward walk at %d: got %q=%.20q want %q", i, got, it.Value(), exp)
		}
		i++
	}
	if it.Error() != nil || i != len(keys) {
		h.fatalf("forward walk: %d of %d keys, err %v", i, len(keys), it.Error())
	}
	i = len(keys) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || string(it.Key()) != keys[i] {
			h.fatalf("backward walk at %d: got %q", i, it.Key())
		}
		i--
	}
	if it.Error() != nil || i != -1 {
		h.fatalf("backward walk stopped at %d, err %v", i, it.Error())
	}
}

// checkIter runs a random positioning sequence with random bounds.
func (h *harness) checkIter() {
	var o kv.IterOptions
	if h.rng.IntN(2) == 0 {
		o.LowerBound = []byte(h.key())
	}
	if h.rng.IntN(2) == 0 {
		o.UpperBound = []byte(h.key())
	}
	it, err := h.db.NewIter(h.ctx, &o)
	if err != nil {
		h.fatalf("new iter: %v", err)
	}
	defer it.Close()
	var keys []string
	for _, k := range sortedKeys(h.m.live) {
		if (o.LowerBound == nil || k >= string(o.LowerBound)) && (o.UpperBound == nil || k < string(o.UpperBound)) {
			keys = append(keys, k)
		}
	}
	pos := -2 // -2 unpositioned, -1 before first, len(keys) after last
	var desc string
	for range 30 {
		var ok bool
		switch h.rng.IntN(9) {
		case 0:
			desc, ok = "first", it.First()
			pos = 0
			if len(keys) == 0 {
				pos = len(keys)
			}
		case 1:
			desc, ok = "last", it.Last()
			pos = len(keys) - 1
		case 2:
			k := h.key()
			desc, ok = "seekge "+k, it.SeekGE([]byte(k))
			pos, _ = slices.BinarySearch(keys, k)
		case 3:
			k := h.key()
			desc, ok = "seeklt "+k, it.SeekLT([]byte(k))
			p, _ := slices.BinarySearch(keys, k)
			pos = p - 1
		case 4:
			k := h.key()
			desc, ok = "seekle "+k, it.SeekLE([]byte(k))
			p, found := slices.BinarySearch(keys, k)
			if found {
				pos = p
			} else {
				pos = p - 1
			}
		case 5, 6:
			desc, ok = "next", it.Next()
			switch {
			case pos == -1:
				pos = 0
				if len(keys) == 0 {
					pos = len(keys)
				}
			case pos >= 0 && pos < len(keys):
				pos++
			}
		default:
			desc, ok = "prev", it.Prev()
			switch {
			case pos == len(keys) && pos > 0:
				pos = len(keys) - 1
			case pos >= 0 && pos < len(keys):
				pos--
			case pos == len(keys):
				pos = -1
			}
		}
		want := pos >= 0 && pos < len(keys)
		h.logf("  iter %s -> %v %q", desc, ok, it.Key())
		if ok != want || it.Valid() != want {
			h.fatalf("iter %s (bounds %q..%q): valid=%v want %v (pos %d of %d)", desc, o.LowerBound, o.UpperBound, ok, want, pos, len(keys))
		}
		if want && (string(it.Key()) != keys[pos] || string(it.Value()) != h.m.live[keys[pos]]) {
			h.fatalf("iter %s: key %q want %q", desc, it.Key(), keys[pos])
		}
		if !want && pos > len(keys) {
			pos = len(keys)
		}
	}
	if it.Error() != nil {
		h.fatalf("iter error: %v", it.Error())
	}
}

func runModel(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	thresholds := []int{16, 4096, -1}
	h := &harness{
		t:     t,
		rng:   rng,
		ctx:   context.Background(),
		st:    &kvtest.FaultStore{Store: store.NewMemory()},
		root:  kvtest.NewMemWALRoot(),
		snaps: &kvtest.MemSnapshots{},
		m:     model{committed: map[string]string{}, live: map[string]string{}},
	}
	h.log = kvtest.NewLog(h.st, "db/", nil)
	h.opts = kv.Options{
		FlushInterval:      -1,
		RefreshInterval:    -1,
		WriteBufferSize:    1 << 30,
		LazyValueThreshold: thresholds[rng.IntN(len(thresholds))],
		MaxFragments:       []int{-1, 3, 8}[rng.IntN(3)],
		Snapshots:          h.snaps,
		SnapshotMinEntries: 1,
		ValueCacheSize:     []int64{-1, 1 << 14, 0}[rng.IntN(3)],
	}
	t.Logf("seed %d: threshold %d, max fragments %d", seed, h.opts.LazyValueThreshold, h.opts.MaxFragments)
	h.open()
	ro, err := kv.Open(h.ctx, h.log, &kv.Options{ReadOnly: true, RefreshInterval: -1, LazyValueThreshold: h.opts.LazyValueThreshold})
	if err != nil {
		t.Fatal(err)
	}
	h.ro = ro
	defer func() {
		if t.Failed() {
			t.Logf("failing seed: %d (rerun with -kv.seed=%d)", seed, seed)
		}
	}()
	for range steps {
		h.step()
		if t.Failed() {
			return
		}
	}
	if err := h.ro.Put(h.ctx, []byte("x"), nil, nil); !errors.Is(err, kv.ErrNotSupported) {
		t.Fatalf("read-only put: %v", err)
	}
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	h.m.flushed()
	h.checkFollower()
	if err := h.ro.Close(); err != nil {
		t.Fatal(err)
	}
	if n := h.root.Records(); n != 0 {
		t.Fatalf("%d WAL records left after a clean close", n)
	}
}

func TestModel(t *testing.T) {
	if *flagSeed != 0 {
		runModel(t, *flagSeed, 3000)
		return
	}
	if *flagDuration > 0 {
		deadline := time.Now().Add(*flagDuration)
		for i := 0; time.Now().Before(deadline); i++ {
			seed := uint64(time.Now().UnixNano())
			t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed, 3000) })
			if t.Failed() {
				return
			}
		}
		return
	}
	steps := 2000
	if testing.Short() {
		steps = 300
	}
	for _, seed := range []uint64{1, 2, 3, 4, 5, 6} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, seed, steps) })
	}
}

var _ = bytes.Equal
