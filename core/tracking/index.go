package tracking

import "context"

// SeriesIndex is the name of the Lance BTree scalar index Optimize keeps on
// metrics.series_id. lance (and lancedb) list it and use it for filters on
// series_id, scanning only the fragments committed after it was built.
const SeriesIndex = "series_id_idx"

// indexMetrics rebuilds the series_id index of the metrics table unless it
// already covers every fragment. Caller holds r.flushMu.
func (r *Repo) indexMetrics(ctx context.Context) error {
	d, err := r.latest(ctx, MetricsTable)
	if err != nil || d == nil || len(d.Fragments()) == 0 {
		return err
	}
	ix, err := d.Indices(ctx)
	if err != nil {
		return err
	}
	covered := map[uint64]bool{}
	for _, in := range ix {
		if in.Name == SeriesIndex {
			for _, f := range in.Fragments {
				covered[f] = true
			}
		}
	}
	all := true
	for _, f := range d.Fragments() {
		if !covered[f.ID] {
			all = false
		}
	}
	if all {
		return nil
	}
	nd, err := d.CreateBTreeIndex(ctx, "series_id", SeriesIndex)
	if err != nil {
		return err
	}
	r.tables.metrics = nd
	return nil
}
