package tracking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
)

// sampledRef is the answer of a downsampled read, computed from its
// contract: the full read (MaxPoints 0) with the same ranges, then the
// indexes and buckets bruteBuckets derives from Downsample's definition.
func sampledRef(full MetricData, maxPoints int) MetricData {
	keep, spans := bruteBuckets(full.Values, maxPoints)
	n := len(keep)
	m := MetricData{SeriesID: full.SeriesID, Steps: make([]int64, n), Epochs: make([]int64, n),
		Timestamps: make([]time.Time, n), Values: make([]float64, n)}
	for k, j := range keep {
		m.Steps[k], m.Epochs[k], m.Timestamps[k], m.Values[k] = full.Steps[j], full.Epochs[j], full.Timestamps[j], full.Values[j]
	}
	if full.Len() > maxPoints {
		m.Buckets = make([]Bucket, len(spans))
		for k, sp := range spans {
			m.Buckets[k] = Bucket{FirstStep: full.Steps[sp.from], LastStep: full.Steps[sp.to-1], Points: sp.to - sp.from, NonFinite: sp.nonFinite}
		}
	}
	return m
}

// bitsOf is m with its values as bit patterns, so that reflect.DeepEqual
// compares NaNs (and the sign of zeros) exactly.
func bitsOf(m MetricData) (MetricData, []uint64) {
	b := make([]uint64, len(m.Values))
	for i, v := range m.Values {
		b[i] = math.Float64bits(v)
	}
	m.Values = nil
	return m, b
}

func sameData(a, b MetricData) bool {
	am, ab := bitsOf(a)
	bm, bb := bitsOf(b)
	return reflect.DeepEqual(am, bm) && slices.Equal(ab, bb)
}

type refPoint struct {
	v     float64
	epoch int64
	ts    time.Time
}

// TestReadSampledModel writes random series (gaps in the steps, NaN and
// ±Inf, steps written again and out of order before and after Optimize,
// unsorted fragments after it, deleted runs sharing sorted fragments) and
// checks every downsampled read, with and without step and time ranges,
// against the full read followed by the documented downsampling, and the
// full read against a model of the points (the last write of a step wins).
func TestReadSampledModel(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { readSampledModel(t, testSeed(t), false) })
	}
}

// TestReadLevelsModel is TestReadSampledModel with the downsampled levels
// that Optimize stores (levels.go) made small, so that most series get
// one, in sorted files small enough that series span several of them: a
// read answered from a level must equal the read that decodes every point,
// at every stage (appends after Optimize, steps written again, deleted
// runs, Optimize again).
func TestReadLevelsModel(t *testing.T) {
	for i := range 4 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { readSampledModel(t, testSeed(t), true) })
	}
}

func readSampledModel(t *testing.T, seed uint64, levels bool) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 14))
	if levels {
		oldPoints, oldMin, oldRows := levelPoints, levelMinPoints, sortedMaxRows
		levelPoints, levelMinPoints, sortedMaxRows = 4+rng.IntN(60), 100+rng.IntN(400), 300+rng.IntN(3000)
		t.Cleanup(func() { levelPoints, levelMinPoints, sortedMaxRows = oldPoints, oldMin, oldRows })
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r, err := OpenRepo(ctx, store.NewMemory(), "m", RepoOptions{FlushRows: 50 + rng.IntN(3000), FlushInterval: -1,
		MaxFragments: 2 + rng.IntN(40), Now: func() time.Time { return base }})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type series struct {
		id   SeriesID
		run  *Run
		name string
		last int64
	}
	model := map[SeriesID]map[int64]refPoint{}
	var all []*series
	deleted := map[SeriesID]bool{}
	runs := map[string][]*series{}
	for k := range 2 + rng.IntN(3) {
		run, err := r.StartRun(ctx, RunSpec{ID: fmt.Sprintf("run%d", k)})
		if err != nil {
			t.Fatal(err)
		}
		for m := range 1 + rng.IntN(3) {
			name := fmt.Sprintf("m%d", m)
			s := &series{id: seriesID(run.ID(), name, "{}"), run: run, name: name, last: -1}
			all = append(all, s)
			runs[run.ID()] = append(runs[run.ID()], s)
			model[s.id] = map[int64]refPoint{}
		}
	}
	vals := randomSeries(rng, 1<<14)
	track := func(s *series, step int64) {
		p := refPoint{v: vals[rng.IntN(len(vals))], epoch: NoEpoch, ts: base.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)}
		opts := TrackOptions{Step: &step, Time: p.ts}
		if rng.IntN(3) > 0 {
			e := step / 100
			opts.Epoch, p.epoch = &e, e
		}
		if err := s.run.Track(p.v, s.name, opts); err != nil {
			t.Fatal(err)
		}
		model[s.id][step] = p
		s.last = max(s.last, step)
	}
	// write appends to each live series, with gaps and, when again is
	// set, some steps written again or out of order.
	write := func(again bool) {
		for _, s := range all {
			if deleted[s.id] {
				continue
			}
			for range rng.IntN(3000) {
				switch {
				case again && s.last >= 0 && rng.IntN(10) == 0:
					track(s, rng.Int64N(s.last+1))
				case rng.IntN(20) == 0:
					track(s, s.last+2+rng.Int64N(500)) // a gap
				default:
					track(s, s.last+1)
				}
			}
		}
	}
	check := func(stage string) {
		hits := r.levelHits.Load()
		ids := []SeriesID{all[rng.IntN(len(all))].id, 12345} // an unknown series too
		for _, s := range all {
			if rng.IntN(2) == 0 {
				ids = append(ids, s.id)
			}
		}
		defer func() {
			if levels && stage == "optimized" {
				// Every series long enough has a level, and nothing
				// was written since: the reads of those among ids must
				// have used one.
				long := 0
				for _, s := range all {
					if len(model[s.id]) >= levelMinPoints && len(model[s.id]) > levelPoints && slices.Contains(ids, s.id) {
						long++
					}
				}
				if long > 0 && r.levelHits.Load() == hits {
					t.Fatalf("%s: no read was answered from a level (%d series of %d+ points read)", stage, long, levelMinPoints)
				}
			}
		}()
		for it := range 6 {
			// The first read of each check is the whole series (the
			// dashboard's read, the one levels answer); the rest take
			// random ranges. The first's ranges are still drawn, so a
			// seed's later draws are what they were.
			var opts ReadOptions
			switch rng.IntN(4) {
			case 0:
				from := rng.Int64N(3000) - 100
				opts.Steps = &StepRange{From: from, To: from + rng.Int64N(8000)}
			case 1:
				opts.Steps = &StepRange{From: -1 - rng.Int64N(2), To: 1 << 40} // every step
			}
			if rng.IntN(3) == 0 {
				from := base.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)
				opts.Time = &TimeRange{From: from, To: from.Add(time.Duration(rng.IntN(1e6)) * time.Millisecond)}
			}
			if it == 0 {
				opts = ReadOptions{}
			}
			full, err := r.ReadMany(ctx, ids, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				want := modelRead(id, model[id], deleted[id], opts)
				if !sameData(full[i], want) {
					t.Fatalf("%s: full read of %d (%+v): %d points, model %d", stage, id, opts, full[i].Len(), want.Len())
				}
			}
			if it == 0 {
				checkReserve(t, r, stage, ids, opts, full)
			}
			for _, mp := range []int{1, 2, 3, 4, 5 + rng.IntN(40), 100 + rng.IntN(2000), 1000, 1 << 20, levelPoints, levelPoints} {
				opts.MaxPoints = mp
				got, err := r.ReadMany(ctx, ids, opts)
				if mp == 2 || mp == 3 {
					// No room for a bucket: refused, never a line without its spikes.
					if !errors.Is(err, ErrInvalid) {
						t.Fatalf("%s: MaxPoints %d: %v, want ErrInvalid", stage, mp, err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				for i := range ids {
					if want := sampledRef(full[i], mp); !sameData(got[i], want) {
						t.Fatalf("%s: read of %d with %+v:\n got %+v\nwant %+v", stage, ids[i], opts, got[i], want)
					}
				}
				if it == 0 && (mp == 1000 || mp == levelPoints) {
					checkReserve(t, r, stage, ids, opts, got)
				}
			}
		}
	}
	flush := func() {
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	write(false)
	check("buffered and flushed")
	flush()
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	check("optimized")
	for round := range 3 {
		write(rng.IntN(2) == 0) // the tail: unsorted fragments
		flush()
		check(fmt.Sprint("tail ", round))
		if rng.IntN(2) == 0 {
			// A deleted run leaves deletions in the sorted fragments the
			// other runs' series share.
			for id, l := range runs {
				if len(runs) > 1 && rng.IntN(3) == 0 {
					if err := r.DeleteRuns(ctx, []string{id}); err != nil {
						t.Fatal(err)
					}
					for _, s := range l {
						deleted[s.id] = true
					}
					delete(runs, id)
					check("deleted " + id)
					break
				}
			}
		}
		if rng.IntN(2) == 0 {
			if _, err := r.Optimize(ctx); err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprint("optimized ", round))
		}
	}
}

// errOverBudget is the refusal of checkReserve's budgets.
var errOverBudget = errors.New("over budget")

// checkReserve reads ids with opts again, telling a budget of the bytes
// held (ReadOptions.Reserve): the answer is want's, the bytes told cover
// at least the points returned, and a budget of one byte less than what
// the read told of stops it with the budget's error.
func checkReserve(t *testing.T, r *Repo, stage string, ids []SeriesID, opts ReadOptions, want []MetricData) {
	t.Helper()
	ctx := context.Background()
	var told atomic.Int64
	opts.Reserve = func(n int64) error {
		if n <= 0 {
			t.Errorf("Reserve(%d)", n)
		}
		told.Add(n)
		return nil
	}
	got, err := r.ReadMany(ctx, ids, opts)
	if err != nil {
		t.Fatal(err)
	}
	var points int64
	for i := range ids {
		if !sameData(got[i], want[i]) {
			t.Fatalf("%s: the read of %d with a budget (%+v) differs", stage, ids[i], opts)
		}
		points += int64(got[i].Len())
	}
	total := told.Load()
	if total < points*pointBytes {
		t.Fatalf("%s: the read of %d points (%+v) told of %d bytes", stage, points, opts, total)
	}
	if total == 0 {
		return
	}
	var left atomic.Int64
	left.Store(total - 1)
	opts.Reserve = func(n int64) error {
		if left.Add(-n) < 0 {
			return errOverBudget
		}
		return nil
	}
	if _, err := r.ReadMany(ctx, ids, opts); !errors.Is(err, errOverBudget) {
		t.Fatalf("%s: the read (%+v) with a budget of %d bytes of the %d it told of: %v", stage, opts, total-1, total, err)
	}
}

// modelRead is the full read of one series from the model.
func modelRead(id SeriesID, pts map[int64]refPoint, deleted bool, opts ReadOptions) MetricData {
	m := MetricData{SeriesID: id}
	var steps []int64
	if !deleted {
		for s := range pts {
			steps = append(steps, s)
		}
	}
	slices.Sort(steps)
	for _, s := range steps {
		p := pts[s]
		if opts.Steps != nil && (s < opts.Steps.From || s >= opts.Steps.To) {
			continue
		}
		if opts.Time != nil && (p.ts.Before(opts.Time.From) || !p.ts.Before(opts.Time.To)) {
			continue
		}
		m.Steps = append(m.Steps, s)
		m.Epochs = append(m.Epochs, p.epoch)
		m.Timestamps = append(m.Timestamps, time.UnixMicro(p.ts.UnixMicro()).UTC())
		m.Values = append(m.Values, p.v)
	}
	if m.Steps == nil {
		m.Steps, m.Epochs, m.Timestamps, m.Values = []int64{}, []int64{}, []time.Time{}, []float64{}
	}
	return m
}

// segOfLen is an ordered segment of n points with NaNs and a gap.
func segOfLen(n int) pointSeg {
	rng := rand.New(rand.NewPCG(1, 2))
	s := pointSeg{step: make([]int64, n), val: randomSeries(rng, n), ts64: make([]int64, n), epv: make([]int64, n)}
	for i := range n {
		s.step[i] = int64(i + i/1000)
		s.ts64[i] = 1_700_000_000_000_000 + int64(i)
		s.epv[i] = int64(i / 100)
	}
	return s
}

// TestSampleSeriesAllocs checks that choosing and copying out the points
// of a downsampled series costs a fixed number of allocations (the chosen
// indexes, the buckets and the four output columns in three slices),
// however long the series.
func TestSampleSeriesAllocs(t *testing.T) {
	for _, n := range []int{10_000, 100_000} {
		p := segOfLen(n)
		if j := joinSegs([]pointSeg{p}); !p.ordered() || &j.step[0] != &p.step[0] {
			t.Fatal("the segment is not used as it is")
		}
		allocs := testing.AllocsPerRun(20, func() {
			m := sampleSeries(7, joinSegs([]pointSeg{p}), ReadOptions{MaxPoints: 1000})
			if m.Len() == 0 || m.Len() > 1000 {
				t.Fatal(m.Len())
			}
		})
		if allocs > 6 {
			t.Errorf("%d points: %v allocations per downsampled series, want at most 6", n, allocs)
		}
	}
}

// BenchmarkSampleSeries is the in-memory part of a downsampled read of
// 100k points to 1,000: no copy of the series, only of what is kept.
func BenchmarkSampleSeries(b *testing.B) {
	p := segOfLen(100_000)
	b.ReportAllocs()
	for b.Loop() {
		sampleSeries(7, joinSegs([]pointSeg{p}), ReadOptions{MaxPoints: 1000})
	}
}

// TestReadSampledLongSeries reads series longer than a page (their rows
// come back in several batches) after Optimize, next to short ones, and
// compares them with the reference.
func TestReadSampledLongSeries(t *testing.T) {
	ctx := context.Background()
	r := openTest(t, store.NewMemory(), RepoOptions{FlushInterval: -1})
	run, err := r.StartRun(ctx, RunSpec{Name: "long"})
	if err != nil {
		t.Fatal(err)
	}
	vals := randomSeries(rand.New(rand.NewPCG(3, 4)), 300_000)
	lens := map[string]int{"a": 10, "b": 300_000, "c": 1, "d": 140_000}
	for s := range 300_000 {
		for _, name := range []string{"a", "b", "c", "d"} {
			if s < lens[name] {
				if err := run.Track(vals[(s*7+len(name))%len(vals)], name); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []SeriesID
	for _, name := range []string{"d", "a", "b", "c"} {
		ids = append(ids, seriesID(run.ID(), name, "{}"))
	}
	for _, opts := range []ReadOptions{{}, {Steps: &StepRange{From: 100_000, To: 200_000}}} {
		full, err := r.ReadMany(ctx, ids, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, mp := range []int{1, 7, 1000} {
			opts.MaxPoints = mp
			got, err := r.ReadMany(ctx, ids, opts)
			if err != nil {
				t.Fatal(err)
			}
			for i := range ids {
				if want := sampledRef(full[i], mp); !sameData(got[i], want) {
					t.Fatalf("series %d with %+v: %d points, want %d", i, opts, got[i].Len(), want.Len())
				}
			}
		}
	}
}
