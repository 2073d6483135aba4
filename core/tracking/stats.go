package tracking

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lance"
)

// SeriesStats summarises the points of one series. Min and Max cover the
// finite values only; NonFinite counts NaN and ±Inf values. When every
// value is non-finite, Min is +Inf and Max is -Inf and their steps are 0.
type SeriesStats struct {
	SeriesID      SeriesID  `json:"series_id"`
	Count         uint64    `json:"count"`
	FirstStep     int64     `json:"first_step"`
	LastStep      int64     `json:"last_step"`
	LastValue     float64   `json:"last_value"`
	Min           float64   `json:"min"`
	MinStep       int64     `json:"min_step"`
	Max           float64   `json:"max"`
	MaxStep       int64     `json:"max_step"`
	NonFinite     uint64    `json:"non_finite"`
	LastTimestamp time.Time `json:"last_timestamp"`
}

// delta is a statistics delta: the summary of some points of one series,
// mergeable with others in any order. seq orders equal last steps (the
// later delta's last value wins).
type delta struct {
	count            uint64
	firstStep        int64
	lastStep         int64
	lastValue        float64
	lastSeq          uint64
	min, max         float64
	minStep, maxStep int64
	nonFinite        uint64
	lastTS           int64 // µs since the epoch
	dirty            bool
	exact            bool // written by Optimize
}

func newDelta() delta {
	return delta{min: math.Inf(1), max: math.Inf(-1)}
}

// add counts one point. seq is the order of the point among equal steps.
func (d *delta) add(step int64, v float64, ts int64, seq uint64) {
	if d.count == 0 || step < d.firstStep {
		d.firstStep = step
	}
	if d.count == 0 || step > d.lastStep || (step == d.lastStep && seq >= d.lastSeq) {
		d.lastStep, d.lastValue, d.lastSeq = step, v, seq
	}
	d.count++
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.nonFinite++
	} else {
		if v < d.min || (v == d.min && step < d.minStep) {
			d.min, d.minStep = v, step
		}
		if v > d.max || (v == d.max && step < d.maxStep) {
			d.max, d.maxStep = v, step
		}
	}
	if ts > d.lastTS {
		d.lastTS = ts
	}
}

// merge folds o into d.
func (d *delta) merge(o delta) {
	if o.count == 0 {
		d.dirty = d.dirty || o.dirty
		return
	}
	if d.count == 0 {
		dirty := d.dirty
		*d = o
		d.dirty = d.dirty || dirty
		return
	}
	d.firstStep = min(d.firstStep, o.firstStep)
	if o.lastStep > d.lastStep || (o.lastStep == d.lastStep && o.lastSeq >= d.lastSeq) {
		d.lastStep, d.lastValue, d.lastSeq = o.lastStep, o.lastValue, o.lastSeq
	}
	d.count += o.count
	d.nonFinite += o.nonFinite
	if o.min < d.min || (o.min == d.min && o.minStep < d.minStep) {
		d.min, d.minStep = o.min, o.minStep
	}
	if o.max > d.max || (o.max == d.max && o.maxStep < d.maxStep) {
		d.max, d.maxStep = o.max, o.maxStep
	}
	d.lastTS = max(d.lastTS, o.lastTS)
	d.dirty = d.dirty || o.dirty
	d.exact = false
}

func (d delta) stats(id SeriesID) SeriesStats {
	s := SeriesStats{SeriesID: id, Count: d.count, FirstStep: d.firstStep, LastStep: d.lastStep,
		LastValue: d.lastValue, Min: d.min, MinStep: d.minStep, Max: d.max, MaxStep: d.maxStep,
		NonFinite: d.nonFinite}
	if d.count > 0 {
		s.LastTimestamp = time.UnixMicro(d.lastTS).UTC()
	}
	return s
}

// Encoding of the metrics stats column (little-endian):
//
//	+------+-------+----------------------------------------------------+
//	| kind | flags | body                                               |
//	| u8   | u8    |                                                    |
//	+------+-------+----------------------------------------------------+
//
//	kind 1, statistics delta (series id in the row's step column):
//	  count u64 | first_step i64 | last_step i64 | last_value f64 |
//	  last_seq u64 | min f64 | min_step i64 | max f64 | max_step i64 |
//	  non_finite u64 | last_timestamp i64 (µs)                  = 90 bytes
//	  flags: bit 0 dirty (recompute from points), bit 1 exact (Optimize)
//
//	kind 2, WAL mark (step 0): seq u64 | writer id (rest of the bytes)
const (
	statsKindDelta = 1
	statsKindMark  = 2
	deltaLen       = 2 + 11*8
)

func (d delta) appendTo(b []byte) []byte {
	var flags byte
	if d.dirty {
		flags |= 1
	}
	if d.exact {
		flags |= 2
	}
	b = append(b, statsKindDelta, flags)
	for _, u := range [...]uint64{d.count, uint64(d.firstStep), uint64(d.lastStep), math.Float64bits(d.lastValue),
		d.lastSeq, math.Float64bits(d.min), uint64(d.minStep), math.Float64bits(d.max), uint64(d.maxStep),
		d.nonFinite, uint64(d.lastTS)} {
		b = binary.LittleEndian.AppendUint64(b, u)
	}
	return b
}

func decodeDelta(b []byte) (delta, error) {
	if len(b) != deltaLen || b[0] != statsKindDelta {
		return delta{}, fmt.Errorf("%w: statistics delta of %d bytes", ErrCorrupt, len(b))
	}
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(b[2+8*i:]) }
	return delta{
		count: u(0), firstStep: int64(u(1)), lastStep: int64(u(2)), lastValue: math.Float64frombits(u(3)),
		lastSeq: u(4), min: math.Float64frombits(u(5)), minStep: int64(u(6)), max: math.Float64frombits(u(7)),
		maxStep: int64(u(8)), nonFinite: u(9), lastTS: int64(u(10)),
		dirty: b[1]&1 != 0, exact: b[1]&2 != 0,
	}, nil
}

func encodeMark(writer string, seq uint64) []byte {
	b := []byte{statsKindMark, 0}
	b = binary.LittleEndian.AppendUint64(b, seq)
	return append(b, writer...)
}

func decodeMark(b []byte) (writer string, seq uint64, ok bool) {
	if len(b) < 10 || b[0] != statsKindMark {
		return "", 0, false
	}
	return string(b[10:]), binary.LittleEndian.Uint64(b[2:]), true
}

// SeriesStats returns the statistics of the given series (every series of
// a live run when ids is nil) from the statistics deltas, without reading
// points, except for series with a dirty delta, which are computed from
// their points. Series without points are absent from the result.
//
// The handle keeps the deltas merged per series for the metrics version it
// last read (see cache.go), so a call on an unchanged repository reads no
// data, and after appends it reads only the new fragments' deltas.
func (r *Repo) SeriesStats(ctx context.Context, ids []SeriesID) (map[SeriesID]SeriesStats, error) {
	if err := r.prepareRead(ctx); err != nil {
		return nil, err
	}
	if ids == nil {
		all, err := r.liveSeries(ctx)
		if err != nil {
			return nil, err
		}
		ids = make([]SeriesID, len(all))
		for i, s := range all {
			ids[i] = s.ID
		}
	}
	c := &r.caches.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.update(ctx, r); err != nil {
		return nil, err
	}
	out := make(map[SeriesID]SeriesStats, len(ids))
	var dirty []SeriesID
	for _, id := range ids {
		dl := c.deltas[id]
		switch {
		case dl == nil:
		case dl.dirty:
			if e, ok := c.exact[id]; ok {
				if e.count > 0 {
					out[id] = e.stats(id)
				}
			} else {
				dirty = append(dirty, id)
			}
		case dl.count > 0:
			out[id] = dl.stats(id)
		}
	}
	if len(dirty) > 0 {
		pts, err := r.readPoints(ctx, c.f.d, dirty, &ReadOptions{})
		if err != nil {
			return nil, err
		}
		for id, p := range pts {
			e := p.exact()
			c.exact[id] = e
			if e.count > 0 {
				out[id] = e.stats(id)
			}
		}
	}
	return out, nil
}

// statsCache holds the statistics deltas of one metrics version merged per
// series, and the statistics computed from points of its dirty series.
type statsCache struct {
	mu     sync.Mutex
	f      follower
	deltas map[SeriesID]*delta // guarded by mu
	exact  map[SeriesID]delta  // dirty series, from their points at f.d
}

// update brings the cache to the newest metrics version. Caller holds c.mu.
func (c *statsCache) update(ctx context.Context, r *Repo) error {
	a, err := c.f.next(ctx, r, MetricsTable)
	if err != nil {
		return err
	}
	if a.same && c.deltas != nil {
		return nil
	}
	if a.reset || c.deltas == nil {
		c.deltas = map[SeriesID]*delta{}
	}
	if len(a.fresh) > 0 {
		if err := foldDeltas(ctx, r, a.d, a.fresh, c.deltas); err != nil {
			c.f.forget()
			c.deltas, c.exact = nil, nil
			return err
		}
	}
	if a.reset || len(a.fresh) > 0 || c.exact == nil {
		c.exact = map[SeriesID]delta{}
	}
	c.f.done(a)
	return nil
}

// foldDeltas merges the statistics deltas of the given fragments of d into
// into.
func foldDeltas(ctx context.Context, r *Repo, d *lance.Dataset, frags []uint64, into map[SeriesID]*delta) error {
	want := make(map[uint64]bool, len(frags))
	for _, id := range frags {
		want[id] = true
	}
	p := planMetrics(d)
	p.ranged = filterRows(p.ranged, func(f lance.Fragment) bool { return want[f.ID] })
	p.scanned = filterRows(p.scanned, func(f lance.Fragment) bool { return want[f.ID] })
	var bad error
	err := r.visitPlan(ctx, d, p, []uint64{0}, deltaCols, func(rec arrow.RecordBatch) error {
		sid := rec.Column(0).(*array.Uint64).Uint64Values()
		step := rec.Column(1).(*array.Int64).Int64Values()
		st := rec.Column(2).(*array.Binary)
		for i, s := range sid {
			if s != 0 || st.IsNull(i) {
				continue
			}
			b := st.Value(i)
			if len(b) == 0 || b[0] != statsKindDelta {
				continue
			}
			dl, err := decodeDelta(b)
			if err != nil {
				bad = err
				continue
			}
			id := SeriesID(step[i])
			cur := into[id]
			if cur == nil {
				nd := newDelta()
				cur = &nd
				into[id] = cur
			}
			cur.merge(dl)
		}
		return nil
	})
	if err == nil {
		err = bad
	}
	return err
}
