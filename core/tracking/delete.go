package tracking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lance"
)

func quoteList(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = "'" + strings.ReplaceAll(id, "'", "''") + "'"
	}
	return strings.Join(parts, ", ")
}

// DeleteRuns deletes runs: it commits their tombstones first, then deletes
// their rows from every table (params, series, metrics points and
// statistics, records, older runs rows). Reads ignore a tombstoned run at
// once; a writer elsewhere learns of it at its next flush (within about a
// second), drops its buffered writes to it, and its Run handle then fails
// with ErrNotFound. Unknown ids fail with ErrNotFound before anything is
// written.
func (r *Repo) DeleteRuns(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if err := r.checkWritableLocked(); err != nil {
		return err
	}
	for _, id := range ids {
		if _, err := r.Run(ctx, id); err != nil {
			return err
		}
	}
	series, err := r.loadSeries(ctx, "")
	if err != nil {
		return err
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	// 1. Tombstones.
	r.mu.Lock()
	now := r.opts.Now().UTC()
	var tombs []runRow
	for _, id := range ids {
		tombs = append(tombs, runRow{seq: r.nextSeq(now), fields: FieldDeleted, hasMsk: true, info: RunInfo{ID: id, CreatedAt: now, UpdatedAt: now}})
		r.deleted[id] = true
		if run := r.runs[id]; run != nil {
			run.deleted = true
		}
	}
	r.mu.Unlock()
	d, err := r.tables.runs.Latest(ctx)
	if err != nil {
		return err
	}
	if d, err = appendRecord(ctx, d, buildRuns(tombs)); err != nil {
		return fmt.Errorf("tracking: delete runs: tombstones: %w", err)
	}
	r.tables.runs = d
	// 2. Everything the runs own.
	del := map[string]bool{}
	for _, id := range ids {
		del[id] = true
	}
	var sids []string
	for _, s := range series {
		if del[s.RunID] {
			sids = append(sids, strconv.FormatUint(uint64(s.ID), 10))
		}
	}
	list := quoteList(ids)
	preds := []struct {
		table string
		pred  string
	}{
		{RunsTable, fmt.Sprintf("run_id IN (%s) AND (fields IS NULL OR fields <> %d)", list, FieldDeleted)},
		{ParamsTable, fmt.Sprintf("run_id IN (%s)", list)},
		{SeriesTable, fmt.Sprintf("run_id IN (%s)", list)},
	}
	if len(sids) > 0 {
		var steps []string
		for _, s := range sids {
			u, _ := strconv.ParseUint(s, 10, 64)
			steps = append(steps, strconv.FormatInt(int64(u), 10))
		}
		preds = append(preds, struct{ table, pred string }{MetricsTable,
			fmt.Sprintf("series_id IN (%s) OR (series_id = 0 AND step IN (%s))", strings.Join(sids, ", "), strings.Join(steps, ", "))})
	}
	tables, err := r.RecordTables(ctx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		preds = append(preds, struct{ table, pred string }{recordsKey(t), fmt.Sprintf("run_id IN (%s)", list)})
	}
	for _, p := range preds {
		if err := r.deleteWhere(ctx, p.table, p.pred); err != nil {
			return fmt.Errorf("tracking: delete runs from %s: %w", p.table, err)
		}
	}
	return nil
}

func (r *Repo) deleteWhere(ctx context.Context, table, pred string) error {
	for i := 0; ; i++ {
		d, err := r.latest(ctx, table)
		if err != nil || d == nil {
			return err
		}
		nd, _, err := d.Delete(ctx, pred)
		if err == nil {
			switch table {
			case RunsTable:
				r.tables.runs = nd
			case ParamsTable:
				r.tables.params = nd
			case SeriesTable:
				r.tables.series = nd
			case MetricsTable:
				r.tables.metrics = nd
			}
			return nil
		}
		if !errors.Is(err, lance.ErrConflict) || i == 4 {
			return err
		}
	}
}

// Purge optimizes, compacts every table with its deleted rows
// materialised, and removes every untagged version but the latest, so
// deleted runs leave no trace in storage. A tag on an older version that
// still holds rows of a deleted run fails the purge with
// ErrTagHoldsDeleted naming it, unless force is set, which deletes such
// tags.
func (r *Repo) Purge(ctx context.Context, force bool) error {
	if _, err := r.Optimize(ctx); err != nil {
		return err
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	live, err := r.liveRunSet(ctx)
	if err != nil {
		return err
	}
	series, err := r.loadSeries(ctx, "")
	if err != nil {
		return err
	}
	liveSID := map[uint64]bool{0: true}
	for _, s := range series {
		if live[s.RunID] {
			liveSID[uint64(s.ID)] = true
		}
	}
	tables := []string{RunsTable, ParamsTable, SeriesTable, MetricsTable}
	recs, err := r.RecordTables(ctx)
	if err != nil {
		return err
	}
	for _, t := range recs {
		tables = append(tables, recordsKey(t))
	}
	deleted, err := r.deletedRuns(ctx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		d, err := r.latest(ctx, t)
		if err != nil || d == nil {
			if err != nil {
				return err
			}
			continue
		}
		if t != MetricsTable {
			if d, _, err = d.Compact(ctx, lance.CompactOptions{}); err != nil {
				return err
			}
		}
		tags, err := d.ListTags(ctx)
		if err != nil {
			return err
		}
		for _, tag := range tags {
			if tag.Version >= d.Version() {
				continue
			}
			old, err := lance.Open(ctx, r.st, r.key(t), lance.OpenOptions{Version: tag.Version})
			if err != nil {
				return err
			}
			holds, err := holdsDeleted(ctx, old, t, deleted, liveSID)
			if err != nil {
				return err
			}
			if !holds {
				continue
			}
			if !force {
				return fmt.Errorf("%w: tag %q of %s (version %d)", ErrTagHoldsDeleted, tag.Name, t, tag.Version)
			}
			if err := d.DeleteTag(ctx, tag.Name); err != nil {
				return err
			}
		}
		if _, err := lance.CleanupOldVersions(ctx, r.st, r.key(t), 0, lance.CleanupOptions{}); err != nil {
			return err
		}
	}
	r.cacheMu.Lock()
	r.ranges = map[string][]sidRange{}
	r.levels = map[string]*levelIndex{}
	r.cacheMu.Unlock()
	return nil
}

func holdsDeleted(ctx context.Context, d *lance.Dataset, table string, deleted map[string]bool, liveSID map[uint64]bool) (bool, error) {
	found := false
	if table == MetricsTable {
		err := scanAll(ctx, d, lance.ScanOptions{Columns: []string{"series_id"}}, func(rec arrow.RecordBatch) error {
			for _, s := range rec.Column(0).(*array.Uint64).Uint64Values() {
				if !liveSID[s] {
					found = true
				}
			}
			return nil
		})
		return found, err
	}
	cols := []string{"run_id"}
	if table == RunsTable {
		cols = append(cols, "fields")
	}
	err := scanAll(ctx, d, lance.ScanOptions{Columns: cols}, func(rec arrow.RecordBatch) error {
		ids := rec.Column(0).(*array.String)
		var fields *array.Uint32
		if table == RunsTable {
			fields = rec.Column(1).(*array.Uint32)
		}
		for i := 0; i < ids.Len(); i++ {
			if fields != nil && fields.IsValid(i) && fields.Value(i) == FieldDeleted {
				continue // the tombstone itself
			}
			if ids.IsValid(i) && deleted[ids.Value(i)] {
				found = true
			}
		}
		return nil
	})
	return found, err
}
