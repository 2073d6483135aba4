//go:build js && wasm

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"
	"syscall/js"
	"time"
	"unsafe"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
)

// repoHandle is one openRepo: a read-only tracking.Repo and the state of
// its watches.
type repoHandle struct {
	loc *location
	r   *tracking.Repo

	mu        sync.Mutex // watches, nextWatch; one poll at a time
	watches   map[int]*watchState
	nextWatch int
}

// watchState is what one repo.watch last saw.
type watchState struct {
	base  tracking.Versions
	runs  map[string]tracking.RunInfo
	stats map[tracking.SeriesID]tracking.SeriesStats
	polls int
}

var (
	reposMu sync.Mutex
	repos   = map[int]*repoHandle{}
	nextID  = 1
)

// errClosed is a call on a closed handle.
var errClosed = &callError{code: codeClosed, err: errors.New("repository handle closed")}

func handle(v js.Value) (*repoHandle, error) {
	if v.Type() != js.TypeNumber {
		return nil, invalid("bad repository handle")
	}
	reposMu.Lock()
	defer reposMu.Unlock()
	h, ok := repos[v.Int()]
	if !ok {
		return nil, errClosed
	}
	return h, nil
}

// openRepo(location, options) resolves to a handle number.
func openRepo(args []js.Value) js.Value {
	var loc *location
	where := func() string {
		if loc == nil {
			return ""
		}
		return loc.name
	}
	return promise(where, func(ctx context.Context) (any, error) {
		if len(args) == 0 {
			return nil, invalid("missing location")
		}
		l, err := parseLocation(args[0])
		if err != nil {
			return nil, err
		}
		loc = l
		var o openOptions
		if len(args) > 1 && args[1].Type() == js.TypeString {
			if err := json.Unmarshal([]byte(args[1].String()), &o); err != nil || o.VersionTTL < 0 || o.VersionTTL > 3_600_000 {
				return nil, invalid("openRepo options: versionTTL must be a number of milliseconds from 0 to 3600000")
			}
		}
		ttl := time.Duration(o.VersionTTL * float64(time.Millisecond))
		r, err := tracking.OpenRepo(ctx, l.st, l.root, tracking.RepoOptions{ReadOnly: true, VersionTTL: ttl})
		if err == nil && o.Prefetch {
			// In the background: the calls that follow wait on the opens
			// under way (the file cache shares them) rather than start
			// their own chains of requests.
			go func() { _ = r.Prefetch(context.Background()) }()
		}
		if err != nil {
			if errors.Is(err, tracking.ErrNotFound) {
				return nil, &callError{code: codeNotFound, err: errors.New("not a tracking repository (no runs table)")}
			}
			return nil, err
		}
		reposMu.Lock()
		id := nextID
		nextID++
		repos[id] = &repoHandle{loc: l, r: r}
		reposMu.Unlock()
		return id, nil
	})
}

// repoClose(handle) releases it; later calls reject with Closed.
func repoClose(args []js.Value) js.Value {
	return promise(func() string { return "" }, func(ctx context.Context) (any, error) {
		if len(args) == 0 || args[0].Type() != js.TypeNumber {
			return nil, invalid("bad repository handle")
		}
		reposMu.Lock()
		h, ok := repos[args[0].Int()]
		delete(repos, args[0].Int())
		reposMu.Unlock()
		if ok {
			return nil, h.r.Close()
		}
		return nil, nil
	})
}

// repoCall(handle, method, argument JSON) resolves to a JSON string in
// which series ids are decimal strings.
func repoCall(args []js.Value) js.Value {
	var h *repoHandle
	where := func() string {
		if h == nil {
			return ""
		}
		return h.loc.name
	}
	return promise(where, func(ctx context.Context) (any, error) {
		if len(args) < 2 {
			return nil, invalid("repoCall: want handle, method")
		}
		var err error
		if h, err = handle(args[0]); err != nil {
			return nil, err
		}
		// A warm handle reads on while its versions are checked
		// (lance.Speculate), and again should a check find a commit.
		var v any
		err = lance.Speculate(ctx, func(ctx context.Context) (err error) {
			v, err = h.call(ctx, args[1].String(), args)
			return err
		})
		if err != nil {
			return nil, err
		}
		s, err := marshal(v)
		if err != nil {
			return nil, err
		}
		if m := args[1].String(); m == "series" || m == "stats" {
			// Only these answers hold series ids; a parameter or a record
			// may have a key of that name, which must stay as written.
			return string(quoteSeriesIDs([]byte(s))), nil
		}
		return s, nil
	})
}

// runFilter is tracking.RunFilter as JavaScript gives it.
type runFilter struct {
	Experiment string   `json:"experiment"`
	Status     string   `json:"status"`
	Tags       []string `json:"tags"`
	Archived   *bool    `json:"archived"`
	Params     []struct {
		Key   string          `json:"key"`
		Op    string          `json:"op"`
		Value json.RawMessage `json:"value"`
	} `json:"params"`
}

func (f runFilter) filter() (tracking.RunFilter, error) {
	out := tracking.RunFilter{Experiment: f.Experiment, Status: f.Status, Tags: f.Tags, Archived: f.Archived}
	for _, p := range f.Params {
		if p.Key == "" {
			return out, invalid("params: a filter without key")
		}
		switch p.Op {
		case "=", "!=", "<", "<=", ">", ">=":
		default:
			return out, invalid("params: op %q is not one of = != < <= > >=", p.Op)
		}
		dec := json.NewDecoder(bytes.NewReader(p.Value))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return out, invalid("params: value of %q: %v", p.Key, err)
		}
		switch v.(type) {
		case json.Number, string, bool:
		default:
			return out, invalid("params: value of %q must be a number, string or boolean", p.Key)
		}
		out.Params = append(out.Params, tracking.ParamFilter{Key: p.Key, Op: p.Op, Value: v})
	}
	return out, nil
}

func stringArg(args []js.Value, i int, what string) (string, error) {
	if len(args) <= i || args[i].Type() != js.TypeString {
		return "", invalid("%s must be a string", what)
	}
	return args[i].String(), nil
}

func (h *repoHandle) call(ctx context.Context, method string, args []js.Value) (any, error) {
	switch method {
	case "runs":
		var f runFilter
		if err := options(args, 2, &f); err != nil {
			return nil, err
		}
		rf, err := f.filter()
		if err != nil {
			return nil, err
		}
		runs, err := h.r.Runs(ctx, rf)
		if runs == nil && err == nil {
			runs = []tracking.RunInfo{}
		}
		return runs, err
	case "run", "params", "series":
		id, err := stringArg(args, 2, "run id")
		if err != nil {
			return nil, err
		}
		in, err := inspect.ResolveRun(ctx, h.r, id)
		if err != nil {
			return nil, err
		}
		switch method {
		case "params":
			return inspect.RunParams(ctx, h.r, in.ID)
		case "series":
			return inspect.RunSeries(ctx, h.r, in.ID)
		}
		return in, nil
	case "stats":
		ids, err := seriesIDs(args, 2)
		if err != nil {
			return nil, err
		}
		m, err := h.r.SeriesStats(ctx, ids)
		if err != nil {
			return nil, err
		}
		out := make([]*tracking.SeriesStats, len(ids))
		var none []tracking.SeriesID
		for i, id := range ids {
			if st, ok := m[id]; ok {
				out[i] = &st
			} else {
				none = append(none, id)
			}
		}
		if err := checkSeriesExist(ctx, h.r, none); err != nil {
			return nil, err
		}
		return out, nil
	case "versions":
		v, err := h.r.LatestVersions(ctx)
		return v, err
	case "recordTables", "records":
		return h.recordsCall(ctx, method, args)
	}
	return nil, invalid("unknown method %q", method)
}

// seriesIDs reads a JSON array of decimal strings.
func seriesIDs(args []js.Value, i int) ([]tracking.SeriesID, error) {
	var raw []json.RawMessage
	if err := options(args, i, &raw); err != nil {
		return nil, err
	}
	ids := make([]tracking.SeriesID, len(raw))
	for k, r := range raw {
		var s string
		if json.Unmarshal(r, &s) != nil {
			return nil, invalid("series ids are decimal strings, not %s", r)
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, invalid("series id %q is not a decimal uint64", s)
		}
		ids[k] = tracking.SeriesID(n)
	}
	return ids, nil
}

// checkSeriesExist fails with a NotFound naming the first of ids that no
// live run's series has. A read or stats call asks only for the ids it
// found no points of, so a call that found them all sends no request.
func checkSeriesExist(ctx context.Context, r *tracking.Repo, ids []tracking.SeriesID) error {
	if len(ids) == 0 {
		return nil
	}
	found, err := r.FindSeries(ctx, ids)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if _, ok := found[id]; !ok {
			return fmt.Errorf("%w: series %d (no live run has it)", tracking.ErrNotFound, uint64(id))
		}
	}
	return nil
}

// quoteSeriesIDs rewrites every "series_id":N of encoding/json output into
// "series_id":"N". Inside a JSON string the key's quotes are escaped, so
// only real keys match.
func quoteSeriesIDs(b []byte) []byte {
	key := []byte(`"series_id":`)
	var out []byte
	for {
		i := bytes.Index(b, key)
		if i < 0 {
			return append(out, b...)
		}
		j := i + len(key)
		k := j
		for k < len(b) && b[k] >= '0' && b[k] <= '9' {
			k++
		}
		out = append(out, b[:j]...)
		if k > j {
			out = append(out, '"')
			out = append(out, b[j:k]...)
			out = append(out, '"')
		}
		b = b[k:]
	}
}

// readOptions are repo.read's options.
type readOptions struct {
	MaxPoints int         `json:"maxPoints"`
	Steps     *[2]int64   `json:"steps"`
	Time      *[2]float64 `json:"time"`
}

// repoRead(handle, ids JSON, options JSON) resolves to { meta, data }: meta
// is a JSON array of { seriesId, n, minmax } and data one Uint8Array that
// holds, per series, n float64 steps, values, timestamps (ms) and epochs
// (and mins, maxs when minmax), little-endian, so kv0.mjs makes
// Float64Array views of it without another copy.
func repoRead(args []js.Value) js.Value {
	var h *repoHandle
	where := func() string {
		if h == nil {
			return ""
		}
		return h.loc.name
	}
	return promise(where, func(ctx context.Context) (any, error) {
		var err error
		if len(args) < 1 {
			return nil, invalid("read: want handle")
		}
		if h, err = handle(args[0]); err != nil {
			return nil, err
		}
		ids, err := seriesIDs(args, 1)
		if err != nil {
			return nil, err
		}
		var o readOptions
		if err := options(args, 2, &o); err != nil {
			return nil, err
		}
		if o.MaxPoints < 0 {
			return nil, invalid("maxPoints must be positive")
		}
		ro := tracking.ReadOptions{MaxPoints: o.MaxPoints}
		if o.Steps != nil {
			ro.Steps = &tracking.StepRange{From: o.Steps[0], To: o.Steps[1]}
		}
		if o.Time != nil {
			ro.Time = &tracking.TimeRange{From: msTime(o.Time[0]), To: msTime(o.Time[1])}
		}
		var data []tracking.MetricData
		err = lance.Speculate(ctx, func(ctx context.Context) (err error) {
			data, err = h.r.ReadMany(ctx, ids, ro)
			return err
		})
		if err != nil {
			return nil, err
		}
		var empty []tracking.SeriesID
		for i, m := range data {
			if m.Len() == 0 {
				empty = append(empty, ids[i])
			}
		}
		if err := checkSeriesExist(ctx, h.r, empty); err != nil {
			return nil, err
		}
		type meta struct {
			SeriesID string `json:"seriesId"`
			N        int    `json:"n"`
			MinMax   bool   `json:"minmax,omitempty"`
		}
		metas := make([]meta, len(data))
		mins, maxs := make([][]float64, len(data)), make([][]float64, len(data))
		total := 0
		for i, m := range data {
			if len(m.Buckets) > 0 {
				mins[i], maxs[i] = inspect.Bands(m)
			}
			metas[i] = meta{SeriesID: strconv.FormatUint(uint64(ids[i]), 10), N: m.Len(), MinMax: mins[i] != nil}
			total += 4 * m.Len()
			if mins[i] != nil {
				total += 2 * m.Len()
			}
		}
		// The columns go into one []float64 that crosses as its bytes
		// (wasm is little-endian): one copy to JavaScript, no per-value
		// encoding.
		buf := takeFloats(total)
		defer putFloats(buf)
		off := 0
		for i, m := range data {
			n := m.Len()
			inspect.PointColumns(buf[off:off+4*n], m)
			off += 4 * n
			if mins[i] != nil {
				off += copy(buf[off:], mins[i][:n])
				off += copy(buf[off:], maxs[i][:n])
			}
		}
		mj, err := json.Marshal(metas)
		if err != nil {
			return nil, err
		}
		res := js.Global().Get("Object").New()
		res.Set("meta", string(mj))
		res.Set("data", bytesToJS(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(buf))), 8*len(buf))))
		return res, nil
	})
}

// floatBuf is the conversion buffer of the last repoRead, kept for the
// next one: a read of 100k points fills 3.2 MB, which as a new slice each
// time is that much more to allocate, zero and collect per read. A
// concurrent read, or one larger than maxKeptFloats, makes its own.
var floatBuf struct {
	sync.Mutex
	b []float64
}

// maxKeptFloats bounds the buffer kept between reads (16 MB).
const maxKeptFloats = 2 << 20

func takeFloats(n int) []float64 {
	floatBuf.Lock()
	b := floatBuf.b
	floatBuf.b = nil
	floatBuf.Unlock()
	if cap(b) >= n {
		// Every element is written before it is read (repoRead's columns
		// cover the buffer), so no clearing.
		return b[:n]
	}
	return make([]float64, n)
}

func putFloats(b []float64) {
	if cap(b) > maxKeptFloats {
		return
	}
	floatBuf.Lock()
	if cap(b) > cap(floatBuf.b) {
		floatBuf.b = b
	}
	floatBuf.Unlock()
}

func msTime(ms float64) time.Time {
	return time.UnixMicro(int64(math.Round(ms * 1000)))
}

// repoPoll(handle, watch) polls for the watch numbered watch and resolves
// to null when nothing changed since its last poll, else to a JSON
// { versions, runs, series } naming the runs whose state and the series
// whose points changed. With watch 0 it starts a watch: it records the
// current state and resolves to the new watch's number. A poll that finds
// nothing costs tracking.Repo.Changed's three requests. repoPoll(handle,
// -watch) ends the watch.
func repoPoll(args []js.Value) js.Value {
	var h *repoHandle
	where := func() string {
		if h == nil {
			return ""
		}
		return h.loc.name
	}
	return promise(where, func(ctx context.Context) (any, error) {
		var err error
		if len(args) < 2 || args[1].Type() != js.TypeNumber {
			return nil, invalid("poll: want handle, watch")
		}
		if h, err = handle(args[0]); err != nil {
			return nil, err
		}
		id := args[1].Int()
		h.mu.Lock()
		defer h.mu.Unlock()
		if id < 0 {
			delete(h.watches, -id)
			return js.Null(), nil
		}
		w := h.watches[id]
		if id != 0 && w == nil {
			return nil, &callError{code: codeClosed, err: errors.New("watch stopped")}
		}
		if w != nil {
			w.polls++
			// Now and then a full look, in case a cleanup removed the
			// version after the one held before a probe saw it.
			if w.polls%30 != 0 {
				changed, err := h.r.Changed(ctx, w.base)
				if err != nil || !changed {
					return js.Null(), err
				}
			}
		}
		v, err := h.r.LatestVersions(ctx)
		if err != nil {
			return nil, err
		}
		runs, err := h.r.Runs(ctx, tracking.RunFilter{})
		if err != nil {
			return nil, err
		}
		stats, err := h.r.SeriesStats(ctx, nil)
		if err != nil {
			return nil, err
		}
		runMap := make(map[string]tracking.RunInfo, len(runs))
		for _, in := range runs {
			runMap[in.ID] = in
		}
		if w == nil {
			if h.watches == nil {
				h.watches = map[int]*watchState{}
			}
			h.nextWatch++
			h.watches[h.nextWatch] = &watchState{base: v, runs: runMap, stats: stats}
			return h.nextWatch, nil
		}
		changedRuns := []string{}
		for _, in := range runs {
			old, ok := w.runs[in.ID]
			if !ok || !old.UpdatedAt.Equal(in.UpdatedAt) || old.Status != in.Status || old.Archived != in.Archived ||
				old.Name != in.Name || !slices.Equal(old.Tags, in.Tags) {
				changedRuns = append(changedRuns, in.ID)
			}
		}
		changedSeries := []string{}
		for id, st := range stats {
			old, ok := w.stats[id]
			if !ok || old.Count != st.Count || old.LastStep != st.LastStep || !old.LastTimestamp.Equal(st.LastTimestamp) ||
				math.Float64bits(old.LastValue) != math.Float64bits(st.LastValue) {
				changedSeries = append(changedSeries, strconv.FormatUint(uint64(id), 10))
			}
		}
		slices.Sort(changedSeries)
		w.base, w.runs, w.stats = v, runMap, stats
		if len(changedRuns)+len(changedSeries) == 0 {
			return js.Null(), nil
		}
		out, err := marshal(struct {
			Versions tracking.Versions `json:"versions"`
			Runs     []string          `json:"runs"`
			Series   []string          `json:"series"`
		}{v, changedRuns, changedSeries})
		if err != nil {
			return nil, err
		}
		return out, nil
	})
}

// openOptions are openRepo's options. VersionTTL (milliseconds, default 0)
// is how long the handle reads a table version it confirmed as the newest
// without asking the server again: a page's burst of calls (a run, its
// parameters, its series, their points) then costs one freshness check per
// table instead of one per call, and a read may miss commits of the last
// VersionTTL. repo.watch always asks, and a newer version it finds is read
// at once (tracking.RepoOptions.VersionTTL).
//
// Prefetch starts opening the four tables' data files in the background
// (tracking.Repo.Prefetch): for a page that goes on to show runs, series
// and charts.
type openOptions struct {
	VersionTTL float64 `json:"versionTTL"`
	Prefetch   bool    `json:"prefetch"`
}
