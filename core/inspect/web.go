package inspect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/tracking"
)

// The views below are the ones of faces read by JavaScript (the HTTP read
// API, the WebAssembly module): the CLI's views with every 64-bit
// identifier as a decimal string, since JavaScript numbers lose digits
// above 2^53, and non-finite floats as core/jsonl writes them ("NaN",
// "Infinity", "-Infinity"), since JSON has no such numbers.

// StringID is a 64-bit identifier that JSON carries as a decimal string.
type StringID uint64

// MarshalJSON writes the id as a quoted decimal.
func (id StringID) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, strconv.FormatUint(uint64(id), 10)), nil
}

// UnmarshalJSON reads a quoted decimal.
func (id *StringID) UnmarshalJSON(b []byte) error {
	s, err := strconv.Unquote(string(b))
	if err != nil {
		return fmt.Errorf("inspect: id %s is not a quoted decimal", b)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("inspect: id %q: %w", s, err)
	}
	*id = StringID(v)
	return nil
}

// Float is a float64 whose JSON is a number, or "NaN", "Infinity" or
// "-Infinity" as in core/jsonl.
type Float float64

// MarshalJSON writes the value in core/jsonl's float encoding (for finite
// values the same text as encoding/json).
func (f Float) MarshalJSON() ([]byte, error) { return jsonl.AppendFloat(nil, float64(f), 64), nil }

// WebStats is tracking.SeriesStats as JavaScript reads it.
type WebStats struct {
	SeriesID      StringID  `json:"series_id"`
	Count         uint64    `json:"count"`
	FirstStep     int64     `json:"first_step"`
	LastStep      int64     `json:"last_step"`
	LastValue     Float     `json:"last_value"`
	Min           Float     `json:"min"`
	MinStep       int64     `json:"min_step"`
	Max           Float     `json:"max"`
	MaxStep       int64     `json:"max_step"`
	NonFinite     uint64    `json:"non_finite"`
	LastTimestamp time.Time `json:"last_timestamp"`
}

// WebStatsOf converts statistics.
func WebStatsOf(s tracking.SeriesStats) WebStats {
	return WebStats{SeriesID: StringID(s.SeriesID), Count: s.Count, FirstStep: s.FirstStep, LastStep: s.LastStep,
		LastValue: Float(s.LastValue), Min: Float(s.Min), MinStep: s.MinStep, Max: Float(s.Max), MaxStep: s.MaxStep,
		NonFinite: s.NonFinite, LastTimestamp: s.LastTimestamp}
}

// WebSeries is Series (an element of `kv0 series --json`) as JavaScript
// reads it.
type WebSeries struct {
	SeriesID  StringID  `json:"series_id"`
	RunID     string    `json:"run_id"`
	Name      string    `json:"name"`
	Context   string    `json:"context"`
	CreatedAt time.Time `json:"created_at"`
	Stats     *WebStats `json:"stats,omitempty"`
}

// WebSeriesOf converts the elements of RunSeries.
func WebSeriesOf(series []Series) []WebSeries {
	out := make([]WebSeries, len(series))
	for i, s := range series {
		out[i] = WebSeries{SeriesID: StringID(s.ID), RunID: s.RunID, Name: s.Name, Context: s.Context, CreatedAt: s.CreatedAt}
		if s.Stats != nil {
			st := WebStatsOf(*s.Stats)
			out[i].Stats = &st
		}
	}
	return out
}

// ResolveRun finds a run by id or, failing that, by its name when exactly
// one live run has it, as the CLI's run commands take it. An unknown run
// fails matching tracking.ErrNotFound, a name several runs share matching
// ErrInvalid.
func ResolveRun(ctx context.Context, r *tracking.Repo, arg string) (tracking.RunInfo, error) {
	in, err := r.Run(ctx, arg)
	if err == nil || !errors.Is(err, tracking.ErrNotFound) {
		return in, err
	}
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil {
		return in, err
	}
	var found []tracking.RunInfo
	for _, x := range runs {
		if x.Name == arg {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return in, &runError{msg: fmt.Sprintf("no run with id or name %q", arg), kind: tracking.ErrNotFound}
	}
	return in, &runError{msg: fmt.Sprintf("%d runs are named %q; give an id", len(found), arg), kind: ErrInvalid}
}

type runError struct {
	msg  string
	kind error
}

func (e *runError) Error() string        { return e.msg }
func (e *runError) Is(target error) bool { return target == e.kind }

// ---------------------------------------------------------------- points

// Points is one series' points side by side, as the HTTP API's
// /series/points and the WebAssembly module's repo.read give them.
type Points struct {
	SeriesID StringID
	Steps    []int64
	Values   []float64
	// Timestamps are milliseconds since the epoch, the microseconds as the
	// fraction (as JavaScript's Date takes them).
	Timestamps []float64
	// Epochs holds tracking.NoEpoch for a point without one.
	Epochs []int64
	// Mins and Maxs, set when the series was downsampled into buckets,
	// are each kept point's band: the finite minimum and maximum of its
	// bucket (the value itself for the first and last points).
	Mins, Maxs []float64
}

// PointsOptions choose the points SeriesPoints reads.
type PointsOptions struct {
	// MaxPoints downsamples each series to at most this many points
	// (tracking.Downsample); 0 keeps every point.
	MaxPoints int
	Steps     *tracking.StepRange
	Time      *tracking.TimeRange
	// Reserve, when set, is told the bytes the read and the Points are
	// about to hold, as tracking.ReadOptions.Reserve is; its error stops
	// the read.
	Reserve func(bytes int64) error
}

// SeriesPoints reads the points of series of live runs, one Points per id
// in the order given. An id no live run has fails matching
// tracking.ErrNotFound, naming it.
func SeriesPoints(ctx context.Context, r *tracking.Repo, ids []tracking.SeriesID, opts PointsOptions) ([]Points, error) {
	// The series' existence is checked while their points are read (the
	// check waits on the runs and series caches, the read on the data).
	checked := make(chan error, 1)
	go func() { checked <- checkSeries(ctx, r, ids) }()
	data, err := r.ReadMany(ctx, ids, tracking.ReadOptions{Steps: opts.Steps, Time: opts.Time, MaxPoints: opts.MaxPoints,
		Reserve: opts.Reserve})
	if cerr := <-checked; cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	out := make([]Points, len(ids))
	for i, m := range data {
		if opts.Reserve != nil {
			// The timestamps as milliseconds, and the bands.
			per := int64(8)
			if len(m.Buckets) > 0 {
				per += 16
			}
			if err := opts.Reserve(int64(m.Len()) * per); err != nil {
				return nil, err
			}
		}
		p := Points{SeriesID: StringID(ids[i]), Steps: m.Steps, Values: m.Values, Epochs: m.Epochs,
			Timestamps: make([]float64, m.Len())}
		for k, t := range m.Timestamps {
			p.Timestamps[k] = float64(t.UnixMicro()) / 1000
		}
		if len(m.Buckets) > 0 {
			p.Mins, p.Maxs = Bands(m)
		}
		out[i] = p
	}
	return out, nil
}

// PointColumns writes m's steps, values, timestamps (ms since the epoch,
// the µs as a fraction) and epochs (NaN for none) into dst, one column
// after another, as float64s: the layout in which the wasm module hands a
// read to JavaScript. dst must hold 4 × m.Len() values.
func PointColumns(dst []float64, m tracking.MetricData) {
	n := m.Len()
	steps, vals, ts, eps := dst[:n], dst[n:2*n], dst[2*n:3*n], dst[3*n:4*n]
	for k, s := range m.Steps[:n] {
		steps[k] = float64(s)
	}
	copy(vals, m.Values[:n])
	for k, t := range m.Timestamps[:n] {
		ts[k] = float64(t.UnixMicro()) / 1000
	}
	for k, e := range m.Epochs[:n] {
		if e == tracking.NoEpoch {
			eps[k] = math.NaN()
		} else {
			eps[k] = float64(e)
		}
	}
}

// Bands returns each point's band of a downsampled read: the minimum and
// maximum of the points kept of its bucket (the bucket's finite extremes),
// or the value itself for the first and last points, which no bucket
// holds.
func Bands(m tracking.MetricData) (mins, maxs []float64) {
	mins, maxs = slices.Clone(m.Values), slices.Clone(m.Values)
	k := 0
	for _, b := range m.Buckets {
		for k < len(m.Steps) && m.Steps[k] < b.FirstStep {
			k++
		}
		j := k
		for j < len(m.Steps) && m.Steps[j] <= b.LastStep {
			j++
		}
		if j > k {
			lo, hi := slices.Min(m.Values[k:j]), slices.Max(m.Values[k:j])
			for x := k; x < j; x++ {
				mins[x], maxs[x] = lo, hi
			}
		}
		k = j
	}
	return mins, maxs
}

// checkSeries fails with tracking.ErrNotFound naming the first id no live
// run holds.
func checkSeries(ctx context.Context, r *tracking.Repo, ids []tracking.SeriesID) error {
	found, err := r.FindSeries(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			return fmt.Errorf("%w: series %d", tracking.ErrNotFound, id)
		}
	}
	return nil
}

// AppendJSON appends the points as one JSON object:
// {"series_id":"…","steps":[…],"values":[…],"timestamps":[…],"epochs":[…]}
// with "mins" and "maxs" when set; epochs without a value are null and
// non-finite floats are written as core/jsonl writes them.
func (p *Points) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"series_id":"`...)
	dst = strconv.AppendUint(dst, uint64(p.SeriesID), 10)
	dst = append(dst, `","steps":[`...)
	for i, s := range p.Steps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, s, 10)
	}
	// The bands repeat values: a bucket's band is every kept point's of
	// it, and a kept point is often its bucket's minimum or maximum. Each
	// band's text is copied from its predecessor's or from the value's
	// when the floats are the same bits (the same text), so that only
	// new numbers are formatted.
	var starts *[]int
	if p.Mins != nil {
		starts = startsPool.Get().(*[]int)
		*starts = (*starts)[:0]
	}
	dst = appendFloatsLike(append(dst, `],"values":`...), p.Values, nil, nil, starts)
	dst = append(dst, `,"timestamps":[`...)
	for i, ms := range p.Timestamps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMillis(dst, ms)
	}
	dst = append(dst, ']')
	dst = append(dst, `,"epochs":[`...)
	for i, e := range p.Epochs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if e == tracking.NoEpoch {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendInt(dst, e, 10)
		}
	}
	dst = append(dst, ']')
	if p.Mins != nil {
		dst = appendFloatsLike(append(dst, `,"mins":`...), p.Mins, p.Values, *starts, nil)
		dst = appendFloatsLike(append(dst, `,"maxs":`...), p.Maxs, p.Values, *starts, nil)
		startsPool.Put(starts)
	}
	return append(dst, '}')
}

// startsPool holds the offsets of the values' texts AppendJSON copies the
// bands' from.
var startsPool = sync.Pool{New: func() any { return new([]int) }}

// appendFloatsLike appends fs as a JSON array of appendFloat's texts. A
// float with the same bits as its predecessor, or as like[i] (whose text
// starts at dst[likeStarts[i]] and ends one byte before likeStarts[i+1]),
// has its text copied instead of formatted again. When starts is not nil,
// the offset of each text in dst is appended to it, and one more: one
// past the last text's end, as if a comma followed.
func appendFloatsLike(dst []byte, fs, like []float64, likeStarts []int, starts *[]int) []byte {
	dst = append(dst, '[')
	prevFrom, prevTo := 0, 0
	for i, f := range fs {
		if i > 0 {
			dst = append(dst, ',')
		}
		from := len(dst)
		bits := math.Float64bits(f)
		switch {
		case i > 0 && bits == math.Float64bits(fs[i-1]):
			dst = append(dst, dst[prevFrom:prevTo]...)
		case like != nil && bits == math.Float64bits(like[i]):
			dst = append(dst, dst[likeStarts[i]:likeStarts[i+1]-1]...)
		default:
			dst = appendFloat(dst, f)
		}
		prevFrom, prevTo = from, len(dst)
		if starts != nil {
			*starts = append(*starts, from)
		}
	}
	if starts != nil {
		*starts = append(*starts, len(dst)+1)
	}
	return append(dst, ']')
}

// MarshalJSON is AppendJSON.
func (p Points) MarshalJSON() ([]byte, error) { return p.AppendJSON(nil), nil }

// appendMillis writes a timestamp in milliseconds (microseconds / 1000)
// as appendFloat does, without its float formatting: below 2^41 ms (the
// year 2039) the spacing of doubles is under 0.0005, so the shortest
// decimal that reads back as fl(us/1000) is us/1000 itself, written with
// its trailing zeros trimmed.
func appendMillis(dst []byte, ms float64) []byte {
	if ms >= 0 && ms < 1<<41 {
		us := int64(math.Round(ms * 1000))
		if float64(us)/1000 == ms {
			dst = strconv.AppendInt(dst, us/1000, 10)
			if f := us % 1000; f != 0 {
				dst = append(dst, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
				for dst[len(dst)-1] == '0' {
					dst = dst[:len(dst)-1]
				}
			}
			return dst
		}
	}
	return appendFloat(dst, ms)
}

// JSONSize estimates the bytes of AppendJSON, to size its buffer.
func (p *Points) JSONSize() int {
	n := 64 + 70*len(p.Steps)
	if p.Mins != nil {
		n += 48 * len(p.Steps)
	}
	return n
}

// appendFloat writes f as core/jsonl does, with encoding/json's fast path
// for finite values (the same text: ECMAScript's Number::toString layout).
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return jsonl.AppendFloat(dst, f, 64)
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as ECMAScript writes exponents.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// ---------------------------------------------------------------- stats

// SeriesStatsList returns the statistics of series of live runs, one per
// id in the order given (nil for a series without points yet), as the
// objects `kv0 series --json` prints under "stats". An id no live run has
// fails matching tracking.ErrNotFound.
func SeriesStatsList(ctx context.Context, r *tracking.Repo, ids []tracking.SeriesID) ([]*WebStats, error) {
	if err := checkSeries(ctx, r, ids); err != nil {
		return nil, err
	}
	stats, err := r.SeriesStats(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*WebStats, len(ids))
	for i, id := range ids {
		if s, ok := stats[id]; ok {
			w := WebStatsOf(s)
			out[i] = &w
		}
	}
	return out, nil
}
