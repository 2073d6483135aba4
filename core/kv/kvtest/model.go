package kvtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv"
)

// This file holds the randomized model test of package kv, shared by every
// backend that can carry a kv.DB: a random history of writes, batches,
// flushes, compactions, cleanups, reopens, crashes and refreshes runs
// against a real DB and against a plain map, and every read of the DB is
// compared with the map.

// ModelConfig describes a family of model runs: which backend to run on,
// which seeds to use and for how long.
//
// An ordinary run (the one CI does) takes Steps steps (ShortSteps under
// -short) for each of Seeds. A non-zero Seed replaces it with that one
// seed; otherwise a positive Duration replaces it with fresh seeds, one
// after the other, until the time is up. Seed and Duration runs take
// LongSteps steps.
type ModelConfig struct {
	// Open makes a fresh backend for the run of one seed. Per-run choices
	// (option values, say) should come from a source seeded with seed, so
	// that a seed always replays the same run.
	Open func(t *testing.T, seed uint64) ModelBackend

	// Seeds are the fixed seeds of an ordinary run.
	Seeds []uint64
	// Steps is the length of each ordinary run.
	Steps int
	// ShortSteps, when positive, is the length of each ordinary run under
	// -short.
	ShortSteps int

	// Seed, when non-zero, runs this seed alone.
	Seed uint64
	// Duration, when positive and Seed is zero, runs fresh seeds for this
	// long.
	Duration time.Duration
	// LongSteps is the length of a Seed or Duration run (0: Steps).
	LongSteps int

	// SeedFlag is the name of the flag that reruns one seed ("kv.seed");
	// a failing run names it in its rerun hint.
	SeedFlag string

	// Keys is how many ordinary keys the histories draw from (0: 600).
	// Fewer keys mean more overwrites and deletes that hit.
	Keys int
}

// ModelBackend is what one model run writes through.
//
// The harness opens the writer on Log through a Killable (so a simulated
// crash can cut it off) with an in-memory WAL and snapshot store, and a
// read-only follower on Log itself. It sets the options the model relies
// on: no background flushes or refreshes, a write buffer that never fills
// (a flush the model did not ask for would commit behind its back), and a
// snapshot after every commit.
type ModelBackend struct {
	// Log is the operation log under test.
	Log kv.OpLog
	// Options holds the tuning of the writer (lazy value threshold,
	// fragment limit, value cache...). The harness overwrites WAL,
	// Snapshots, SnapshotMinEntries, FlushInterval, RefreshInterval,
	// WriteBufferSize and ReadOnly; the follower takes only
	// LazyValueThreshold from it.
	Options kv.Options
	// Faults, when set, is the store Log lives on. The harness then adds
	// failed commits to the histories: a flush while Faults refuses to
	// create objects must fail with kv.ErrStoreIO (when there was anything
	// to commit) and lose no write. Leave it nil when the backend cannot
	// sit on a FaultStore.
	Faults *FaultStore
}

// RunModel runs the model test described by cfg, each seed as a subtest
// named after it. A failure reports the step, the recent history and the
// flag that replays the seed.
func RunModel(t *testing.T, cfg ModelConfig) {
	t.Helper()
	long := cfg.LongSteps
	if long <= 0 {
		long = cfg.Steps
	}
	switch {
	case cfg.Seed != 0:
		t.Run(fmt.Sprint(cfg.Seed), func(t *testing.T) { runModelSeed(t, &cfg, cfg.Seed, long) })
	case cfg.Duration > 0:
		deadline := time.Now().Add(cfg.Duration)
		for time.Now().Before(deadline) && !t.Failed() {
			seed := uint64(time.Now().UnixNano())
			t.Run(fmt.Sprint(seed), func(t *testing.T) { runModelSeed(t, &cfg, seed, long) })
		}
	default:
		steps := cfg.Steps
		if testing.Short() && cfg.ShortSteps > 0 {
			steps = cfg.ShortSteps
		}
		for _, seed := range cfg.Seeds {
			t.Run(fmt.Sprint(seed), func(t *testing.T) { runModelSeed(t, &cfg, seed, steps) })
		}
	}
}

// modelWrite is one write of a history: a put of value at key, a delete of
// key, or a delete of the range [key, value).
type modelWrite struct {
	op         kv.Op
	key, value string
}

// modelCall is one call that wrote: a Put, Delete, DeleteRange or a whole
// batch, and whether it went through the WAL.
type modelCall struct {
	writes []modelWrite
	logged bool
}

// refModel is the reference the DB is compared with.
type refModel struct {
	live      map[string]string // what the writer handle shows
	committed map[string]string // what the log holds: what followers show
	pending   []modelCall       // written since the last commit
}

func newRefModel() refModel {
	return refModel{live: map[string]string{}, committed: map[string]string{}}
}

func applyWrite(m map[string]string, w modelWrite) {
	switch w.op {
	case kv.OpPut:
		m[w.key] = w.value
	case kv.OpDelete:
		delete(m, w.key)
	case kv.OpDeleteRange:
		for k := range m {
			if k >= w.key && k < w.value {
				delete(m, k)
			}
		}
	}
}

// write records a call the DB accepted.
func (m *refModel) write(c modelCall) {
	for _, w := range c.writes {
		applyWrite(m.live, w)
	}
	m.pending = append(m.pending, c)
}

// commit records that everything written so far reached the log.
func (m *refModel) commit() {
	for _, c := range m.pending {
		for _, w := range c.writes {
			applyWrite(m.committed, w)
		}
	}
	m.pending = nil
}

// crash records that the writer died and a new one replayed its WAL: the
// log now holds what it held before plus every logged pending call, and the
// unlogged calls are gone.
func (m *refModel) crash() {
	for _, c := range m.pending {
		if c.logged {
			for _, w := range c.writes {
				applyWrite(m.committed, w)
			}
		}
	}
	m.pending = nil
	m.live = make(map[string]string, len(m.committed))
	for k, v := range m.committed {
		m.live[k] = v
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// modelRun is one random history.
type modelRun struct {
	t     *testing.T
	ctx   context.Context
	rng   *rand.Rand
	keys  int
	be    ModelBackend
	walRt *MemWALRoot
	snaps *MemSnapshots
	opts  kv.Options

	db     *kv.DB
	handle *Killable
	wal    *MemWAL
	ro     *kv.DB // read-only follower, checked after every commit
	m      refModel
	plan   []modelStep
	total  int // sum of the weights in plan
	step   int
	trace  []string
}

// modelStep is one kind of step and how often it comes up.
type modelStep struct {
	weight int
	run    func()
}

// traceLen is how many recent steps a failure shows.
const traceLen = 80

func runModelSeed(t *testing.T, cfg *ModelConfig, seed uint64, steps int) {
	keys := cfg.Keys
	if keys <= 0 {
		keys = 600
	}
	r := &modelRun{
		t:     t,
		ctx:   context.Background(),
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		keys:  keys,
		be:    cfg.Open(t, seed),
		walRt: NewMemWALRoot(),
		snaps: &MemSnapshots{},
		m:     newRefModel(),
	}
	r.opts = r.be.Options
	r.opts.FlushInterval = -1
	r.opts.RefreshInterval = -1
	r.opts.WriteBufferSize = 1 << 30
	r.opts.Snapshots = r.snaps
	r.opts.SnapshotMinEntries = 1
	r.opts.ReadOnly = false
	t.Logf("seed %d: lazy value threshold %d, max fragments %d, value cache %d, faults %v",
		seed, r.opts.LazyValueThreshold, r.opts.MaxFragments, r.opts.ValueCacheSize, r.be.Faults != nil)
	defer func() {
		if t.Failed() {
			t.Logf("failing seed: %d (rerun with -%s=%d)", seed, cfg.SeedFlag, seed)
		}
	}()
	r.planSteps()

	r.open()
	ro, err := kv.Open(r.ctx, r.be.Log, &kv.Options{ReadOnly: true, RefreshInterval: -1, LazyValueThreshold: r.opts.LazyValueThreshold})
	if err != nil {
		t.Fatalf("open follower: %v", err)
	}
	r.ro = ro
	for range steps {
		r.randomStep()
		if t.Failed() {
			return
		}
	}
	r.finish()
}

// planSteps lists the kinds of steps with their weights (about percent).
func (r *modelRun) planSteps() {
	r.plan = []modelStep{
		{50, r.writeOne},
		{10, r.writeBatch},
		{8, r.gets},
		{7, r.checkIter},
		{5, r.checkBounded},
		{7, r.flush},
		{3, r.compact},
		{2, r.cleanup},
		{3, r.reopen},
		{3, r.crash},
		{2, r.refresh},
	}
	if r.be.Faults != nil {
		r.plan = append(r.plan, modelStep{2, r.failedCommit})
	}
	for _, s := range r.plan {
		r.total += s.weight
	}
}

func (r *modelRun) randomStep() {
	r.step++
	n := r.rng.IntN(r.total)
	for _, s := range r.plan {
		if n < s.weight {
			s.run()
			return
		}
		n -= s.weight
	}
}

// logf adds a line to the trace a failure shows.
func (r *modelRun) logf(format string, args ...any) {
	r.trace = append(r.trace, fmt.Sprintf(format, args...))
	if len(r.trace) > traceLen {
		r.trace = r.trace[1:]
	}
}

func (r *modelRun) fatalf(format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("step %d: %s\nlast steps:\n  %s", r.step, fmt.Sprintf(format, args...), strings.Join(r.trace, "\n  "))
}

// open opens a writer handle with a WAL of its own, adopting the WAL of a
// writer that died.
func (r *modelRun) open() {
	r.handle = &Killable{OpLog: r.be.Log}
	r.wal = r.walRt.Open()
	o := r.opts
	o.WAL = r.wal
	db, err := kv.Open(r.ctx, r.handle, &o)
	if err != nil {
		r.fatalf("open: %v", err)
	}
	r.db = db
}

// key returns a key: mostly one of the ordinary keys, sometimes a short
// run of arbitrary bytes (the empty key included).
func (r *modelRun) key() string {
	if r.rng.IntN(20) == 0 {
		b := make([]byte, r.rng.IntN(4))
		for i := range b {
			b[i] = byte(r.rng.IntN(256))
		}
		return string(b)
	}
	return fmt.Sprintf("k%03d", r.rng.IntN(r.keys))
}

// value returns a value: mostly short, sometimes empty, sometimes long
// enough to be stored lazily under some thresholds or under all of them.
func (r *modelRun) value() string {
	switch r.rng.IntN(12) {
	case 0:
		return ""
	case 1:
		return strings.Repeat(string(rune('a'+r.rng.IntN(26))), 100+r.rng.IntN(5000))
	case 2:
		return strings.Repeat(string(rune('A'+r.rng.IntN(26))), 4097+r.rng.IntN(200))
	}
	return fmt.Sprintf("v%d-%d", r.step, r.rng.IntN(1000))
}

// randomWrite returns a put, a delete or, now and then, a range delete
// whose bounds are sometimes the wrong way round (deleting nothing).
func (r *modelRun) randomWrite() modelWrite {
	switch n := r.rng.IntN(20); {
	case n < 13:
		return modelWrite{op: kv.OpPut, key: r.key(), value: r.value()}
	case n < 18:
		return modelWrite{op: kv.OpDelete, key: r.key()}
	default:
		a, b := r.key(), r.key()
		if a > b && r.rng.IntN(4) != 0 {
			a, b = b, a
		}
		return modelWrite{op: kv.OpDeleteRange, key: a, value: b}
	}
}

// writeOne does one Put, Delete or DeleteRange, sometimes past the WAL.
func (r *modelRun) writeOne() {
	w := r.randomWrite()
	wo := &kv.WriteOptions{DisableWAL: r.rng.IntN(8) == 0}
	r.logf("%v %q %.20q wal=%v", w.op, w.key, w.value, !wo.DisableWAL)
	var err error
	switch w.op {
	case kv.OpPut:
		err = r.db.Put(r.ctx, []byte(w.key), []byte(w.value), wo)
	case kv.OpDelete:
		err = r.db.Delete(r.ctx, []byte(w.key), wo)
	case kv.OpDeleteRange:
		err = r.db.DeleteRange(r.ctx, []byte(w.key), []byte(w.value), wo)
	}
	if err != nil {
		r.fatalf("write: %v", err)
	}
	r.m.write(modelCall{writes: []modelWrite{w}, logged: !wo.DisableWAL})
}

// writeBatch writes a batch of a few writes; a synced batch commits.
func (r *modelRun) writeBatch() {
	b := r.db.NewBatch()
	ws := make([]modelWrite, 1+r.rng.IntN(6))
	for i := range ws {
		w := r.randomWrite()
		ws[i] = w
		switch w.op {
		case kv.OpPut:
			b.Put([]byte(w.key), []byte(w.value))
		case kv.OpDelete:
			b.Delete([]byte(w.key))
		case kv.OpDeleteRange:
			b.DeleteRange([]byte(w.key), []byte(w.value))
		}
	}
	if b.Len() != len(ws) {
		r.fatalf("batch len %d want %d", b.Len(), len(ws))
	}
	wo := &kv.WriteOptions{Sync: r.rng.IntN(4) == 0}
	r.logf("batch of %d sync=%v", len(ws), wo.Sync)
	if err := r.db.Write(r.ctx, b, wo); err != nil {
		r.fatalf("write batch: %v", err)
	}
	r.m.write(modelCall{writes: ws, logged: true})
	if wo.Sync {
		r.m.commit()
		r.checkFollower()
	}
}

// gets reads a few keys one by one, then a MultiGet of some of them (now
// cached, perhaps) and of some fresh ones.
func (r *modelRun) gets() {
	r.logf("gets")
	var keys [][]byte
	for range 5 {
		k := r.key()
		r.checkGet(k)
		keys = append(keys, []byte(k))
	}
	keys = append(keys[:3], []byte(r.key()), []byte(r.key()), []byte(r.key()))
	vals, err := r.db.MultiGet(r.ctx, keys)
	if err != nil {
		r.fatalf("multiget: %v", err)
	}
	if len(vals) != len(keys) {
		r.fatalf("multiget of %d keys returned %d values", len(keys), len(vals))
	}
	for i, k := range keys {
		want, ok := r.m.live[string(k)]
		if ok != (vals[i] != nil) || string(vals[i]) != want {
			r.fatalf("multiget %q = %.20q, want %.20q (present %v)", k, vals[i], want, ok)
		}
	}
}

func (r *modelRun) checkGet(k string) {
	v, err := r.db.Get(r.ctx, []byte(k))
	want, ok := r.m.live[k]
	if !ok {
		if !errors.Is(err, kv.ErrNotFound) {
			r.fatalf("get %q = %.20q, %v; want not found", k, v, err)
		}
		return
	}
	if err != nil || string(v) != want {
		r.fatalf("get %q = %.20q, %v; want %.20q", k, v, err, want)
	}
}

func (r *modelRun) flush() {
	r.logf("flush")
	if err := r.db.Flush(r.ctx); err != nil {
		r.fatalf("flush: %v", err)
	}
	r.m.commit()
	r.checkFollower()
}

func (r *modelRun) compact() {
	r.logf("compact")
	if err := r.db.CompactRange(r.ctx, nil, nil); err != nil {
		r.fatalf("compact: %v", err)
	}
	r.m.commit()
	r.checkFollower()
}

// cleanup flushes and removes every old version of the log; the follower
// must still read the latest one.
func (r *modelRun) cleanup() {
	r.logf("cleanup")
	if err := r.db.Flush(r.ctx); err != nil {
		r.fatalf("flush: %v", err)
	}
	r.m.commit()
	if _, err := r.db.CleanupOldVersions(r.ctx, 0); err != nil {
		r.fatalf("cleanup: %v", err)
	}
	r.checkFollower()
}

// reopen closes the writer cleanly and opens a new one, sometimes without
// the snapshot the old one left.
func (r *modelRun) reopen() {
	r.logf("reopen")
	if err := r.db.Close(); err != nil {
		r.fatalf("close: %v", err)
	}
	r.m.commit()
	if r.rng.IntN(2) == 0 {
		_ = r.snaps.RemoveSnapshot()
	}
	r.open()
	r.checkAll(r.db, r.m.live)
}

// crash kills the writer and its WAL mid-flight; the next writer replays
// the dead one's WAL and commits it.
func (r *modelRun) crash() {
	r.logf("crash")
	r.handle.Kill()
	r.wal.Kill()
	r.m.crash()
	r.open()
	r.checkAll(r.db, r.m.live)
	r.checkFollower()
}

// failedCommit flushes while the store refuses to create objects: with
// writes pending the flush must fail with kv.ErrStoreIO, and the handle
// must keep showing every write.
func (r *modelRun) failedCommit() {
	r.logf("failed commit")
	r.be.Faults.SetFail(func(op, key string) error {
		if op == "create" {
			return errors.New("injected")
		}
		return nil
	})
	err := r.db.Flush(r.ctx)
	r.be.Faults.SetFail(nil)
	if !errors.Is(err, kv.ErrStoreIO) && len(r.m.pending) > 0 {
		r.fatalf("flush under faults: %v", err)
	}
	r.checkAll(r.db, r.m.live)
}

func (r *modelRun) refresh() {
	r.logf("refresh")
	if err := r.db.Refresh(r.ctx); err != nil {
		r.fatalf("refresh: %v", err)
	}
}

// finish ends a run: the follower refuses writes, a clean close commits
// everything and leaves no WAL record behind.
func (r *modelRun) finish() {
	t := r.t
	if err := r.ro.Put(r.ctx, []byte("x"), nil, nil); !errors.Is(err, kv.ErrNotSupported) {
		t.Fatalf("read-only put: %v", err)
	}
	if err := r.ro.Delete(r.ctx, []byte("x"), nil); !errors.Is(err, kv.ErrNotSupported) {
		t.Fatalf("read-only delete: %v", err)
	}
	if err := r.db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	r.m.commit()
	r.checkFollower()
	if err := r.ro.Close(); err != nil {
		t.Fatalf("close follower: %v", err)
	}
	if n := r.walRt.Records(); n != 0 {
		t.Fatalf("%d WAL records left after a clean close", n)
	}
}

// checkFollower refreshes the read-only handle and compares it with the
// committed state.
func (r *modelRun) checkFollower() {
	if err := r.ro.Refresh(r.ctx); err != nil {
		r.fatalf("follower refresh: %v", err)
	}
	r.checkAll(r.ro, r.m.committed)
}

// checkAll walks all of db forward, then backward, and compares both walks
// with want.
func (r *modelRun) checkAll(db *kv.DB, want map[string]string) {
	it, err := db.NewIter(r.ctx, nil)
	if err != nil {
		r.fatalf("new iter: %v", err)
	}
	defer it.Close()
	keys := sortedKeys(want)
	at := func(i int) string {
		if i < 0 || i >= len(keys) {
			return "<end>"
		}
		return keys[i]
	}
	i := 0
	for ok := it.First(); ok; ok = it.Next() {
		if i >= len(keys) || string(it.Key()) != keys[i] || string(it.Value()) != want[keys[i]] {
			r.fatalf("forward walk at %d: got %q=%.20q, want %q=%.20q", i, it.Key(), it.Value(), at(i), want[at(i)])
		}
		i++
	}
	if it.Error() != nil || i != len(keys) {
		r.fatalf("forward walk: %d of %d keys, err %v", i, len(keys), it.Error())
	}
	i = len(keys) - 1
	for ok := it.Last(); ok; ok = it.Prev() {
		if i < 0 || string(it.Key()) != keys[i] || string(it.Value()) != want[keys[i]] {
			r.fatalf("backward walk at %d: got %q=%.20q, want %q=%.20q", i, it.Key(), it.Value(), at(i), want[at(i)])
		}
		i--
	}
	if it.Error() != nil || i != -1 {
		r.fatalf("backward walk stopped at %d, err %v", i, it.Error())
	}
}

// checkIter makes thirty random moves (first, last, seeks, next, prev)
// within random bounds, either of which may be missing, and follows the
// position the iterator must be at in the model's keys.
func (r *modelRun) checkIter() {
	r.logf("iterate")
	var o kv.IterOptions
	if r.rng.IntN(2) == 0 {
		o.LowerBound = []byte(r.key())
	}
	if r.rng.IntN(2) == 0 {
		o.UpperBound = []byte(r.key())
	}
	it, err := r.db.NewIter(r.ctx, &o)
	if err != nil {
		r.fatalf("new iter: %v", err)
	}
	defer it.Close()
	var keys []string
	for _, k := range sortedKeys(r.m.live) {
		if (o.LowerBound == nil || k >= string(o.LowerBound)) && (o.UpperBound == nil || k < string(o.UpperBound)) {
			keys = append(keys, k)
		}
	}
	// pos is an index in keys; -1 is before the first key, len(keys) after
	// the last, and -2 not positioned yet.
	pos := -2
	for range 30 {
		var desc string
		var ok bool
		switch r.rng.IntN(9) {
		case 0:
			desc, ok = "first", it.First()
			pos = 0
		case 1:
			desc, ok = "last", it.Last()
			pos = len(keys) - 1
		case 2:
			k := r.key()
			desc, ok = "seekge "+k, it.SeekGE([]byte(k))
			pos, _ = slices.BinarySearch(keys, k)
		case 3:
			k := r.key()
			desc, ok = "seeklt "+k, it.SeekLT([]byte(k))
			p, _ := slices.BinarySearch(keys, k)
			pos = p - 1
		case 4:
			k := r.key()
			desc, ok = "seekle "+k, it.SeekLE([]byte(k))
			p, found := slices.BinarySearch(keys, k)
			if !found {
				p--
			}
			pos = p
		case 5, 6:
			desc, ok = "next", it.Next()
			if pos >= -1 && pos < len(keys) {
				pos++
			}
		default:
			desc, ok = "prev", it.Prev()
			if pos >= 0 {
				pos--
			}
		}
		want := pos >= 0 && pos < len(keys)
		r.logf("  iter %s -> %v %q", desc, ok, it.Key())
		if ok != want || it.Valid() != want {
			r.fatalf("iter %s (bounds %q..%q): valid=%v want %v (pos %d of %d)", desc, o.LowerBound, o.UpperBound, ok, want, pos, len(keys))
		}
		if want && (string(it.Key()) != keys[pos] || string(it.Value()) != r.m.live[keys[pos]]) {
			r.fatalf("iter %s: %q=%.20q, want %q=%.20q", desc, it.Key(), it.Value(), keys[pos], r.m.live[keys[pos]])
		}
	}
	if it.Error() != nil {
		r.fatalf("iter error: %v", it.Error())
	}
}

// checkBounded takes an iterator with both bounds set, seeks to a random
// key and walks a few keys forward, then seeks below it and walks a few
// keys back.
func (r *modelRun) checkBounded() {
	r.logf("bounded walk")
	lo, hi := r.key(), r.key()
	if lo > hi {
		lo, hi = hi, lo
	}
	it, err := r.db.NewIter(r.ctx, &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
	if err != nil {
		r.fatalf("new iter: %v", err)
	}
	defer it.Close()
	var keys []string
	for _, k := range sortedKeys(r.m.live) {
		if k >= lo && k < hi {
			keys = append(keys, k)
		}
	}
	seek := r.key()
	i, _ := slices.BinarySearch(keys, seek)
	ok := it.SeekGE([]byte(seek))
	for range 5 {
		if ok != (i < len(keys)) || (ok && (string(it.Key()) != keys[i] || string(it.Value()) != r.m.live[keys[i]])) {
			r.fatalf("seekge %q in [%q,%q) then next: at %d of %d, got %v %q", seek, lo, hi, i, len(keys), ok, it.Key())
		}
		if !ok {
			break
		}
		i++
		ok = it.Next()
	}
	p, _ := slices.BinarySearch(keys, seek)
	p--
	ok = it.SeekLT([]byte(seek))
	for range 5 {
		if ok != (p >= 0) || (ok && (string(it.Key()) != keys[p] || string(it.Value()) != r.m.live[keys[p]])) {
			r.fatalf("seeklt %q in [%q,%q) then prev: at %d of %d, got %v %q", seek, lo, hi, p, len(keys), ok, it.Key())
		}
		if !ok {
			break
		}
		p--
		ok = it.Prev()
	}
	if it.Error() != nil {
		r.fatalf("iter error: %v", it.Error())
	}
}
