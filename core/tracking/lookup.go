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
