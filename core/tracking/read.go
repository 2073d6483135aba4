package tracking

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lance"
)

// scanAll calls fn with every batch of d's live rows (nil d: nothing).
func scanAll(ctx context.Context, d *lance.Dataset, opts lance.ScanOptions, fn func(rec arrow.RecordBatch) error) error {
	if d == nil {
		return nil
	}
	s, err := d.Scan(ctx, opts)
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Next() {
		if err := fn(s.Record()); err != nil {
			return err
		}
	}
	return s.Err()
}

func col[T arrow.Array](rec arrow.RecordBatch, name string) T {
	idx := rec.Schema().FieldIndices(name)
	var zero T
	if len(idx) == 0 {
		return zero
	}
	a, _ := rec.Column(idx[0]).(T)
	return a
}

func optStr(a *array.String, i int) string {
	if a == nil || a.IsNull(i) {
		return ""
	}
	return a.Value(i)
}

func usTime(v arrow.Timestamp) time.Time { return time.UnixMicro(int64(v)).UTC() }

// decodeRuns turns a runs batch into rows.
func decodeRuns(rec arrow.RecordBatch, fn func(runRow)) {
	seq := col[*array.Uint64](rec, "seq")
	id := col[*array.String](rec, "run_id")
	name := col[*array.String](rec, "name")
	exp := col[*array.String](rec, "experiment")
	desc := col[*array.String](rec, "description")
	tags := col[*array.List](rec, "tags")
	status := col[*array.String](rec, "status")
	arch := col[*array.Boolean](rec, "archived")
	created := col[*array.Timestamp](rec, "created_at")
	updated := col[*array.Timestamp](rec, "updated_at")
	ended := col[*array.Timestamp](rec, "ended_at")
	fields := col[*array.Uint32](rec, "fields")
	kind := col[*array.String](rec, "kind")
	target := col[*array.String](rec, "target")
	var tagv *array.String
	if tags != nil {
		tagv, _ = tags.ListValues().(*array.String)
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		rw := runRow{seq: seq.Value(i), info: RunInfo{ID: id.Value(i), Name: optStr(name, i), Experiment: optStr(exp, i),
			Description: optStr(desc, i), Status: optStr(status, i), Kind: optStr(kind, i), Target: optStr(target, i)}}
		if arch != nil && arch.IsValid(i) {
			rw.info.Archived = arch.Value(i)
		}
		if created != nil && created.IsValid(i) {
			rw.info.CreatedAt = usTime(created.Value(i))
		}
		if updated != nil && updated.IsValid(i) {
			rw.info.UpdatedAt = usTime(updated.Value(i))
		}
		if ended != nil && ended.IsValid(i) {
			rw.info.EndedAt = usTime(ended.Value(i))
		}
		if fields != nil && fields.IsValid(i) {
			rw.fields, rw.hasMsk = fields.Value(i), true
			if rw.fields&FieldHeartbeat != 0 {
				rw.info.HeartbeatAt = rw.info.UpdatedAt
			}
		}
		rw.info.Tags = []string{}
		if tags != nil && tags.IsValid(i) && tagv != nil {
			s, e := tags.ValueOffsets(i)
			for j := s; j < e; j++ {
				rw.info.Tags = append(rw.info.Tags, tagv.Value(int(j)))
			}
		}
		fn(rw)
	}
}

// runAcc merges the change rows of one run field by field.
type runAcc struct {
	info    RunInfo
	seqs    [numFields]uint64
	has     uint32 // fields set by some row
	deleted bool
	rows    int
}

func (a *runAcc) apply(rw runRow) {
	if rw.hasMsk && rw.fields == FieldDeleted {
		a.deleted = true
		return
	}
	mask := FieldsAll
	if rw.hasMsk {
		mask = rw.fields & fieldsKnown
	}
	a.rows++
	a.info.ID = rw.info.ID
	for m := mask; m != 0; m &= m - 1 {
		i := bits.TrailingZeros32(m)
		bit := uint32(1) << i
		if a.has&bit != 0 && rw.seq < a.seqs[i] {
			continue
		}
		a.has |= bit
		a.seqs[i] = rw.seq
		src, dst := &rw.info, &a.info
		switch bit {
		case FieldName:
			dst.Name = src.Name
		case FieldExperiment:
			dst.Experiment = src.Experiment
		case FieldDescription:
			dst.Description = src.Description
		case FieldTags:
			dst.Tags = src.Tags
		case FieldStatus:
			dst.Status = src.Status
		case FieldArchived:
			dst.Archived = src.Archived
		case FieldCreatedAt:
			dst.CreatedAt = src.CreatedAt
		case FieldUpdatedAt:
			dst.UpdatedAt = src.UpdatedAt
		case FieldEndedAt:
			dst.EndedAt = src.EndedAt
		case FieldKind:
			dst.Kind = src.Kind
		case FieldTarget:
			dst.Target = src.Target
		case FieldHeartbeat:
			dst.HeartbeatAt = src.HeartbeatAt
		}
	}
}

func (a *runAcc) live() bool { return !a.deleted && a.rows > 0 }

func (a *runAcc) result() RunInfo {
	in := a.info
	if in.Tags == nil {
		in.Tags = []string{}
	}
	return in
}

// loadRuns merges every run of the runs table (mark rows skipped).
func loadRuns(ctx context.Context, d *lance.Dataset) (map[string]*runAcc, error) {
	accs := map[string]*runAcc{}
	err := scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		decodeRuns(rec, func(rw runRow) {
			if isMarkRun(rw.info.ID) {
				return
			}
			a := accs[rw.info.ID]
			if a == nil {
				a = &runAcc{}
				accs[rw.info.ID] = a
			}
			a.apply(rw)
		})
		return nil
	})
	return accs, err
}

func scanTombstones(ctx context.Context, d *lance.Dataset, frags []uint64) (map[string]bool, error) {
	out := map[string]bool{}
	err := scanAll(ctx, d, lance.ScanOptions{Columns: []string{"run_id", "fields"}, Fragments: frags}, func(rec arrow.RecordBatch) error {
		id := col[*array.String](rec, "run_id")
		f := col[*array.Uint32](rec, "fields")
		for i := 0; i < int(rec.NumRows()); i++ {
			if f.IsValid(i) && f.Value(i) == FieldDeleted {
				out[id.Value(i)] = true
			}
		}
		return nil
	})
	return out, err
}

// prepareRead flushes the handle's buffer (read-your-writes).
func (r *Repo) prepareRead(ctx context.Context) error {
	if r.opts.ReadOnly || !writable {
		return nil
	}
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return ErrClosed
	}
	return r.Flush(ctx)
}

// RunFilter selects runs; zero fields match everything.
type RunFilter struct {
	Experiment string
	// Status matches the reported status: StatusCrashed selects running
	// runs with an old heartbeat, StatusRunning only the others. Any
	// other word than the five statuses is ErrInvalid.
	Status string
	// Tags lists tags every selected run carries.
	Tags []string
	// Archived, when set, selects archived (true) or active (false) runs.
	Archived *bool
	// Params compares parameter values through the typed columns.
	Params []ParamFilter
}

// ParamFilter compares a parameter with a value: numbers through the num
// column, strings through text, booleans through flag (= and != only). A
// run without the key never matches.
type ParamFilter struct {
	Key   string
	Op    string // "=", "!=", "<", "<=", ">", ">="
	Value any
}

// CheckStatusFilter returns an error matching ErrInvalid unless s is a
// status a run can be reported with (the four stored ones and
// StatusCrashed), or "" for any.
func CheckStatusFilter(s string) error {
	switch s {
	case "", StatusRunning, StatusFinished, StatusFailed, StatusAborted, StatusCrashed:
		return nil
	}
	return fmt.Errorf("%w: status %q is none of running, finished, failed, aborted, crashed", ErrInvalid, s)
}

// Runs returns the live runs matching f, oldest first.
func (r *Repo) Runs(ctx context.Context, f RunFilter) ([]RunInfo, error) {
	if err := CheckStatusFilter(f.Status); err != nil {
		return nil, err
	}
	for _, pf := range f.Params {
		if err := pf.check(); err != nil {
			return nil, err
		}
	}
	if err := r.prepareRead(ctx); err != nil {
		return nil, err
	}
	v, err := r.runsView(ctx)
	if err != nil {
		return nil, err
	}
	var params map[string]map[string]ParamValue
	if len(f.Params) > 0 {
		if params, err = r.loadParams(ctx, ""); err != nil {
			return nil, err
		}
	}
	out := []RunInfo{} // none matching: an empty list (JSON []), not nil (null)
	now := r.opts.Now()
	for i := range v.live {
		in := &v.live[i]
		status := in.Status
		if status == StatusRunning {
			c := RunInfo{Status: status, HeartbeatAt: in.HeartbeatAt}
			r.reportStatus(&c, now)
			status = c.Status
		}
		if f.Experiment != "" && in.Experiment != f.Experiment || f.Status != "" && status != f.Status ||
			f.Archived != nil && in.Archived != *f.Archived {
			continue
		}
		ok := true
		for _, t := range f.Tags {
			if !slices.Contains(in.Tags, t) {
				ok = false
			}
		}
		for _, pf := range f.Params {
			p, has := params[in.ID][pf.Key]
			if !has || !pf.match(p) {
				ok = false
			}
		}
		if ok {
			if out == nil {
				out = make([]RunInfo, 0, len(v.live))
			}
			c := in.clone()
			c.Status = status
			out = append(out, c)
		}
	}
	return out, nil
}

// own replaces the strings of a run decoded from Arrow arrays (which share
// the decoded pages) by copies, so that a cache keeps only what it uses.
func (in *RunInfo) own() {
	in.ID, in.Name, in.Experiment = strings.Clone(in.ID), strings.Clone(in.Name), strings.Clone(in.Experiment)
	in.Description, in.Status = strings.Clone(in.Description), strings.Clone(in.Status)
	in.Kind, in.Target = strings.Clone(in.Kind), strings.Clone(in.Target)
	for i, t := range in.Tags {
		in.Tags[i] = strings.Clone(t)
	}
}

// clone copies a run's state, tags included, so that callers never share
// memory with the handle's cache.
func (in *RunInfo) clone() RunInfo {
	c := *in
	c.Tags = slices.Clone(in.Tags)
	return c
}

// runsCache holds the runs table folded field by field (see cache.go).
type runsCache struct {
	mu   sync.Mutex
	f    follower
	accs map[string]*runAcc // guarded by mu
	view *runsView
}

// runsView is the live runs of one version of the runs table; it is never
// changed once built.
type runsView struct {
	live  []RunInfo      // oldest first: created_at, then id
	index map[string]int // run id -> position in live
}

// runsView returns the live runs of the newest version of the runs table,
// folding only the fragments appended since the cached version.
func (r *Repo) runsView(ctx context.Context) (*runsView, error) {
	c := &r.caches.runs
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.f.next(ctx, r, RunsTable)
	if err != nil {
		return nil, err
	}
	if a.same && c.view != nil {
		return c.view, nil
	}
	if a.reset || c.accs == nil {
		c.accs = map[string]*runAcc{}
	} else if len(a.fresh) == 0 && c.view != nil {
		c.f.done(a) // a commit that added no rows
		return c.view, nil
	}
	if len(a.fresh) > 0 {
		err := scanAll(ctx, a.d, lance.ScanOptions{Fragments: a.fresh}, func(rec arrow.RecordBatch) error {
			decodeRuns(rec, func(rw runRow) {
				if isMarkRun(rw.info.ID) {
					return
				}
				rw.info.own()
				acc := c.accs[rw.info.ID]
				if acc == nil {
					acc = &runAcc{}
					c.accs[rw.info.ID] = acc
				}
				acc.apply(rw)
			})
			return nil
		})
		if err != nil {
			c.f.forget()
			c.accs, c.view = nil, nil
			return nil, err
		}
	}
	c.f.done(a)
	order := make([]*runAcc, 0, len(c.accs))
	for _, acc := range c.accs {
		if acc.live() {
			order = append(order, acc)
		}
	}
	slices.SortFunc(order, func(a, b *runAcc) int {
		return cmp.Or(a.info.CreatedAt.Compare(b.info.CreatedAt), cmp.Compare(a.info.ID, b.info.ID))
	})
	v := &runsView{live: make([]RunInfo, len(order))}
	for i, acc := range order {
		v.live[i] = acc.result()
	}
	v.index = make(map[string]int, len(v.live))
	for i := range v.live {
		v.index[v.live[i].ID] = i
	}
	c.view = v
	return v, nil
}

// check reports a filter that could match nothing by its form: an empty
// key, an unknown operator, a value neither a number, a string nor a
// boolean, a boolean with an ordering. Errors wrap ErrInvalid.
func (pf ParamFilter) check() error {
	bad := func(why string) error {
		return fmt.Errorf("%w: parameter filter %q %q %v: %s", ErrInvalid, pf.Key, pf.Op, pf.Value, why)
	}
	if pf.Key == "" {
		return bad("empty key")
	}
	switch pf.Op {
	case "", "=", "==", "!=", "<>", "<", "<=", ">", ">=":
	default:
		return bad("want the operator =, !=, <, <=, > or >=")
	}
	switch v := pf.Value.(type) {
	case string:
	case bool:
		if o := pf.Op; o != "" && o != "=" && o != "==" && o != "!=" && o != "<>" {
			return bad("booleans compare with = and != only")
		}
	default:
		if f, ok := toFloat(v); !ok || math.IsNaN(f) {
			return bad("want a number, a string or a boolean")
		}
	}
	return nil
}

func (pf ParamFilter) match(p ParamValue) bool {
	var c int
	switch v := pf.Value.(type) {
	case string:
		if p.Text == nil {
			return false
		}
		c = cmp.Compare(*p.Text, v)
	case bool:
		if p.Flag == nil {
			return false
		}
		switch {
		case *p.Flag == v:
			c = 0
		case v:
			c = -1
		default:
			c = 1
		}
	default:
		f, ok := toFloat(v)
		if !ok || p.Num == nil {
			return false
		}
		c = cmp.Compare(*p.Num, f)
	}
	switch pf.Op {
	case "=", "==", "":
		return c == 0
	case "!=", "<>":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

// Run returns the merged state of one run, or ErrNotFound.
func (r *Repo) Run(ctx context.Context, id string) (RunInfo, error) {
	if err := r.prepareRead(ctx); err != nil {
		return RunInfo{}, err
	}
	v, err := r.runsView(ctx)
	if err != nil {
		return RunInfo{}, err
	}
	i, ok := v.index[id]
	if !ok {
		return RunInfo{}, fmt.Errorf("%w: run %q", ErrNotFound, id)
	}
	in := v.live[i].clone()
	r.reportStatus(&in, r.opts.Now())
	return in, nil
}

// loadParams returns the newest value of every key of every run (or of
// runID only), mark rows skipped.
func (r *Repo) loadParams(ctx context.Context, runID string) (map[string]map[string]ParamValue, error) {
	d, err := r.latest(ctx, ParamsTable)
	if err != nil {
		return nil, err
	}
	type cell struct {
		seq uint64
		p   ParamValue
	}
	acc := map[string]map[string]cell{}
	err = scanAll(ctx, d, lance.ScanOptions{}, func(rec arrow.RecordBatch) error {
		decodeParams(rec, func(p paramRow) {
			if runID != "" && p.runID != runID || isMarkRun(p.runID) {
				return
			}
			m := acc[p.runID]
			if m == nil {
				m = map[string]cell{}
				acc[p.runID] = m
			}
			if c, ok := m[p.key]; !ok || p.seq >= c.seq {
				m[p.key] = cell{p.seq, p.p}
			}
		})
		return nil
	})
	out := make(map[string]map[string]ParamValue, len(acc))
	for id, m := range acc {
		o := make(map[string]ParamValue, len(m))
		for k, c := range m {
			o[k] = c.p
		}
		out[id] = o
	}
	return out, err
}

func decodeParams(rec arrow.RecordBatch, fn func(paramRow)) {
	seq := col[*array.Uint64](rec, "seq")
	id := col[*array.String](rec, "run_id")
	key := col[*array.String](rec, "key")
	val := col[*array.String](rec, "value")
	num := col[*array.Float64](rec, "num")
	text := col[*array.String](rec, "text")
	flag := col[*array.Boolean](rec, "flag")
	for i := 0; i < int(rec.NumRows()); i++ {
		p := paramRow{seq: seq.Value(i), runID: id.Value(i), key: key.Value(i), p: ParamValue{Value: json.RawMessage(val.Value(i))}}
		if num.IsValid(i) {
			v := num.Value(i)
			p.p.Num = &v
		}
		if text.IsValid(i) {
			v := text.Value(i)
			p.p.Text = &v
		}
		if flag.IsValid(i) {
			v := flag.Value(i)
			p.p.Flag = &v
		}
		fn(p)
	}
}

// AllParams returns the parameters of a run by dotted key (ErrNotFound for
// unknown or deleted runs).
func (r *Repo) AllParams(ctx context.Context, runID string) (map[string]ParamValue, error) {
	if _, err := r.Run(ctx, runID); err != nil {
		return nil, err
	}
	all, err := r.loadParams(ctx, runID)
	if err != nil {
		return nil, err
	}
	if m := all[runID]; m != nil {
		return m, nil
	}
	return map[string]ParamValue{}, nil
}

// SeriesInfo describes one metric series.
type SeriesInfo struct {
	ID        SeriesID  `json:"series_id"`
	RunID     string    `json:"run_id"`
	Name      string    `json:"name"`
	Context   string    `json:"context"` // JSON with sorted keys
	CreatedAt time.Time `json:"created_at"`
}

// loadSeries returns the series of runID (every run when empty), the
// earliest row of each id, sorted by run, name and context. The slice is
// the caller's.
func (r *Repo) loadSeries(ctx context.Context, runID string) ([]SeriesInfo, error) {
	v, err := r.seriesView(ctx)
	if err != nil {
		return nil, err
	}
	if runID == "" {
		return slices.Clone(v.all), nil
	}
	lo, hi := v.runSpan(runID)
	return slices.Clone(v.all[lo:hi]), nil
}

// seriesCache holds the series table (see cache.go).
type seriesCache struct {
	mu   sync.Mutex
	f    follower
	byID map[SeriesID]SeriesInfo // the earliest row of each id; guarded by mu
	view *seriesView
}

// seriesView is every series of one version of the series table; it is
// never changed once built.
type seriesView struct {
	all []SeriesInfo // sorted by run, name and context
}

// runSpan returns the positions of runID's series in all.
func (v *seriesView) runSpan(runID string) (int, int) {
	lo, _ := slices.BinarySearchFunc(v.all, runID, func(s SeriesInfo, id string) int { return cmp.Compare(s.RunID, id) })
	hi := lo
	for hi < len(v.all) && v.all[hi].RunID == runID {
		hi++
	}
	return lo, hi
}

// seriesView returns the series of the newest version of the series table,
// reading only the fragments appended since the cached version.
func (r *Repo) seriesView(ctx context.Context) (*seriesView, error) {
	c := &r.caches.series
	c.mu.Lock()
	defer c.mu.Unlock()
	a, err := c.f.next(ctx, r, SeriesTable)
	if err != nil {
		return nil, err
	}
	if a.same && c.view != nil {
		return c.view, nil
	}
	if a.reset || c.byID == nil {
		c.byID = map[SeriesID]SeriesInfo{}
	} else if len(a.fresh) == 0 && c.view != nil {
		c.f.done(a)
		return c.view, nil
	}
	if len(a.fresh) > 0 {
		err := scanAll(ctx, a.d, lance.ScanOptions{Fragments: a.fresh}, func(rec arrow.RecordBatch) error {
			eachSeriesRow(rec, func(r seriesRow) {
				if isMarkRun(r.runID) {
					return
				}
				s := SeriesInfo{ID: r.id, RunID: r.runID, Name: r.name, Context: r.ctx, CreatedAt: usTime(arrow.Timestamp(r.created))}
				if old, ok := c.byID[s.ID]; !ok || s.CreatedAt.Before(old.CreatedAt) {
					// Strings of Arrow arrays share the decoded pages: the
					// cache keeps its own copies.
					s.RunID, s.Name, s.Context = strings.Clone(s.RunID), strings.Clone(s.Name), strings.Clone(s.Context)
					c.byID[s.ID] = s
				}
			})
			return nil
		})
		if err != nil {
			c.f.forget()
			c.byID, c.view = nil, nil
			return nil, err
		}
	}
	c.f.done(a)
	v := &seriesView{all: make([]SeriesInfo, 0, len(c.byID))}
	for _, s := range c.byID {
		v.all = append(v.all, s)
	}
	slices.SortFunc(v.all, func(a, b SeriesInfo) int {
		return cmp.Or(cmp.Compare(a.RunID, b.RunID), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Context, b.Context))
	})
	c.view = v
	return v, nil
}

// AllSeries returns the metric series of a run, sorted by name and context
// (ErrNotFound for unknown or deleted runs).
func (r *Repo) AllSeries(ctx context.Context, runID string) ([]SeriesInfo, error) {
	if _, err := r.Run(ctx, runID); err != nil {
		return nil, err
	}
	return r.loadSeries(ctx, runID)
}

// liveSeries returns every series of a live run.
func (r *Repo) liveSeries(ctx context.Context) ([]SeriesInfo, error) {
	runs, err := r.Runs(ctx, RunFilter{})
	if err != nil {
		return nil, err
	}
	live := map[string]bool{}
	for _, in := range runs {
		live[in.ID] = true
	}
	all, err := r.loadSeries(ctx, "")
	if err != nil {
		return nil, err
	}
	return filterRows(all, func(s SeriesInfo) bool { return live[s.RunID] }), nil
}

// eachSeriesRow calls fn with every row of a batch of the series table.
// The strings share the batch's memory.
func eachSeriesRow(rec arrow.RecordBatch, fn func(seriesRow)) {
	sid := col[*array.Uint64](rec, "series_id")
	id := col[*array.String](rec, "run_id")
	name := col[*array.String](rec, "name")
	cx := col[*array.String](rec, "context")
	created := col[*array.Timestamp](rec, "created_at")
	for i := 0; i < int(rec.NumRows()); i++ {
		fn(seriesRow{id: SeriesID(sid.Value(i)), runID: id.Value(i), name: name.Value(i), ctx: cx.Value(i), created: int64(created.Value(i))})
	}
}
