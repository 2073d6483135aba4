package tracking

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/internal/par"
	"github.com/kv0/kv0/core/lance"
)

// sidRange is the rows [lo, hi) of one series id in a sorted fragment.
type sidRange struct {
	sid    uint64
	lo, hi uint32
}

// sidSpan is the smallest and largest series id a sorted fragment holds;
// known is false for entries written without one.
type sidSpan struct {
	lo, hi uint64
	known  bool
}

// holdsAny reports whether the fragment may hold one of the sorted ids.
func (sp sidSpan) holdsAny(ids []uint64) bool {
	if !sp.known {
		return true
	}
	i := sort.Search(len(ids), func(i int) bool { return ids[i] >= sp.lo })
	return i < len(ids) && ids[i] <= sp.hi
}

// parseSortedSpans reads ConfigSortedFragments: comma-separated entries
// "id" or "id:lo:hi" (the fragment's smallest and largest series id).
func parseSortedSpans(s string) map[uint64]sidSpan {
	out := map[uint64]sidSpan{}
	for _, f := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(f), ":")
		id, err := strconv.ParseUint(parts[0], 10, 64)
		if err != nil {
			continue
		}
		var sp sidSpan
		if len(parts) == 3 {
			lo, err1 := strconv.ParseUint(parts[1], 10, 64)
			hi, err2 := strconv.ParseUint(parts[2], 10, 64)
			if err1 == nil && err2 == nil && lo <= hi {
				sp = sidSpan{lo: lo, hi: hi, known: true}
			}
		}
		out[id] = sp
	}
	return out
}

func parseSorted(s string) map[uint64]bool {
	out := map[uint64]bool{}
	for id := range parseSortedSpans(s) {
		out[id] = true
	}
	return out
}

func formatSorted(spans map[uint64]sidSpan) string {
	l := make([]uint64, 0, len(spans))
	for id := range spans {
		l = append(l, id)
	}
	slices.Sort(l)
	parts := make([]string, len(l))
	for i, id := range l {
		parts[i] = strconv.FormatUint(id, 10)
		if sp := spans[id]; sp.known {
			parts[i] += ":" + strconv.FormatUint(sp.lo, 10) + ":" + strconv.FormatUint(sp.hi, 10)
		}
	}
	return strings.Join(parts, ",")
}

// fragKey identifies a fragment's immutable contents.
func fragKey(f lance.Fragment) string {
	var b strings.Builder
	for _, df := range f.Files {
		b.WriteString(df.Path)
		b.WriteByte(';')
	}
	return b.String()
}

// fragRanges returns the series ranges (physical rows) of a sorted
// fragment: from the series index in its data file, or, for files written
// before Optimize wrote one, from its series_id column, read once per
// handle. That column cannot give physical rows once the fragment has
// deletions: then it returns nil (the caller scans the fragment).
func (r *Repo) fragRanges(ctx context.Context, d *lance.Dataset, f lance.Fragment) ([]sidRange, error) {
	k := fragKey(f)
	r.cacheMu.Lock()
	rs, ok := r.ranges[k]
	r.cacheMu.Unlock()
	if ok {
		return rs, nil
	}
	// Optimize stores the ranges in the data file itself (sortedindex.go);
	// reading them costs nothing beyond opening the file. Older sorted
	// files have no index: read their series_id column instead.
	b, err := d.DataFileBuffer(ctx, f.ID, sidxBufferID)
	if err != nil {
		return nil, err
	}
	if b != nil {
		var ok bool
		if rs, ok, err = decodeSeriesIndex(b, f.PhysicalRows); err != nil {
			return nil, fmt.Errorf("metrics fragment %d (%s): %w", f.ID, fragKey(f), err)
		}
		if ok {
			r.cacheMu.Lock()
			r.ranges[k] = rs
			r.cacheMu.Unlock()
			return rs, nil
		}
	}
	if f.DeletionFile != "" {
		return nil, nil
	}
	var pos uint32
	err = scanAll(ctx, d, lance.ScanOptions{Columns: []string{"series_id"}, Fragments: []uint64{f.ID}, BatchRows: 1 << 16}, func(rec arrow.RecordBatch) error {
		sid := rec.Column(0).(*array.Uint64).Uint64Values()
		for _, s := range sid {
			if n := len(rs); n > 0 && rs[n-1].sid == s {
				rs[n-1].hi = pos + 1
			} else {
				rs = append(rs, sidRange{sid: s, lo: pos, hi: pos + 1})
			}
			pos++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.cacheMu.Lock()
	r.ranges[k] = rs
	r.cacheMu.Unlock()
	return rs, nil
}

// metricsPlan splits the fragments of a metrics version into sorted ones
// (read by series range), and the rest (scanned), sorted ones first: all
// of their points are older than any point of an unsorted fragment.
type metricsPlan struct {
	ranged  []lance.Fragment
	spans   map[uint64]sidSpan // of the ranged fragments
	scanned []lance.Fragment
}

func planMetrics(d *lance.Dataset) metricsPlan {
	var p metricsPlan
	if d == nil {
		return p
	}
	p.spans = parseSortedSpans(d.Config()[ConfigSortedFragments])
	for _, f := range d.Fragments() {
		if _, sorted := p.spans[f.ID]; sorted {
			p.ranged = append(p.ranged, f)
		} else {
			p.scanned = append(p.scanned, f)
		}
	}
	return p
}

// holding returns the sorted fragments whose series-id span may hold one of
// the wanted (sorted) ids; the others need not be read.
func (p metricsPlan) holding(want []uint64) []lance.Fragment {
	var out []lance.Fragment
	for _, f := range p.ranged {
		if p.spans[f.ID].holdsAny(want) {
			out = append(out, f)
		}
	}
	return out
}

// visitMetrics calls fn with batches holding (at least) every row of the
// wanted series ids, in read order (a later row at the same step wins). Rows
// of other series may be included; fn filters them.
func (r *Repo) visitMetrics(ctx context.Context, d *lance.Dataset, sids []uint64, cols []string, fn func(rec arrow.RecordBatch) error) error {
	if d == nil {
		return nil
	}
	return r.visitPlan(ctx, d, planMetrics(d), sids, cols, fn)
}

// visitPlan is visitMetrics over the fragments of a plan.
func (r *Repo) visitPlan(ctx context.Context, d *lance.Dataset, p metricsPlan, sids []uint64, cols []string, fn func(rec arrow.RecordBatch) error) error {
	want := slices.Clone(sids)
	slices.Sort(want)
	want = slices.Compact(want)
	holding := p.holding(want)
	// A sorted fragment holds each series contiguously: find the wanted
	// series' rows and read those ranges, skipping the pages between them.
	// Fragments are read concurrently (their requests share round trips)
	// and handed to fn in plan order.
	recs := make([][]arrow.RecordBatch, len(holding))
	unknown := make([]bool, len(holding))
	// The unsorted fragments are scanned one by one below, in plan order;
	// opening their files now, all at once, leaves each scan its pages.
	opened := openScanned(ctx, d, p.scanned)
	defer func() { <-opened }() // the scans share the opens under way
	defer func() {
		for _, l := range recs {
			for _, rec := range l {
				rec.Release()
			}
		}
	}()
	err := par.Do(ctx, len(holding), 8, func(ctx context.Context, i int) error {
		f := holding[i]
		rs, err := r.fragRanges(ctx, d, f)
		if err != nil {
			return err
		}
		if rs == nil { // rows unknown: scanned below
			unknown[i] = true
			return nil
		}
		hits := wantedRanges(rs, want)
		if len(hits) == 0 {
			return nil
		}
		rows := rowRanges(hits)
		var rec arrow.RecordBatch
		if cols[0] == "series_id" && f.DeletionFile == "" {
			// Every row of the ranges is live, so the index says whose each
			// is: the series_id column (8 bytes a row) is not read.
			rec, err = d.ReadRanges(ctx, f.ID, rows, cols[1:])
			if err == nil {
				rec, err = withSeriesIDs(rec, hits)
				if err != nil {
					err = fmt.Errorf("metrics fragment %d (%s): %w", f.ID, fragKey(f), err)
				}
			}
		} else {
			rec, err = d.ReadRanges(ctx, f.ID, rows, cols)
		}
		if err == nil {
			recs[i] = []arrow.RecordBatch{rec}
		}
		return err
	})
	if err != nil {
		return err
	}
	for i, l := range recs {
		for j, rec := range l {
			err := fn(rec)
			rec.Release()
			l[j] = nil
			if err != nil {
				recs[i] = l[j+1:]
				return err
			}
		}
		recs[i] = nil
	}
	// Sorted fragments never hold one step of a series twice, so their
	// order among themselves does not matter.
	for i, f := range holding {
		if unknown[i] {
			if err := scanAll(ctx, d, lance.ScanOptions{Columns: cols, Fragments: []uint64{f.ID}, BatchRows: 1 << 16}, fn); err != nil {
				return err
			}
		}
	}
	if len(p.scanned) == 0 {
		return nil
	}
	ids := make([]uint64, len(p.scanned))
	for i, f := range p.scanned {
		ids[i] = f.ID
	}
	// The scanner reads fragments in manifest order; read them one by one
	// to keep the plan's order.
	for _, id := range ids {
		if err := scanAll(ctx, d, lance.ScanOptions{Columns: cols, Fragments: []uint64{id}, BatchRows: 1 << 16}, fn); err != nil {
			return err
		}
	}
	return nil
}

// openScanned opens the data files of the unsorted fragments frags in the
// background (at most warmFragments of them), so that their scans, which
// must run in order, do not each begin with a footer request. The channel
// closes when the opens are done; their errors are left to the scans.
func openScanned(ctx context.Context, d *lance.Dataset, frags []lance.Fragment) <-chan struct{} {
	done := make(chan struct{})
	if len(frags) < 2 || len(frags) > warmFragments {
		close(done)
		return done
	}
	ids := make([]uint64, len(frags))
	for i, f := range frags {
		ids[i] = f.ID
	}
	go func() {
		defer close(done)
		_ = d.OpenFiles(ctx, ids)
	}()
	return done
}

// warmSeries returns a latestWarm hook that finds the rows of the series in
// the sorted fragments of a metrics version (opening their data files).
func (r *Repo) warmSeries(ids []SeriesID) func(context.Context, *lance.Dataset) {
	want := make([]uint64, len(ids))
	for i, id := range ids {
		want[i] = uint64(id)
	}
	slices.Sort(want)
	return func(ctx context.Context, d *lance.Dataset) {
		holding := planMetrics(d).holding(want)
		_ = par.Do(ctx, len(holding), 8, func(ctx context.Context, i int) error {
			_, err := r.fragRanges(ctx, d, holding[i])
			return err
		})
	}
}

// wantedRanges returns the entries of the series index rs of the wanted
// series ids want (sorted), in want's order, which is the rows' order.
func wantedRanges(rs []sidRange, want []uint64) []sidRange {
	var hits []sidRange
	for _, s := range want {
		i := sort.Search(len(rs), func(i int) bool { return rs[i].sid >= s })
		if i < len(rs) && rs[i].sid == s {
			hits = append(hits, rs[i])
		}
	}
	return hits
}

// rowRanges returns the rows of the index entries hits (in row order),
// adjacent ones merged.
func rowRanges(hits []sidRange) []lance.RowRange {
	var rows []lance.RowRange
	for _, h := range hits {
		lo, hi := uint64(h.lo), uint64(h.hi)
		if n := len(rows); n > 0 && rows[n-1].End == lo {
			rows[n-1].End = hi
		} else {
			rows = append(rows, lance.RowRange{Start: lo, End: hi})
		}
	}
	return rows
}

// withSeriesIDs returns rec, the rows of the index entries hits read
// without their series_id column, with that column put first, as the
// entries tell it. rec is released.
func withSeriesIDs(rec arrow.RecordBatch, hits []sidRange) (arrow.RecordBatch, error) {
	defer rec.Release()
	n := 0
	for _, h := range hits {
		n += int(h.hi - h.lo)
	}
	if int64(n) != rec.NumRows() {
		return nil, fmt.Errorf("%w: the series index gives %d rows, read %d", ErrCorrupt, n, rec.NumRows())
	}
	sids := make([]uint64, n)
	off := 0
	for _, h := range hits {
		run := sids[off : off+int(h.hi-h.lo)]
		off += len(run)
		// One store, then copies doubling the filled part: a run of 100k
		// rows is 17 copies instead of a store per row.
		if len(run) > 0 {
			run[0] = h.sid
			for k := 1; k < len(run); k *= 2 {
				copy(run[k:], run[:k])
			}
		}
	}
	col := array.NewUint64Data(array.NewData(arrow.PrimitiveTypes.Uint64, len(sids),
		[]*memory.Buffer{nil, memory.NewBufferBytes(arrow.Uint64Traits.CastToBytes(sids))}, nil, 0, 0))
	defer col.Release()
	fields := append([]arrow.Field{{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64}}, rec.Schema().Fields()...)
	cols := append([]arrow.Array{col}, rec.Columns()...)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows()), nil
}

// NoEpoch stands for a point without an epoch in MetricData.Epochs.
const NoEpoch = math.MinInt64

// MetricData holds points of one series ordered by step, one slice per
// column.
type MetricData struct {
	SeriesID   SeriesID    `json:"series_id"`
	Steps      []int64     `json:"steps"`
	Epochs     []int64     `json:"epochs"` // NoEpoch when the point has none
	Timestamps []time.Time `json:"timestamps"`
	Values     []float64   `json:"values"`
	// Buckets is set by a read that downsampled the series (see
	// ReadOptions.MaxPoints): one entry per bucket, in step order. The
	// points returned between the first and the last are, for each bucket,
	// its smallest and largest finite value (as SeriesStats defines Min and
	// Max); NaN and ±Inf points of a bucket are never returned, and
	// NonFinite counts them, so a bucket of nothing but NaNs returns no
	// point and says so here.
	Buckets []Bucket `json:"buckets,omitempty"`
}

// Bucket describes one bucket of a downsampled read: consecutive points
// that the read folded into at most two (their finite minimum and maximum).
type Bucket struct {
	FirstStep int64 `json:"first_step"` // step of the bucket's first point
	LastStep  int64 `json:"last_step"`  // step of its last point
	Points    int   `json:"points"`     // points in the bucket
	NonFinite int   `json:"non_finite"` // NaN and ±Inf points among them
}

// Len returns the number of points.
func (m *MetricData) Len() int { return len(m.Steps) }

// StepRange selects steps in [From, To).
type StepRange struct{ From, To int64 }

// TimeRange selects point timestamps in [From, To).
type TimeRange struct{ From, To time.Time }

// ReadOptions tune ReadMany. The zero value reads every point.
type ReadOptions struct {
	Steps *StepRange
	Time  *TimeRange
	// MaxPoints, when positive, downsamples each series to at most this
	// many points, keeping the first and last and each bucket's finite
	// minimum and maximum (see Downsample); MetricData.Buckets then tells
	// which buckets held NaN or ±Inf points. Zero reads every point, 1
	// only the last. 2 and 3 are ErrInvalid: they leave no room for a
	// bucket, so a spike between the first and last point would vanish.
	MaxPoints int
	// Reserve, when set, is told the bytes the read is about to hold
	// before it holds them: the points it decodes, gathers or copies, and
	// those it returns (estimates of its own slices and pages, counted as
	// they come, never given back during the read). It may be called from
	// several goroutines at once. An error it returns stops the read,
	// which returns that error (wrapped): a server bounds the memory of a
	// request with it (httpstore/api).
	Reserve func(bytes int64) error
}

// Bytes per point that ReadOptions.Reserve is told of.
const (
	// pointBytes is a point as the reads hold it: step, epoch, timestamp
	// and value, 8 bytes each.
	pointBytes = 32
	// appendedBytes is a point appended to growing slices, which may
	// hold twice what they use.
	appendedBytes = 2 * pointBytes
	// decodedBytes is a point of a decoded page (the epoch's validity and
	// the page's slack included).
	decodedBytes = pointBytes + 8
	// resultBytes is a point of a MetricData (its timestamp a time.Time)
	// and its index in the list of points kept.
	resultBytes = 3*8 + 24 + 8
)

// reserve tells opts.Reserve of n points of size bytes each.
func (opts *ReadOptions) reserve(n int, size int64) error {
	if opts.Reserve == nil || n <= 0 {
		return nil
	}
	return opts.Reserve(int64(n) * size)
}

// check refuses options no read can honour.
func (o ReadOptions) check() error {
	if o.MaxPoints == 2 || o.MaxPoints == 3 {
		return fmt.Errorf("%w: max points %d: want 0 (every point), 1 (the last) or at least 4 (the first, the last and each bucket's min and max)", ErrInvalid, o.MaxPoints)
	}
	return nil
}

type rawPoints struct {
	step, epoch, ts []int64
	val             []float64
	unordered       bool
}

var pointCols = []string{"series_id", "step", "epoch", "timestamp", "value"}

// readPoints reads every point of the series, deduplicated by step (the
// later point wins), ordered by step, telling opts.Reserve of them.
func (r *Repo) readPoints(ctx context.Context, d *lance.Dataset, ids []SeriesID, opts *ReadOptions) (map[SeriesID]*rawPoints, error) {
	out := make(map[SeriesID]*rawPoints, len(ids))
	sids := make([]uint64, len(ids))
	for i, id := range ids {
		sids[i] = uint64(id)
		out[id] = &rawPoints{}
	}
	err := r.visitMetrics(ctx, d, sids, pointCols, func(rec arrow.RecordBatch) error {
		sid := rec.Column(0).(*array.Uint64).Uint64Values()
		step := rec.Column(1).(*array.Int64).Int64Values()
		ep := rec.Column(2).(*array.Int64)
		ts := rec.Column(3).(*array.Timestamp).TimestampValues()
		val := rec.Column(4).(*array.Float64).Float64Values()
		// Rows come in runs of one series (a whole batch, for a range read
		// of a sorted fragment): look each run's series up once and append
		// its columns in bulk.
		for i := 0; i < len(sid); {
			s := sid[i]
			j := i + 1
			for j < len(sid) && sid[j] == s {
				j++
			}
			p := out[SeriesID(s)]
			if s == 0 || p == nil {
				i = j
				continue
			}
			if n := len(p.step); n > 0 && step[i] <= p.step[n-1] {
				p.unordered = true
			}
			if !p.unordered && !increasing(step[i:j]) {
				p.unordered = true
			}
			if err := opts.reserve(j-i, appendedBytes); err != nil {
				return err
			}
			p.step = append(p.step, step[i:j]...)
			p.val = append(p.val, val[i:j]...)
			p.ts = append(p.ts, unsafe.Slice((*int64)(unsafe.Pointer(unsafe.SliceData(ts[i:j]))), j-i)...) // arrow.Timestamp is an int64
			if ep.NullN() == 0 {
				p.epoch = append(p.epoch, ep.Int64Values()[i:j]...)
			} else {
				for k := i; k < j; k++ {
					e := int64(NoEpoch)
					if ep.IsValid(k) {
						e = ep.Value(k)
					}
					p.epoch = append(p.epoch, e)
				}
			}
			i = j
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range out {
		if p.unordered {
			if err := opts.reserve(len(p.step), pointBytes+8); err != nil {
				return nil, err
			}
			p.dedupe()
		}
	}
	return out, nil
}

// increasing reports whether every step of s is above the one before it.
func increasing(s []int64) bool {
	for k := 1; k < len(s); k++ {
		if s[k] <= s[k-1] {
			return false
		}
	}
	return true
}

// dedupe orders the points by step, keeping the last one read of each step.
func (p *rawPoints) dedupe() {
	idx := make([]int, len(p.step))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return p.step[idx[a]] < p.step[idx[b]] })
	var q rawPoints
	for k, i := range idx {
		if k+1 < len(idx) && p.step[idx[k+1]] == p.step[i] {
			continue // a later point at this step follows
		}
		q.step = append(q.step, p.step[i])
		q.epoch = append(q.epoch, p.epoch[i])
		q.ts = append(q.ts, p.ts[i])
		q.val = append(q.val, p.val[i])
	}
	*p = q
}

// ReadMany reads the points of several series, one MetricData per id in
// the order given (empty for unknown series), ordered by step with one
// point per step (the latest written).
func (r *Repo) ReadMany(ctx context.Context, ids []SeriesID, opts ReadOptions) ([]MetricData, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if err := r.prepareRead(ctx); err != nil {
		return nil, err
	}
	d, err := r.latestWarm(ctx, MetricsTable, r.warmSeries(ids))
	if err != nil {
		return nil, err
	}
	if opts.MaxPoints > 0 {
		return r.readSampled(ctx, d, ids, opts) // readsampled.go
	}
	pts, err := r.readPoints(ctx, d, ids, &opts)
	if err != nil {
		return nil, err
	}
	out := make([]MetricData, len(ids))
	handed := make(map[SeriesID]bool, len(ids))
	for i, id := range ids {
		p := pts[id]
		if opts.Steps == nil && opts.Time == nil && (opts.MaxPoints <= 0 || len(p.step) <= opts.MaxPoints) && !handed[id] {
			// Every point is kept: hand the read's own columns over
			// (once per id: a repeated id gets copies) instead of copying
			// them through an index list.
			handed[id] = true
			if err := opts.reserve(len(p.ts), 24); err != nil { // the timestamps as time.Time
				return nil, err
			}
			m := MetricData{SeriesID: id, Steps: p.step, Epochs: p.epoch, Values: p.val, Timestamps: make([]time.Time, len(p.ts))}
			for k, t := range p.ts {
				m.Timestamps[k] = time.UnixMicro(t).UTC()
			}
			if m.Steps == nil {
				m.Steps, m.Epochs, m.Values = []int64{}, []int64{}, []float64{}
			}
			out[i] = m
			continue
		}
		lo, hi := 0, len(p.step)
		if opts.Steps != nil {
			lo = sort.Search(len(p.step), func(i int) bool { return p.step[i] >= opts.Steps.From })
			hi = sort.Search(len(p.step), func(i int) bool { return p.step[i] >= opts.Steps.To })
			hi = max(hi, lo)
		}
		if err := opts.reserve(hi-lo, 8); err != nil {
			return nil, err
		}
		keep := make([]int, 0, hi-lo)
		var buckets []Bucket
		var from, to int64
		if opts.Time != nil {
			from, to = opts.Time.From.UnixMicro(), opts.Time.To.UnixMicro()
		}
		for j := lo; j < hi; j++ {
			if opts.Time != nil && (p.ts[j] < from || p.ts[j] >= to) {
				continue
			}
			keep = append(keep, j)
		}
		if opts.MaxPoints > 0 && len(keep) > opts.MaxPoints {
			keep, buckets = downsampleKept(p.step, p.val, keep, opts.MaxPoints)
		}
		if err := opts.reserve(len(keep), resultBytes); err != nil {
			return nil, err
		}
		m := MetricData{SeriesID: id, Steps: make([]int64, len(keep)), Epochs: make([]int64, len(keep)),
			Timestamps: make([]time.Time, len(keep)), Values: make([]float64, len(keep)), Buckets: buckets}
		for k, j := range keep {
			m.Steps[k], m.Epochs[k], m.Values[k] = p.step[j], p.epoch[j], p.val[j]
			m.Timestamps[k] = time.UnixMicro(p.ts[j]).UTC()
		}
		out[i] = m
	}
	return out, nil
}

// Downsample chooses at most maxPoints indexes of values, in increasing
// order: always the first and the last (whatever their values), and, of
// the points between them cut into (maxPoints-2)/2 buckets of consecutive
// points, each bucket's smallest and largest finite value (the earliest of
// equal ones, as SeriesStats picks its Min and Max). NaN and ±Inf inside a
// bucket are never chosen: they would hide the bucket's finite extremes,
// and a bucket holding nothing else contributes no index. ReadMany reports
// them per bucket (MetricData.Buckets). Bucket b (from 0) holds the indexes
// [1 + b·(n-2)/buckets, 1 + (b+1)·(n-2)/buckets), n being len(values).
// With maxPoints <= 0 or at least len(values) it returns every index;
// with maxPoints 1, the last.
func Downsample(values []float64, maxPoints int) []int {
	keep, _ := downsample(values, maxPoints)
	return keep
}

// bucketSpan is one bucket of downsample: the indexes [from, to), of which
// nonFinite hold NaN or ±Inf.
type bucketSpan struct{ from, to, nonFinite int }

// downsample is Downsample, also returning its buckets (none when it
// returns every index or just the last).
func downsample(values []float64, maxPoints int) ([]int, []bucketSpan) {
	n := len(values)
	if maxPoints <= 0 || n <= maxPoints {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	if maxPoints == 1 {
		return []int{n - 1}, nil
	}
	buckets := (maxPoints - 2) / 2
	out := make([]int, 1, 2*buckets+2)
	spans := make([]bucketSpan, 0, buckets)
	inner := n - 2
	for b := 0; b < buckets; b++ {
		lo := 1 + b*inner/buckets
		hi := 1 + (b+1)*inner/buckets
		if lo >= hi {
			continue // never: inner > buckets
		}
		// v-v is 0 exactly when v is finite (NaN for NaN and ±Inf).
		mi, ma, nonFinite := -1, -1, 0
		i := lo
		for ; i < hi; i++ {
			if v := values[i]; v-v == 0 {
				mi, ma = i, i
				break
			}
			nonFinite++
		}
		if mi >= 0 {
			vmin, vmax := values[mi], values[mi]
			for i++; i < hi; i++ {
				v := values[i]
				if v-v != 0 {
					nonFinite++
					continue
				}
				if v < vmin {
					vmin, mi = v, i
				}
				if v > vmax {
					vmax, ma = v, i
				}
			}
		}
		spans = append(spans, bucketSpan{from: lo, to: hi, nonFinite: nonFinite})
		if mi < 0 {
			continue
		}
		out = append(out, min(mi, ma))
		if mi != ma {
			out = append(out, max(mi, ma))
		}
	}
	return append(out, n-1), spans
}

// exact computes the statistics of deduplicated points.
func (p *rawPoints) exact() delta {
	d := newDelta()
	for i := range p.step {
		d.add(p.step[i], p.val[i], p.ts[i], uint64(i))
	}
	d.lastSeq = 0
	return d
}

var deltaCols = []string{"series_id", "step", "stats"}

// downsampleKept downsamples the points at the indices keep (of step and
// val, in step order) to about maxPoints, as downsample does: it returns
// the indices chosen (keep's own array, reused) and the buckets.
func downsampleKept(step []int64, val []float64, keep []int, maxPoints int) ([]int, []Bucket) {
	vals := make([]float64, len(keep))
	for k, j := range keep {
		vals[k] = val[j]
	}
	sel, spans := downsample(vals, maxPoints)
	buckets := make([]Bucket, len(spans))
	for k, sp := range spans {
		buckets[k] = Bucket{FirstStep: step[keep[sp.from]], LastStep: step[keep[sp.to-1]],
			Points: sp.to - sp.from, NonFinite: sp.nonFinite}
	}
	for k, s := range sel {
		keep[k] = keep[s]
	}
	return keep[:len(sel)], buckets
}
