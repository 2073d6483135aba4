package tracking

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/internal/par"
	"github.com/kv0/kv0/core/lance"
)

// The downsampled read (ReadOptions.MaxPoints > 0).
//
// A downsampled read returns about MaxPoints points of series that usually
// hold far more, so copying every point into per-series slices (as
// readPoints does for full reads) costs more than deciding which points to
// keep. Here the columns of the record batches a read decodes are used in
// place: a series held by one sorted fragment (the usual case after
// Optimize) is one segment of one batch, already ordered by step, and
// downsample runs over its values directly; only the points chosen are
// copied out. Sorted fragments without deletions are read without their
// series_id column, the series index telling which rows belong to which
// series. Series spread over several fragments, or whose steps repeat or go
// back, are gathered and deduplicated exactly as readPoints does, so the
// answer is the same as the full read followed by ReadMany's downsampling.

// pointSeg is consecutive points of one series in read order: slices of
// the columns of a record batch the read holds, or copies of them.
type pointSeg struct {
	step []int64
	val  []float64
	ts   []arrow.Timestamp // nil when ts64 is set
	ts64 []int64
	// Epochs: resolved (NoEpoch for null) in epv, or read from ep at
	// epOff+i.
	epv   []int64
	ep    *array.Int64
	epOff int
}

func (s *pointSeg) len() int { return len(s.step) }

func (s *pointSeg) tsAt(i int) int64 {
	if s.ts64 != nil {
		return s.ts64[i]
	}
	return int64(s.ts[i])
}

func (s *pointSeg) epochAt(i int) int64 {
	if s.epv != nil {
		return s.epv[i]
	}
	if s.ep.IsValid(s.epOff + i) {
		return s.ep.Value(s.epOff + i)
	}
	return NoEpoch
}

// ordered reports whether the steps strictly increase.
func (s *pointSeg) ordered() bool {
	for i := 1; i < len(s.step); i++ {
		if s.step[i] <= s.step[i-1] {
			return false
		}
	}
	return true
}

// segOf returns rows [i, j) of a batch's point columns, not copied.
func segOf(step *array.Int64, ep *array.Int64, ts *array.Timestamp, val *array.Float64, i, j int) pointSeg {
	return pointSeg{step: step.Int64Values()[i:j:j], val: val.Float64Values()[i:j:j],
		ts: ts.TimestampValues()[i:j:j], ep: ep, epOff: i}
}

// sampledCols are the columns of a ranged read split by the series index.
var sampledCols = []string{"step", "epoch", "timestamp", "value"}

// readSegments returns the points of each wanted series as segments in
// read order (the order readPoints appends them in), and the batches they
// point into, which the caller releases once it has copied what it keeps.
func (r *Repo) readSegments(ctx context.Context, d *lance.Dataset, ids []SeriesID, opts *ReadOptions) (map[SeriesID][]pointSeg, []arrow.RecordBatch, error) {
	out := make(map[SeriesID][]pointSeg, len(ids))
	want := make([]uint64, len(ids))
	for i, id := range ids {
		want[i] = uint64(id)
		out[id] = nil
	}
	if d == nil {
		return out, nil, nil
	}
	slices.Sort(want)
	want = slices.Compact(want)
	p := planMetrics(d)
	holding := p.holding(want)
	type ranged struct {
		recs    []arrow.RecordBatch // the rows read, cut at page ends
		series  []sidRange          // with the sid column absent: rows of each series in recs
		unknown bool                // no series index: scanned below
	}
	reads := make([]ranged, len(holding))
	opened := openScanned(ctx, d, p.scanned) // scanned in order below
	defer func() { <-opened }()
	release := func() []arrow.RecordBatch {
		var l []arrow.RecordBatch
		for _, rd := range reads {
			l = append(l, rd.recs...)
		}
		return l
	}
	err := par.Do(ctx, len(holding), 8, func(ctx context.Context, i int) error {
		f := holding[i]
		rs, err := r.fragRanges(ctx, d, f)
		if err != nil {
			return err
		}
		if rs == nil {
			reads[i].unknown = true
			return nil
		}
		hits := wantedRanges(rs, want)
		if len(hits) == 0 {
			return nil
		}
		rows := rowRanges(hits)
		n := 0
		for _, h := range hits {
			n += int(h.hi - h.lo)
		}
		if err := opts.reserve(n, decodedBytes); err != nil {
			return err
		}
		cols := pointCols
		if f.DeletionFile == "" {
			// Every row of the ranges is live: the index says whose it is.
			cols = sampledCols
			var at uint32
			for _, h := range hits {
				n := h.hi - h.lo
				reads[i].series = append(reads[i].series, sidRange{sid: h.sid, lo: at, hi: at + n})
				at += n
			}
		}
		// Batches cut at page ends are slices of the decoded pages: a series
		// within one page (Optimize starts a page at each series) is one
		// segment, never copied.
		recs, err := d.ReadRangesChunks(ctx, f.ID, rows, cols)
		reads[i].recs = recs
		if err != nil {
			return err
		}
		if reads[i].series != nil {
			var read int64
			for _, rec := range recs {
				read += rec.NumRows()
			}
			if n := reads[i].series[len(reads[i].series)-1].hi; read != int64(n) {
				return fmt.Errorf("metrics fragment %d (%s): series index gives %d rows, read %d", f.ID, fragKey(f), n, read)
			}
		}
		return nil
	})
	if err != nil {
		releaseRecs(release())
		return nil, nil, err
	}
	for _, rd := range reads {
		var at uint32 // rows of rd.recs before rec
		series := rd.series
		for _, rec := range rd.recs {
			step, ep := col[*array.Int64](rec, "step"), col[*array.Int64](rec, "epoch")
			ts, val := col[*array.Timestamp](rec, "timestamp"), col[*array.Float64](rec, "value")
			if step == nil || ep == nil || ts == nil || val == nil {
				releaseRecs(release())
				return nil, nil, fmt.Errorf("metrics: a range read lacks a point column")
			}
			if rd.series != nil {
				end := at + uint32(rec.NumRows())
				for len(series) > 0 && series[0].lo < end {
					s := series[0]
					lo, hi := max(s.lo, at), min(s.hi, end)
					if id := SeriesID(s.sid); hi > lo {
						if _, ok := out[id]; ok {
							out[id] = append(out[id], segOf(step, ep, ts, val, int(lo-at), int(hi-at)))
						}
					}
					if s.hi > end {
						break // continues in the next batch
					}
					series = series[1:]
				}
				at = end
				continue
			}
			forSeriesRuns(col[*array.Uint64](rec, "series_id").Uint64Values(), func(id SeriesID, i, j int) {
				if _, ok := out[id]; ok {
					out[id] = append(out[id], segOf(step, ep, ts, val, i, j))
				}
			})
		}
	}
	recs := release()
	// Fragments without a series index, then the unsorted ones, in plan
	// order: their batches live only during the callback, so the points
	// are copied.
	copyRows := func(rec arrow.RecordBatch) error {
		step, ep := rec.Column(1).(*array.Int64), rec.Column(2).(*array.Int64)
		ts, val := rec.Column(3).(*array.Timestamp), rec.Column(4).(*array.Float64)
		var err error
		forSeriesRuns(rec.Column(0).(*array.Uint64).Uint64Values(), func(id SeriesID, i, j int) {
			if _, ok := out[id]; !ok || err != nil {
				return
			}
			if err = opts.reserve(j-i, decodedBytes); err != nil {
				return
			}
			s := pointSeg{step: slices.Clone(step.Int64Values()[i:j]), val: slices.Clone(val.Float64Values()[i:j]),
				ts: slices.Clone(ts.TimestampValues()[i:j]), epv: make([]int64, j-i)}
			for k := range s.epv {
				s.epv[k] = NoEpoch
				if ep.IsValid(i + k) {
					s.epv[k] = ep.Value(i + k)
				}
			}
			out[id] = append(out[id], s)
		})
		return err
	}
	var scan []uint64
	for i, f := range holding {
		if reads[i].unknown {
			scan = append(scan, f.ID)
		}
	}
	for _, f := range p.scanned {
		scan = append(scan, f.ID)
	}
	for _, id := range scan {
		if err := scanAll(ctx, d, lance.ScanOptions{Columns: pointCols, Fragments: []uint64{id}, BatchRows: 1 << 16}, copyRows); err != nil {
			releaseRecs(recs)
			return nil, nil, err
		}
	}
	return out, recs, nil
}

// forSeriesRuns calls fn for each run [i, j) of equal series ids in sid
// (the reserved id 0 left out).
func forSeriesRuns(sid []uint64, fn func(id SeriesID, i, j int)) {
	for i := 0; i < len(sid); {
		j := i + 1
		for j < len(sid) && sid[j] == sid[i] {
			j++
		}
		if sid[i] != 0 {
			fn(SeriesID(sid[i]), i, j)
		}
		i = j
	}
}

func releaseRecs(l []arrow.RecordBatch) {
	for _, rec := range l {
		rec.Release()
	}
}

// joinSegs returns the points of a series' segments deduplicated by step
// (the later point wins) and ordered by step: the one segment itself when
// it is already ordered, else a copy.
func joinSegs(segs []pointSeg) pointSeg {
	switch {
	case len(segs) == 0:
		return pointSeg{}
	case len(segs) == 1 && segs[0].ordered():
		return segs[0]
	}
	n := 0
	for i := range segs {
		n += segs[i].len()
	}
	p := rawPoints{step: make([]int64, 0, n), epoch: make([]int64, 0, n), ts: make([]int64, 0, n), val: make([]float64, 0, n)}
	for i := range segs {
		s := &segs[i]
		if m := len(p.step); m > 0 && s.len() > 0 && s.step[0] <= p.step[m-1] {
			p.unordered = true
		}
		p.unordered = p.unordered || !s.ordered()
		p.step = append(p.step, s.step...)
		p.val = append(p.val, s.val...)
		for k := range s.len() {
			p.ts = append(p.ts, s.tsAt(k))
			p.epoch = append(p.epoch, s.epochAt(k))
		}
	}
	if p.unordered {
		p.dedupe()
	}
	return pointSeg{step: p.step, val: p.val, ts64: p.ts, epv: p.epoch}
}

// readSampled is ReadMany with opts.MaxPoints > 0 on metrics version d.
// Series a stored level describes exactly are answered from it
// (levels.go); the others are read and downsampled here.
func (r *Repo) readSampled(ctx context.Context, d *lance.Dataset, ids []SeriesID, opts ReadOptions) ([]MetricData, error) {
	plan, err := r.planLevels(ctx, d, ids, opts)
	if err != nil {
		return nil, err
	}
	var rest []SeriesID
	for _, id := range ids {
		if !plan.ids[id] {
			rest = append(rest, id)
		}
	}
	// The levels and the points of the other series are read at once.
	var (
		lvl  map[SeriesID]MetricData
		segs map[SeriesID][]pointSeg
		recs []arrow.RecordBatch
	)
	err = par.Do(ctx, 2, 2, func(ctx context.Context, i int) (err error) {
		if i == 0 {
			lvl, err = r.fetchLevels(ctx, d, plan, opts)
		} else if len(rest) > 0 {
			segs, recs, err = r.readSegments(ctx, d, rest, &opts)
		}
		return err
	})
	defer releaseRecs(recs)
	if err != nil {
		return nil, err
	}
	out := make([]MetricData, len(ids))
	handed := make(map[SeriesID]bool, len(lvl))
	for i, id := range ids {
		m, ok := lvl[id]
		if !ok {
			if err := reserveSample(segs[id], &opts); err != nil {
				return nil, err
			}
			out[i] = sampleSeries(id, joinSegs(segs[id]), opts)
			continue
		}
		if err := opts.reserve(m.Len(), resultBytes); err != nil {
			return nil, err
		}
		if handed[id] { // asked for twice: each answer owns its slices
			m = m.clone()
		}
		handed[id] = true
		out[i] = m
	}
	return out, nil
}

// reserveSample tells opts.Reserve of what joinSegs and sampleSeries
// hold for a series read as segs: the joined copy (unless it is the one
// segment, in order) and the points kept.
func reserveSample(segs []pointSeg, opts *ReadOptions) error {
	if opts.Reserve == nil {
		return nil
	}
	n := 0
	for i := range segs {
		n += segs[i].len()
	}
	if len(segs) > 1 || len(segs) == 1 && !segs[0].ordered() {
		if err := opts.reserve(n, pointBytes); err != nil {
			return err
		}
	}
	if opts.Time != nil {
		return opts.reserve(n, 8+resultBytes) // the points of the range, then those kept
	}
	return opts.reserve(min(n, opts.MaxPoints), resultBytes)
}

// sampleSeries applies the step and time ranges and the downsampling of
// opts to the ordered points of one series, copying out what it keeps.
func sampleSeries(id SeriesID, p pointSeg, opts ReadOptions) MetricData {
	lo, hi := 0, p.len()
	if opts.Steps != nil {
		lo = sort.Search(p.len(), func(i int) bool { return p.step[i] >= opts.Steps.From })
		hi = sort.Search(p.len(), func(i int) bool { return p.step[i] >= opts.Steps.To })
		hi = max(hi, lo)
	}
	var keep []int
	var buckets []Bucket
	if opts.Time == nil {
		// Every point of [lo, hi) is a candidate: downsample in place.
		sel, spans := downsample(p.val[lo:hi], opts.MaxPoints)
		for k := range sel {
			sel[k] += lo
		}
		keep = sel
		if hi-lo > opts.MaxPoints {
			buckets = make([]Bucket, len(spans))
			for k, sp := range spans {
				buckets[k] = Bucket{FirstStep: p.step[lo+sp.from], LastStep: p.step[lo+sp.to-1],
					Points: sp.to - sp.from, NonFinite: sp.nonFinite}
			}
		}
	} else {
		from, to := opts.Time.From.UnixMicro(), opts.Time.To.UnixMicro()
		keep = make([]int, 0, hi-lo)
		for j := lo; j < hi; j++ {
			if t := p.tsAt(j); t >= from && t < to {
				keep = append(keep, j)
			}
		}
		if len(keep) > opts.MaxPoints {
			keep, buckets = downsampleKept(p.step, p.val, keep, opts.MaxPoints)
		}
	}
	n := len(keep)
	ints := make([]int64, 2*n)
	m := MetricData{SeriesID: id, Steps: ints[:n:n], Epochs: ints[n:], Timestamps: make([]time.Time, n),
		Values: make([]float64, n), Buckets: buckets}
	for k, j := range keep {
		m.Steps[k], m.Epochs[k], m.Values[k] = p.step[j], p.epochAt(j), p.val[j]
		m.Timestamps[k] = time.UnixMicro(p.tsAt(j)).UTC()
	}
	return m
}
