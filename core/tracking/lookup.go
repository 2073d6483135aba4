package tracking

import "context"

// FindSeries returns, by id, the series among ids that belong to live runs;
// ids it does not hold are absent from the map.
func (r *Repo) FindSeries(ctx context.Context, ids []SeriesID) (map[SeriesID]SeriesInfo, error) {
	if err := r.prepareRead(ctx); err != nil {
		return nil, err
	}
	runs, err := r.runsView(ctx)
	if err != nil {
		return nil, err
	}
	v, err := r.seriesView(ctx)
	if err != nil {
		return nil, err
	}
	want := make(map[SeriesID]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := make(map[SeriesID]SeriesInfo, len(ids))
	for _, s := range v.all {
		if want[s.ID] {
			if _, live := runs.index[s.RunID]; live {
				out[s.ID] = s
			}
		}
	}
	return out, nil
}

// DownsampleBands is Downsample with each kept point's band: for a point
// standing for a bucket, lo and hi are the bucket's minimum and maximum
// (the values of the two points Downsample keeps of it, in the same order
// of values, so non-finite values show); for the first and last points,
// and for every point when nothing is dropped, lo and hi are the value
// itself.
func DownsampleBands(values []float64, maxPoints int) (idx []int, lo, hi []float64) {
	idx = Downsample(values, maxPoints)
	lo, hi = make([]float64, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		lo[k], hi[k] = values[i], values[i]
	}
	n := len(values)
	if maxPoints <= 1 || n <= maxPoints {
		return idx, lo, hi
	}
	buckets := (maxPoints - 2) / 2
	inner := n - 2
	bucket := func(i int) int { // the bucket holding inner index i (Downsample's bounds)
		b := (i - 1) * buckets / inner
		for b+1 < buckets && 1+(b+1)*inner/buckets <= i {
			b++
		}
		for b > 0 && 1+b*inner/buckets > i {
			b--
		}
		return b
	}
	for k := 1; k+1 < len(idx); {
		j := k + 1
		if j+1 < len(idx) && bucket(idx[j]) == bucket(idx[k]) {
			// The bucket's two kept points: its minimum and maximum in
			// index order.
			a, b := values[idx[k]], values[idx[j]]
			if less(b, a) {
				a, b = b, a
			}
			lo[k], hi[k], lo[j], hi[j] = a, b, a, b
			k = j + 1
			continue
		}
		k = j // a bucket whose minimum is its maximum
	}
	return idx, lo, hi
}
