package tracking

import (
	"bytes"
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

// randomLevel is the level of a random series of n points (gaps, NaN and
// ±Inf, epochs with and without values, timestamps going back).
func randomLevel(rng *rand.Rand, sid uint64, n, maxPoints int) (MetricData, levelEntry) {
	seg := pointSeg{step: make([]int64, n), val: make([]float64, n), ts64: make([]int64, n), epv: make([]int64, n)}
	step := rng.Int64N(1000) - 500
	for i := range n {
		step += 1 + rng.Int64N(3)*rng.Int64N(2)
		seg.step[i] = step
		switch rng.IntN(30) {
		case 0:
			seg.val[i] = math.NaN()
		case 1:
			seg.val[i] = math.Inf(1 - 2*rng.IntN(2))
		default:
			seg.val[i] = rng.NormFloat64() * 1e3
		}
		seg.ts64[i] = 1_700_000_000_000_000 + int64(i)*1000 - rng.Int64N(5000)
		seg.epv[i] = NoEpoch
		if rng.IntN(2) == 0 {
			seg.epv[i] = int64(i / 100)
		}
	}
	m := sampleSeries(SeriesID(sid), seg, ReadOptions{MaxPoints: maxPoints})
	return m, levelEntry{sid: sid, points: uint64(n), firstStep: seg.step[0], last: seg.step[n-1]}
}

// A level decodes to the read it was made from; any damage to it is
// ErrCorrupt, never other points.
func TestLevelCodec(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 3))
	for range 50 {
		mp := 4 + rng.IntN(300)
		n := mp + 1 + rng.IntN(5000)
		m, e := randomLevel(rng, rng.Uint64(), n, mp)
		b := encodeLevel(e.sid, m)
		got, err := decodeLevel(b, e, mp)
		if err != nil {
			t.Fatalf("%d points at %d: %v", n, mp, err)
		}
		if !sameData(got, m) {
			t.Fatalf("%d points at %d: the level decodes to another read", n, mp)
		}
		for _, at := range []int{0, 8, 9, len(b) / 3, len(b) / 2, len(b) - 9, len(b) - 1} {
			c := bytes.Clone(b)
			c[at] ^= 1 << rng.IntN(8)
			if _, err := decodeLevel(c, e, mp); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("byte %d of %d damaged: %v, want ErrCorrupt", at, len(b), err)
			}
		}
		if _, err := decodeLevel(b[:len(b)-1], e, mp); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut short: %v", err)
		}
		other := e
		other.points++
		if _, err := decodeLevel(b, other, mp); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("an index entry that disagrees: %v", err)
		}
	}
}

func TestLevelIndexCodec(t *testing.T) {
	entries := []levelEntry{{sid: 3, points: 5000, firstStep: -2, last: 9000, off: 0, length: 900},
		{sid: 70, points: 1001, firstStep: 0, last: 1000, off: 900, length: 400}}
	b := encodeLevelIndex(1000, entries)
	x, ok, err := decodeLevelIndex(b)
	if err != nil || !ok || x.maxPoints != 1000 || len(x.entries) != 2 || x.entries[1] != entries[1] {
		t.Fatalf("round trip: %+v %v %v", x, ok, err)
	}
	if _, ok, err := decodeLevelIndex([]byte("kv0sidx1....")); ok || err != nil {
		t.Fatalf("another buffer: ok %v err %v", ok, err)
	}
	for at := range len(b) {
		c := bytes.Clone(b)
		c[at] ^= 0x10
		if _, ok, err := decodeLevelIndex(c); at >= len(lvlIndexMagic) && (!ok || !errors.Is(err, ErrCorrupt)) {
			t.Fatalf("byte %d damaged: ok %v, err %v", at, ok, err)
		}
	}
	bad := append([]levelEntry(nil), entries...)
	bad[0], bad[1] = bad[1], bad[0]
	if _, _, err := decodeLevelIndex(encodeLevelIndex(1000, bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("entries out of order: %v", err)
	}
}

// A downsampled read of a long optimized series comes from its level: a
// cold reader fetches a small part of what decoding the series costs, and
// gets the same answer.
func TestLevelReadCost(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := openTest(t, st, RepoOptions{FlushInterval: -1})
	const n = 60_000
	runID := trackSeries(t, r, map[string]int{"loss": n, "acc": 3000, "lr": n / 2})
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	ids := []SeriesID{seriesID(runID, "loss", "{}"), seriesID(runID, "lr", "{}"), seriesID(runID, "acc", "{}")}
	read := func(opts ReadOptions) ([]MetricData, store.Counters, int64) {
		ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		before := st.Counters()
		out, err := ro.ReadMany(ctx, ids, opts)
		if err != nil {
			t.Fatal(err)
		}
		return out, st.Counters().Sub(before), ro.levelHits.Load()
	}
	full, _, _ := read(ReadOptions{})
	got, _, hits := read(ReadOptions{MaxPoints: levelPoints})
	if hits != 2 { // loss and lr; acc is too short for a level
		t.Fatalf("%d series read from levels, want 2", hits)
	}
	for i := range ids {
		if want := sampledRef(full[i], levelPoints); !sameData(got[i], want) {
			t.Fatalf("series %d: the level's answer differs from the decoded read's", i)
		}
	}
	// The two long series alone: through their levels, and decoded.
	ids = ids[:2]
	_, fullCost, _ := read(ReadOptions{MaxPoints: levelPoints + 1})
	_, cost, _ := read(ReadOptions{MaxPoints: levelPoints})
	if cost.ReadBytes*10 > fullCost.ReadBytes {
		t.Fatalf("read %d bytes through the levels, %d decoding every point", cost.ReadBytes, fullCost.ReadBytes)
	}
	// Another MaxPoints, or a step range inside the series, decodes.
	if _, _, hits := read(ReadOptions{MaxPoints: levelPoints + 1}); hits != 0 {
		t.Fatalf("MaxPoints %d answered from levels", levelPoints+1)
	}
	if _, _, hits := read(ReadOptions{MaxPoints: levelPoints, Steps: &StepRange{From: 1, To: n}}); hits != 0 {
		t.Fatal("a step range that leaves points out answered from levels")
	}
	if _, _, hits := read(ReadOptions{MaxPoints: levelPoints, Steps: &StepRange{From: 0, To: n}}); hits != 2 {
		t.Fatal("a step range holding every step did not use the levels")
	}
	t.Logf("levels: %d bytes in %d requests; decoding: %d bytes in %d requests", cost.ReadBytes, cost.Reads, fullCost.ReadBytes, fullCost.Reads)
}

// A damaged level fails the read with ErrCorrupt naming the fragment,
// never wrong points.
func TestCorruptLevel(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := openTest(t, st, RepoOptions{FlushInterval: -1})
	runID := trackSeries(t, r, map[string]int{"loss": 20_000})
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := lance.Open(ctx, st, "repo/"+MetricsTable, lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, f := range d.Fragments() {
		lv, err := d.DataFileBuffer(ctx, f.ID, levelDataBufferID)
		if err != nil || len(lv) < 64 {
			continue
		}
		key := "repo/" + MetricsTable + "/" + f.Files[0].Path
		b := make([]byte, f.Files[0].Size)
		if err := st.ReadAt(ctx, key, b, 0); err != nil {
			t.Fatal(err)
		}
		at := bytes.Index(b, lv[:64])
		if at < 0 {
			t.Fatal("the level buffer is not in its file")
		}
		b[at+len(lv)/2] ^= 0x08
		if err := st.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
		damaged++
	}
	if damaged == 0 {
		t.Fatal("no data file holds levels")
	}
	ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.ReadMany(ctx, []SeriesID{seriesID(runID, "loss", "{}")}, ReadOptions{MaxPoints: levelPoints})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "metrics fragment") {
		t.Fatalf("read through a damaged level: %v, want ErrCorrupt naming the fragment", err)
	}
}

// FuzzLevel checks that any bytes decode to ErrCorrupt or to a read whose
// steps increase, within the index entry's bounds.
func FuzzLevel(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	m, e := randomLevel(rng, 77, 400, 20)
	f.Add(encodeLevel(e.sid, m), e.points, e.firstStep, e.last)
	f.Add([]byte{}, uint64(30), int64(0), int64(10))
	f.Fuzz(func(t *testing.T, b []byte, points uint64, first, last int64) {
		e := levelEntry{sid: 77, points: points, firstStep: first, last: last}
		m, err := decodeLevel(b, e, 20)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if m.Len() < 2 || m.Len() > 20 || m.Steps[0] != first || m.Steps[m.Len()-1] != last {
			t.Fatalf("decoded %d points, steps %v", m.Len(), m.Steps)
		}
		for i := 1; i < m.Len(); i++ {
			if m.Steps[i] <= m.Steps[i-1] {
				t.Fatalf("steps out of order: %v", m.Steps)
			}
		}
	})
}

// FuzzLevelIndex checks that any buffer decodes to an error, to "not an
// index", or to ordered entries that re-encode to the same bytes.
func FuzzLevelIndex(f *testing.F) {
	f.Add(encodeLevelIndex(1000, []levelEntry{{sid: 3, points: 5000, firstStep: 1, last: 9, length: 9}}))
	f.Add([]byte(lvlIndexMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, ok, err := decodeLevelIndex(b)
		if err != nil {
			if !ok || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v with ok %v", err, ok)
			}
			return
		}
		if !ok {
			return
		}
		if again := encodeLevelIndex(x.maxPoints, x.entries); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// A read-only handle with VersionTTL reads the version it confirmed moments
// ago without asking the store, until LatestVersions finds a newer one.
func TestVersionTTL(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w := openTest(t, st, RepoOptions{FlushInterval: -1})
	if _, err := w.StartRun(ctx, RunSpec{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	runs := func(r *Repo) int {
		l, err := r.Runs(ctx, RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	ttl := openTest(t, st, RepoOptions{ReadOnly: true, VersionTTL: time.Hour})
	plain := openTest(t, st, RepoOptions{ReadOnly: true})
	if runs(ttl) != 1 || runs(plain) != 1 {
		t.Fatal("one run expected")
	}
	before := st.Counters()
	if runs(ttl) != 1 {
		t.Fatal("one run expected")
	}
	if n := st.Counters().Sub(before).Requests(); n != 0 {
		t.Fatalf("a read within the TTL made %d requests, want 0", n)
	}
	if _, err := w.StartRun(ctx, RunSpec{ID: "b"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if runs(plain) != 2 {
		t.Fatal("a handle without a TTL misses the new run")
	}
	if runs(ttl) != 1 {
		t.Fatal("within the TTL the handle should keep the version it confirmed")
	}
	if _, err := ttl.LatestVersions(ctx); err != nil {
		t.Fatal(err)
	}
	if runs(ttl) != 2 {
		t.Fatal("after LatestVersions found a newer version, a read still used the old one")
	}
	// A writable handle ignores the TTL: it sees what others commit.
	w2 := openTest(t, st, RepoOptions{FlushInterval: -1, VersionTTL: time.Hour})
	if runs(w2) != 2 {
		t.Fatal("two runs expected")
	}
	if _, err := w.StartRun(ctx, RunSpec{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if runs(w2) != 3 {
		t.Fatal("a writable handle kept a version past another writer's commit")
	}
}

// After Prefetch, a read-only handle with a VersionTTL lists runs and
// series and reads a level without a request: Prefetch opened every table
// and its (small) data files at once.
func TestPrefetch(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w := openTest(t, st, RepoOptions{FlushInterval: -1})
	runID := trackSeries(t, w, map[string]int{"loss": 10_000})
	if _, err := w.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	ro := openTest(t, st, RepoOptions{ReadOnly: true, VersionTTL: time.Hour})
	if err := ro.Prefetch(ctx); err != nil {
		t.Fatal(err)
	}
	before := st.Counters()
	if l, err := ro.Runs(ctx, RunFilter{}); err != nil || len(l) != 1 {
		t.Fatalf("runs: %v %v", l, err)
	}
	if l, err := ro.AllSeries(ctx, runID); err != nil || len(l) != 1 {
		t.Fatalf("series: %v %v", l, err)
	}
	out, err := ro.ReadMany(ctx, []SeriesID{seriesID(runID, "loss", "{}")}, ReadOptions{MaxPoints: levelPoints})
	if err != nil || out[0].Len() == 0 {
		t.Fatal(err)
	}
	if n := st.Counters().Sub(before).Requests(); n != 0 {
		t.Fatalf("reads after Prefetch made %d requests, want 0", n)
	}
}
