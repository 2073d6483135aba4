package tracking

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kv0/kv0/core/store"
)

// randomSeries returns n values mixing finite runs, spikes, NaN and ±Inf
// (sometimes whole stretches of them) in proportions drawn per series.
func randomSeries(rng *rand.Rand, n int) []float64 {
	pNaN, pInf, pSpike := rng.Float64()*0.3, rng.Float64()*0.2, rng.Float64()*0.05
	if rng.IntN(4) == 0 {
		pNaN = 0.95 // mostly non-finite: buckets with no finite value at all
	}
	vals := make([]float64, n)
	for i := range vals {
		switch r := rng.Float64(); {
		case r < pNaN:
			vals[i] = math.NaN()
		case r < pNaN+pInf:
			vals[i] = math.Inf(1 - 2*rng.IntN(2))
		case r < pNaN+pInf+pSpike:
			vals[i] = (rng.Float64() - 0.5) * 1e6
		default:
			vals[i] = float64(rng.IntN(7)) / 4 // ties are common
		}
	}
	return vals
}

// bruteBuckets is the answer Downsample must give, computed from its
// contract and the statistics' definitions: the first and last index, and
// for each bucket [1 + b·(n-2)/k, 1 + (b+1)·(n-2)/k) the indexes of the
// Min and Max a statistics delta of the bucket's points reports (finite
// values only, the earliest of equal ones) and its NonFinite count.
func bruteBuckets(vals []float64, maxPoints int) (keep []int, spans []bucketSpan) {
	n := len(vals)
	if maxPoints <= 0 || n <= maxPoints {
		for i := range n {
			keep = append(keep, i)
		}
		return keep, nil
	}
	if maxPoints == 1 {
		return []int{n - 1}, nil
	}
	k := (maxPoints - 2) / 2
	keep = []int{0}
	for b := range k {
		lo, hi := 1+b*(n-2)/k, 1+(b+1)*(n-2)/k
		d := newDelta()
		for i := lo; i < hi; i++ {
			d.add(int64(i), vals[i], 0, uint64(i)) // the step is the index
		}
		spans = append(spans, bucketSpan{from: lo, to: hi, nonFinite: int(d.nonFinite)})
		if d.nonFinite == uint64(hi-lo) {
			continue
		}
		ext := []int{int(d.minStep), int(d.maxStep)}
		slices.Sort(ext)
		keep = append(keep, slices.Compact(ext)...)
	}
	return append(keep, n-1), spans
}

// TestDownsampleModel checks Downsample on random series with NaN and ±Inf
// against bruteBuckets, bucket by bucket.
func TestDownsampleModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 6))
	for iter := range 3000 {
		n := rng.IntN(600)
		vals := randomSeries(rng, n)
		mp := rng.IntN(n+3) - 1
		if rng.IntN(3) == 0 {
			mp = rng.IntN(12) - 1 // few, wide buckets
		}
		keep, spans := downsample(vals, mp)
		wantKeep, wantSpans := bruteBuckets(vals, mp)
		if !slices.Equal(spans, wantSpans) {
			t.Fatalf("iter %d n=%d max=%d: buckets\n%v, want\n%v", iter, n, mp, spans, wantSpans)
		}
		if !slices.Equal(keep, wantKeep) {
			t.Fatalf("iter %d n=%d max=%d: kept %v, want %v (values %v)", iter, n, mp, keep, wantKeep, vals)
		}
		if !slices.Equal(Downsample(vals, mp), keep) {
			t.Fatalf("iter %d: Downsample and downsample disagree", iter)
		}
		if mp > 0 && len(keep) > mp {
			t.Fatalf("iter %d n=%d max=%d: %d points", iter, n, mp, len(keep))
		}
	}
}

// TestReadManyDownsampleNonFinite: a spike between NaNs survives a
// downsampled read (the maximum of the points read equals the statistics'
// Max), and MetricData.Buckets reports each bucket's steps, size and
// non-finite points, matching bruteBuckets over the series.
func TestReadManyDownsampleNonFinite(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testSeed(t), 7))
	r := openTest(t, store.NewMemory(), RepoOptions{})
	run, err := r.StartRun(ctx, RunSpec{Name: "nan"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = 1 + float64(i%7)/100
		if i%3 == 0 {
			vals[i] = math.NaN()
		}
	}
	vals[500] = 100 // between NaNs at 498 and 501
	vals[740], vals[741] = math.Inf(1), math.Inf(-1)
	steps := make([]int64, n)
	for i := range vals {
		steps[i] = int64(3*i + rng.IntN(3)) // increasing, irregular
		if err := run.Track(vals[i], "loss", TrackOptions{Step: &steps[i]}); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := r.AllSeries(ctx, run.ID())
	if err != nil || len(ss) != 1 {
		t.Fatalf("series %v %v", ss, err)
	}
	id := ss[0].ID
	st, err := r.SeriesStats(ctx, []SeriesID{id})
	if err != nil {
		t.Fatal(err)
	}
	for _, mp := range []int{100, 37, 4} {
		md, err := r.ReadMany(ctx, []SeriesID{id}, ReadOptions{MaxPoints: mp})
		if err != nil {
			t.Fatal(err)
		}
		m := md[0]
		wantKeep, wantSpans := bruteBuckets(vals, mp)
		var wantSteps []int64
		for _, k := range wantKeep {
			wantSteps = append(wantSteps, steps[k])
		}
		if !slices.Equal(m.Steps, wantSteps) {
			t.Fatalf("max %d: steps %v, want %v", mp, m.Steps, wantSteps)
		}
		var wantBuckets []Bucket
		for _, sp := range wantSpans {
			wantBuckets = append(wantBuckets, Bucket{FirstStep: steps[sp.from], LastStep: steps[sp.to-1], Points: sp.to - sp.from, NonFinite: sp.nonFinite})
		}
		if !slices.Equal(m.Buckets, wantBuckets) {
			t.Fatalf("max %d: buckets %v, want %v", mp, m.Buckets, wantBuckets)
		}
		if mp >= 4 {
			top := math.Inf(-1)
			for _, v := range m.Values {
				if !math.IsNaN(v) && !math.IsInf(v, 0) {
					top = max(top, v)
				}
			}
			if top != st[id].Max || top != 100 {
				t.Fatalf("max %d: largest point read %v, statistics say %v", mp, top, st[id].Max)
			}
		}
	}
	md, err := r.ReadMany(ctx, []SeriesID{id}, ReadOptions{})
	if err != nil || md[0].Len() != n || md[0].Buckets != nil {
		t.Fatalf("full read: %d points, buckets %v, %v", md[0].Len(), md[0].Buckets, err)
	}
}

// BenchmarkDownsample chooses 1,000 of 100k values: a monotone series and
// one of random values with NaN and ±Inf.
func BenchmarkDownsample(b *testing.B) {
	for _, kind := range []string{"monotone", "random"} {
		vals := make([]float64, 100_000)
		if kind == "random" {
			vals = randomSeries(rand.New(rand.NewPCG(1, 2)), len(vals))
		} else {
			for i := range vals {
				vals[i] = float64(i)
			}
		}
		b.Run(kind, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				downsample(vals, 1000)
			}
		})
	}
}
