package tracking

import (
	"context"

	"github.com/kv0/kv0/core/internal/par"
)

// FindSeries returns, by id, the series among ids that belong to live runs;
// ids it does not hold are absent from the map.
func (r *Repo) FindSeries(ctx context.Context, ids []SeriesID) (map[SeriesID]SeriesInfo, error) {
	if err := r.prepareRead(ctx); err != nil {
		return nil, err
	}
	// The two tables are independent: read them at once, not one after
	// the other (on a cold handle each is a chain of requests).
	var (
		runs *runsView
		v    *seriesView
	)
	err := par.Do(ctx, 2, 2, func(ctx context.Context, i int) (err error) {
		if i == 0 {
			runs, err = r.runsView(ctx)
		} else {
			v, err = r.seriesView(ctx)
		}
		return err
	})
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
