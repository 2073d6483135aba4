package tracking

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lance"
)

// OptimizeStats reports what Optimize did.
type OptimizeStats struct {
	RunRows, ParamRows, SeriesRows int // rows after folding (0: table untouched)
	RecordRows                     int
	// MetricsRewritten is the number of metrics rows written sorted, and
	// MetricsFull whether every fragment was rewritten.
	MetricsRewritten int
	MetricsFull      bool
}

// Optimize flushes, folds the runs, params and series change logs and the
// records tables, and rewrites the metrics points not yet sorted into
// fragments sorted by (series_id, step), with one exact statistics delta
// per series. It rewrites every metrics fragment when a new point is at or
// below a step already sorted for its series, when a sorted fragment has
// disappeared, or when the fragments to rewrite hold exact statistics;
// otherwise only the unsorted ones. Rows of deleted runs are removed,
// except their tombstones. Last, it (re)builds the Lance BTree index on
// metrics.series_id (SeriesIndex) when some fragment is not covered.
func (r *Repo) Optimize(ctx context.Context) (OptimizeStats, error) {
	var st OptimizeStats
	if err := r.checkWritableLocked(); err != nil {
		return st, err
	}
	if err := r.Flush(ctx); err != nil {
		return st, err
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	var err error
	retry := func(f func() error) error {
		for i := 0; ; i++ {
			err := f()
			if err == nil || !errors.Is(err, lance.ErrConflict) || i == 4 {
				return err
			}
		}
	}
	if err = retry(func() (e error) { st.RunRows, e = r.foldRuns(ctx); return }); err != nil {
		return st, fmt.Errorf("tracking: optimize runs: %w", err)
	}
	live, err := r.liveRunSet(ctx)
	if err != nil {
		return st, err
	}
	if err = retry(func() (e error) { st.ParamRows, e = r.foldParams(ctx, live); return }); err != nil {
		return st, fmt.Errorf("tracking: optimize params: %w", err)
	}
	if err = retry(func() (e error) { st.SeriesRows, e = r.foldSeries(ctx, live); return }); err != nil {
		return st, fmt.Errorf("tracking: optimize series: %w", err)
	}
	if err = retry(func() (e error) {
		var ms metricsStats
		ms, e = r.optimizeMetrics(ctx, true)
		st.MetricsRewritten, st.MetricsFull = ms.rows, ms.full
		return
	}); err != nil {
		return st, fmt.Errorf("tracking: optimize metrics: %w", err)
	}
	if err = retry(func() error { return r.indexMetrics(ctx) }); err != nil {
		return st, fmt.Errorf("tracking: index metrics: %w", err)
	}
	tables, err := r.RecordTables(ctx)
	if err != nil {
		return st, err
	}
	for _, t := range tables {
		if err = retry(func() (e error) {
			n, e := r.foldRecords(ctx, t, live)
			st.RecordRows += n
			return e
		}); err != nil {
			return st, fmt.Errorf("tracking: optimize records %q: %w", t, err)
		}
	}
	return st, nil
}

// liveRunSet returns the ids of runs with rows and no tombstone.
func (r *Repo) liveRunSet(ctx context.Context) (map[string]bool, error) {
	d, err := r.latest(ctx, RunsTable)
	if err != nil {
		return nil, err
	}
	accs, err := loadRuns(ctx, d)
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for id, a := range accs {
		if a.live() {
			live[id] = true
		}
	}
	return live, nil
}

func fragIDs(d *lance.Dataset) []uint64 {
	var ids []uint64
	for _, f := range d.Fragments() {
		ids = append(ids, f.ID)
	}
	return ids
}

// replaceAll commits, in one Update, the removal of every fragment of d and
// the rows of rec; rows appended meanwhile stay.
func replaceAll(ctx context.Context, d *lance.Dataset, rec arrow.RecordBatch) (*lance.Dataset, error) {
	defer rec.Release()
	req := lance.UpdateRequest{RemoveFragments: fragIDs(d)}
	if rec.NumRows() > 0 {
		req.New = lance.Batches(rec)
	}
	return d.Update(ctx, req, lance.WriteOptions{})
}

// newestMarks keeps the newest mark row of each writer.
func newestMarks[T any](rows []T, writer func(T) string, seq func(T) uint64) []T {
	best := map[string]int{}
	for i, x := range rows {
		w := writer(x)
		if j, ok := best[w]; !ok || seq(x) > seq(rows[j]) {
			best[w] = i
		}
	}
	var out []T
	for i, x := range rows {
		if best[writer(x)] == i {
			out = append(out, x)
		}
	}
	return out
}

// foldRuns rewrites runs.lance with each live run's rows folded into one
// row per sequence number at which some field was last set.
func (r *Repo) foldRuns(ctx context.Context) (int, error) {
	d, err := r.latest(ctx, RunsTable)
	if err != nil || d == nil || len(d.Fragments()) == 0 {
		return 0, err
	}
	var all []runRow
	err = scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		decodeRuns(rec, func(rw runRow) { all = append(all, rw) })
		return nil
	})
	if err != nil {
		return 0, err
	}
	accs := map[string]*runAcc{}
	var kept, marks []runRow
	for _, rw := range all {
		if isMarkRun(rw.info.ID) {
			marks = append(marks, rw)
			continue
		}
		a := accs[rw.info.ID]
		if a == nil {
			a = &runAcc{}
			accs[rw.info.ID] = a
		}
		a.apply(rw)
	}
	for _, rw := range all {
		if a := accs[rw.info.ID]; a != nil && a.deleted {
			kept = append(kept, rw) // tombstones and rows of deleted runs stay as they are
		}
	}
	ids := make([]string, 0, len(accs))
	for id, a := range accs {
		if !a.deleted {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a := accs[id]
		bySeq := map[uint64]uint32{}
		for i := 0; i < numFields; i++ {
			if a.has&(1<<i) != 0 {
				bySeq[a.seqs[i]] |= 1 << i
			}
		}
		seqs := make([]uint64, 0, len(bySeq))
		for s := range bySeq {
			seqs = append(seqs, s)
		}
		slices.Sort(seqs)
		for _, s := range seqs {
			kept = append(kept, runRow{seq: s, info: a.result(), fields: bySeq[s], hasMsk: true})
		}
	}
	kept = append(kept, newestMarks(marks, func(x runRow) string { return x.info.ID }, func(x runRow) uint64 { return x.seq })...)
	if len(kept) == len(all) && len(d.Fragments()) <= 1 {
		return len(kept), nil
	}
	nd, err := replaceAll(ctx, d, buildRuns(kept))
	if err != nil {
		return 0, err
	}
	r.tables.runs = nd
	r.tombScan.seen = map[uint64]bool{}
	for _, id := range fragIDs(nd) {
		r.tombScan.seen[id] = true
	}
	r.tombScan.version = nd.Version()
	return len(kept), nil
}

// foldParams keeps the newest row of each (live run, key).
func (r *Repo) foldParams(ctx context.Context, live map[string]bool) (int, error) {
	d, err := r.latest(ctx, ParamsTable)
	if err != nil || d == nil || len(d.Fragments()) == 0 {
		return 0, err
	}
	type key struct{ run, k string }
	newest := map[key]paramRow{}
	var marks []paramRow
	total := 0
	err = scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		decodeParams(rec, func(p paramRow) {
			total++
			if isMarkRun(p.runID) {
				marks = append(marks, p)
				return
			}
			if !live[p.runID] {
				return
			}
			k := key{p.runID, p.key}
			if old, ok := newest[k]; !ok || p.seq >= old.seq {
				newest[k] = p
			}
		})
		return nil
	})
	if err != nil {
		return 0, err
	}
	rows := make([]paramRow, 0, len(newest))
	for _, p := range newest {
		rows = append(rows, p)
	}
	slices.SortFunc(rows, func(a, b paramRow) int { return cmp.Or(cmp.Compare(a.runID, b.runID), cmp.Compare(a.key, b.key)) })
	rows = append(rows, newestMarks(marks, func(x paramRow) string { return x.runID }, func(x paramRow) uint64 { return x.seq })...)
	if len(rows) == total && len(d.Fragments()) <= 1 {
		return len(rows), nil
	}
	nd, err := replaceAll(ctx, d, buildParams(rows))
	if err != nil {
		return 0, err
	}
	r.tables.params = nd
	return len(rows), nil
}

// foldSeries keeps one row per series of a live run.
func (r *Repo) foldSeries(ctx context.Context, live map[string]bool) (int, error) {
	d, err := r.latest(ctx, SeriesTable)
	if err != nil || d == nil || len(d.Fragments()) == 0 {
		return 0, err
	}
	byID := map[SeriesID]seriesRow{}
	var marks []seriesRow
	total := 0
	err = scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		eachSeriesRow(rec, func(s seriesRow) {
			total++
			switch {
			case isMarkRun(s.runID):
				marks = append(marks, s)
			case !live[s.runID]:
			default:
				if old, ok := byID[s.id]; !ok || s.created < old.created {
					byID[s.id] = s
				}
			}
		})
		return nil
	})
	if err != nil {
		return 0, err
	}
	rows := make([]seriesRow, 0, len(byID))
	for _, s := range byID {
		rows = append(rows, s)
	}
	slices.SortFunc(rows, func(a, b seriesRow) int { return cmp.Compare(a.id, b.id) })
	markSeq := func(x seriesRow) uint64 {
		var s uint64
		fmt.Sscan(x.name, &s)
		return s
	}
	rows = append(rows, newestMarks(marks, func(x seriesRow) string { return x.runID }, markSeq)...)
	if len(rows) == total && len(d.Fragments()) <= 1 {
		return len(rows), nil
	}
	nd, err := replaceAll(ctx, d, buildSeries(rows))
	if err != nil {
		return 0, err
	}
	r.tables.series = nd
	return len(rows), nil
}

// foldRecords keeps the newest live row of each (live run, item) key.
func (r *Repo) foldRecords(ctx context.Context, table string, live map[string]bool) (int, error) {
	d, err := r.latest(ctx, recordsKey(table))
	if err != nil || d == nil || len(d.Fragments()) == 0 {
		return 0, err
	}
	type key struct{ run, item string }
	type row struct {
		x    Record
		live bool
	}
	newest := map[key]row{}
	total := 0
	err = scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		decodeRecords(rec, func(x Record, l bool) {
			total++
			k := key{x.RunID, x.ItemID}
			if old, ok := newest[k]; !ok || x.Seq >= old.x.Seq {
				newest[k] = row{x, l}
			}
		})
		return nil
	})
	if err != nil {
		return 0, err
	}
	var rows []recordRow
	for _, v := range newest {
		if !v.live || v.x.RunID != "" && !live[v.x.RunID] {
			continue
		}
		s := string(v.x.Data)
		rows = append(rows, recordRow{seq: v.x.Seq, runID: v.x.RunID, itemID: v.x.ItemID, data: &s, created: v.x.CreatedAt.UnixMicro()})
	}
	slices.SortFunc(rows, func(a, b recordRow) int {
		return cmp.Or(cmp.Compare(a.runID, b.runID), cmp.Compare(a.itemID, b.itemID))
	})
	if len(rows) == total && len(d.Fragments()) <= 1 {
		return len(rows), nil
	}
	nd, err := replaceAll(ctx, d, buildRecords(table, rows))
	if err != nil {
		return 0, err
	}
	r.tables.records[table] = nd
	return len(rows), nil
}

type metricsStats struct {
	rows int
	full bool
}

// sortRows are metrics rows being rewritten.
type sortRows struct {
	sid      []uint64
	step     []int64
	epoch    []int64
	hasEpoch []bool
	ts       []int64
	val      []float64
}

// optimizeMetrics runs the sorted rewrite (see Optimize). Caller holds
// r.flushMu.
func (r *Repo) optimizeMetrics(ctx context.Context, explicit bool) (metricsStats, error) {
	var ms metricsStats
	d, err := r.latest(ctx, MetricsTable)
	if err != nil || d == nil {
		return ms, err
	}
	sorted := parseSorted(d.Config()[ConfigSortedFragments])
	present := map[uint64]bool{}
	var unsorted []lance.Fragment
	for _, f := range d.Fragments() {
		present[f.ID] = true
		if !sorted[f.ID] {
			unsorted = append(unsorted, f)
		}
	}
	missing := false
	for id := range sorted {
		if !present[id] {
			missing = true
		}
	}
	if len(unsorted) == 0 && !missing {
		return ms, nil
	}
	live, err := r.liveRunSet(ctx)
	if err != nil {
		return ms, err
	}
	series, err := r.loadSeries(ctx, "")
	if err != nil {
		return ms, err
	}
	liveSID := map[uint64]bool{}
	for _, s := range series {
		if live[s.RunID] {
			liveSID[uint64(s.ID)] = true
		}
	}
	full := missing
	// The last step sorted so far of each series, from the exact deltas
	// the sorted fragments hold.
	sortedLast := map[uint64]int64{}
	if !full && len(sorted) > 0 {
		p := planMetrics(d)
		p.scanned = nil
		err := r.visitPlan(ctx, d, p, []uint64{0}, deltaCols, func(rec arrow.RecordBatch) error {
			sid := rec.Column(0).(*array.Uint64).Uint64Values()
			step := rec.Column(1).(*array.Int64).Int64Values()
			st := rec.Column(2).(*array.Binary)
			for i, s := range sid {
				if s != 0 || st.IsNull(i) || st.Value(i)[0] != statsKindDelta {
					continue
				}
				if dl, err := decodeDelta(st.Value(i)); err == nil && dl.count > 0 {
					k := uint64(step[i])
					if old, ok := sortedLast[k]; !ok || dl.lastStep > old {
						sortedLast[k] = dl.lastStep
					}
				}
			}
			return nil
		})
		if err != nil {
			return ms, err
		}
		// A sorted fragment with deletions is read as a whole anyway.
		for _, f := range d.Fragments() {
			if sorted[f.ID] && f.DeletionFile != "" {
				full = true
			}
		}
	}
	// Read the fragments to rewrite, in read order.
	read := func(frags []lance.Fragment) (*sortRows, map[string]uint64, bool, error) {
		rows := &sortRows{}
		marks := map[string]uint64{}
		exact := false
		for _, f := range frags {
			err := scanAll(ctx, d, lance.ScanOptions{Fragments: []uint64{f.ID}, BatchRows: 1 << 16}, func(rec arrow.RecordBatch) error {
				sid := rec.Column(0).(*array.Uint64).Uint64Values()
				step := rec.Column(1).(*array.Int64).Int64Values()
				ep := rec.Column(2).(*array.Int64)
				ts := rec.Column(3).(*array.Timestamp).TimestampValues()
				val := rec.Column(4).(*array.Float64).Float64Values()
				st := rec.Column(5).(*array.Binary)
				for i, s := range sid {
					if s == 0 {
						if st.IsNull(i) {
							continue
						}
						b := st.Value(i)
						if w, seq, ok := decodeMark(b); ok {
							marks[w] = max(marks[w], seq)
						} else if len(b) > 1 && b[0] == statsKindDelta && b[1]&2 != 0 {
							exact = true
						}
						continue
					}
					if !liveSID[s] {
						continue
					}
					rows.sid = append(rows.sid, s)
					rows.step = append(rows.step, step[i])
					rows.epoch = append(rows.epoch, ep.Value(i))
					rows.hasEpoch = append(rows.hasEpoch, ep.IsValid(i))
					rows.ts = append(rows.ts, int64(ts[i]))
					rows.val = append(rows.val, val[i])
				}
				return nil
			})
			if err != nil {
				return nil, nil, false, err
			}
		}
		return rows, marks, exact, nil
	}
	var rows *sortRows
	var marks map[string]uint64
	if !full {
		var exact bool
		rows, marks, exact, err = read(unsorted)
		if err != nil {
			return ms, err
		}
		full = exact
		for i, s := range rows.sid {
			if last, ok := sortedLast[s]; ok && rows.step[i] <= last {
				full = true
				break
			}
		}
	}
	toRemove := unsorted
	if full {
		p := planMetrics(d)
		toRemove = append(append([]lance.Fragment(nil), p.ranged...), p.scanned...)
		rows, marks, _, err = read(toRemove)
		if err != nil {
			return ms, err
		}
	}
	rec, n := buildSorted(rows, marks)
	removeIDs := make([]uint64, len(toRemove))
	for i, f := range toRemove {
		removeIDs[i] = f.ID
	}
	req := lance.UpdateRequest{RemoveFragments: removeIDs}
	if n > 0 {
		req.New = lance.Batches(rec...)
	}
	// Each sorted data file carries the row ranges of its series, and large
	// series get pages of their own.
	nd, err := d.Update(ctx, req, sortedLayout(rec, alignRows))
	defer func() {
		for _, b := range rec {
			b.Release()
		}
	}()
	if err != nil {
		return ms, err
	}
	// Our fragments are the last ones of the version we committed, in the
	// order their rows were written.
	newSorted := map[uint64]sidSpan{}
	if !full {
		for id, sp := range parseSortedSpans(d.Config()[ConfigSortedFragments]) {
			if present[id] {
				newSorted[id] = sp
			}
		}
	}
	frags := nd.Fragments()
	first := len(frags)
	var sum uint64
	for first > 0 && sum < uint64(n) {
		first--
		sum += frags[first].PhysicalRows
	}
	spans := fragmentSpans(rec, frags[first:])
	for i, f := range frags[first:] {
		newSorted[f.ID] = spans[i]
	}
	cfg := map[string]string{ConfigSortedFragments: formatSorted(newSorted)}
	if nd, err = nd.UpdateConfig(ctx, cfg, nil); err != nil {
		return ms, err
	}
	r.tables.metrics = nd
	_ = explicit
	return metricsStats{rows: n, full: full}, nil
}

// fragmentSpans returns the smallest and largest series id of each of frags,
// which hold the rows of recs in order (PhysicalRows rows each). Rows are
// sorted by series id, so a fragment's span runs from its first row's id to
// its last's. A span is unknown when the counts do not line up.
func fragmentSpans(recs []arrow.RecordBatch, frags []lance.Fragment) []sidSpan {
	var sids []uint64
	for _, rec := range recs {
		idx := rec.Schema().FieldIndices("series_id")
		if len(idx) != 1 {
			return make([]sidSpan, len(frags))
		}
		col, ok := rec.Column(idx[0]).(*array.Uint64)
		if !ok {
			return make([]sidSpan, len(frags))
		}
		sids = append(sids, col.Uint64Values()...)
	}
	out := make([]sidSpan, len(frags))
	pos := uint64(0)
	for i, f := range frags {
		end := pos + f.PhysicalRows
		if f.PhysicalRows == 0 || end > uint64(len(sids)) {
			return make([]sidSpan, len(frags))
		}
		out[i] = sidSpan{lo: sids[pos], hi: sids[end-1], known: true}
		pos = end
	}
	if pos != uint64(len(sids)) {
		return make([]sidSpan, len(frags))
	}
	return out
}

// buildSorted sorts rows by (series_id, step), keeps the last row read of
// each step, and lays out the sorted fragment contents: the WAL marks and
// one exact delta per series (series_id 0, ordered by step), then the points.
func buildSorted(rows *sortRows, marks map[string]uint64) ([]arrow.RecordBatch, int) {
	type sortKey struct {
		sid  uint64
		step int64
		i    int32
	}
	keys := make([]sortKey, len(rows.sid))
	for i := range keys {
		keys[i] = sortKey{rows.sid[i], rows.step[i], int32(i)}
	}
	slices.SortFunc(keys, func(a, b sortKey) int {
		if a.sid != b.sid {
			return cmp.Compare(a.sid, b.sid)
		}
		if a.step != b.step {
			return cmp.Compare(a.step, b.step)
		}
		return cmp.Compare(a.i, b.i) // read order breaks ties: the later row wins below
	})
	idx := make([]int32, len(keys))
	for k := range keys {
		idx[k] = keys[k].i
	}
	keys = nil
	keep := idx[:0]
	for k, i := range idx {
		if k+1 < len(idx) {
			j := idx[k+1]
			if rows.sid[j] == rows.sid[i] && rows.step[j] == rows.step[i] {
				continue
			}
		}
		keep = append(keep, i)
	}
	// Exact deltas.
	var deltas []*deltaEntry
	for k, i := range keep {
		s := rows.sid[i]
		if k == 0 || rows.sid[keep[k-1]] != s {
			nd := newDelta()
			deltas = append(deltas, &deltaEntry{id: SeriesID(s), d: nd})
		}
		deltas[len(deltas)-1].d.add(rows.step[i], rows.val[i], rows.ts[i], 0)
	}
	for _, e := range deltas {
		e.d.exact = true
		e.d.lastSeq = 0
	}
	slices.SortFunc(deltas, func(a, b *deltaEntry) int { return cmp.Compare(int64(a.id), int64(b.id)) })
	type mk struct {
		w   string
		seq uint64
	}
	var mks []mk
	for w, s := range marks {
		mks = append(mks, mk{w, s})
	}
	slices.SortFunc(mks, func(a, b mk) int { return cmp.Compare(a.w, b.w) })

	var out []arrow.RecordBatch
	const chunk = 1 << 16
	now := time.Now()
	// Reserved rows: marks have step 0 and deltas step = series id, so the
	// merged order by step puts them where a sort by (0, step) would.
	var head []*deltaEntry
	var headMarks [][]byte
	for _, m := range mks {
		headMarks = append(headMarks, encodeMark(m.w, m.seq))
	}
	head = deltas
	total := len(keep) + len(head) + len(headMarks)
	if len(head)+len(headMarks) > 0 {
		out = append(out, buildReserved(head, headMarks, now))
	}
	for lo := 0; lo < len(keep); lo += chunk {
		hi := min(lo+chunk, len(keep))
		var p points
		for _, i := range keep[lo:hi] {
			p.sid = append(p.sid, rows.sid[i])
			p.step = append(p.step, rows.step[i])
			p.epoch = append(p.epoch, rows.epoch[i])
			p.hasEpoch = append(p.hasEpoch, rows.hasEpoch[i])
			p.ts = append(p.ts, rows.ts[i])
			p.val = append(p.val, rows.val[i])
		}
		out = append(out, buildMetrics(&p, nil, nil, now))
	}
	return out, total
}

// buildReserved writes series_id 0 rows ordered by step: marks (step 0)
// merged into the deltas (step = series id as int64).
func buildReserved(deltas []*deltaEntry, marks [][]byte, now time.Time) arrow.RecordBatch {
	i := 0
	for i < len(deltas) && int64(deltas[i].id) < 0 {
		i++
	}
	neg, pos := deltas[:i], deltas[i:]
	a := buildMetrics(&points{}, neg, nil, now)
	var parts []arrow.RecordBatch
	parts = append(parts, a)
	for _, m := range marks {
		parts = append(parts, buildMetrics(&points{}, nil, m, now))
	}
	parts = append(parts, buildMetrics(&points{}, pos, nil, now))
	return concatBatches(parts)
}

func concatBatches(parts []arrow.RecordBatch) arrow.RecordBatch {
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	tbl := array.NewTableFromRecords(parts[0].Schema(), parts)
	defer tbl.Release()
	cols := make([]arrow.Array, tbl.NumCols())
	for i := range cols {
		c, err := array.Concatenate(tbl.Column(i).Data().Chunks(), alloc)
		if err != nil {
			panic(err) // same types by construction
		}
		cols[i] = c
		defer c.Release()
	}
	return array.NewRecordBatch(parts[0].Schema(), cols, tbl.NumRows())
}
