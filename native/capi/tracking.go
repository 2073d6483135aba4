package main

/*
#include "kv0out.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/runlock"
	"github.com/kv0/kv0/native/wal"
)

// repoHandle is an open tracking repository.
type repoHandle struct {
	repo *tracking.Repo
	mu   sync.Mutex
	runs map[int64]struct{} // run handles to drop on close

	// key is the repository's WAL key (location.RepoWALKey) and walDir
	// the WAL root option: a writable handle holds the run lock
	// (native/runlock) of each run it starts or resumes, as kv0 track
	// does, so the two never write one run at once. locks is guarded by
	// lockMu, which is never held while calling the Repo (the Repo calls
	// recordHeartbeat with its own lock held).
	key, walDir string
	lockMu      sync.Mutex
	locks       map[string]*runlock.Lock
}

// recordHeartbeat notes a heartbeat in every run lock the handle holds.
func (rh *repoHandle) recordHeartbeat(at time.Time) {
	rh.lockMu.Lock()
	defer rh.lockMu.Unlock()
	for _, lk := range rh.locks {
		lk.RecordHeartbeat(at)
	}
}

// lockRun takes the run lock of id (nothing on a read-only or memory
// handle), records the handle's holder id in it, and returns what an
// earlier holder of this host recorded; already is true when this handle
// held it before.
func (rh *repoHandle) lockRun(id string) (prev runlock.Previous, already bool, err error) {
	if rh.key == "" {
		return prev, true, nil
	}
	rh.lockMu.Lock()
	_, held := rh.locks[id]
	rh.lockMu.Unlock()
	if held {
		return prev, true, nil
	}
	lk, prev, err := runlock.Acquire(rh.key, id, rh.walDir)
	if err != nil {
		return prev, false, err
	}
	if err := lk.RecordHolder(rh.repo.HolderID()); err != nil {
		lk.Release(false)
		return prev, false, err
	}
	rh.lockMu.Lock()
	rh.locks[id] = lk
	rh.lockMu.Unlock()
	return prev, false, nil
}

// unlockRun releases the run lock of id; clean removes its file.
func (rh *repoHandle) unlockRun(id string, clean bool) {
	rh.lockMu.Lock()
	lk := rh.locks[id]
	delete(rh.locks, id)
	rh.lockMu.Unlock()
	lk.Release(clean)
}

// unlockAll releases every run lock; clean removes their files.
func (rh *repoHandle) unlockAll(clean bool) {
	rh.lockMu.Lock()
	locks := rh.locks
	rh.locks = map[string]*runlock.Lock{}
	rh.lockMu.Unlock()
	for _, lk := range locks {
		lk.Release(clean)
	}
}

// runHandle is a writing handle on one run, with the series slots the
// Python side resolved (name and context once, then a slot number per
// point).
type runHandle struct {
	run  *tracking.Run
	repo *repoHandle
	mu   sync.RWMutex
	sl   []seriesSlot
}

type seriesSlot struct {
	name string
	ctx  map[string]any
}

// repoOptions are the options of a repository open, as JSON.
type repoOptions struct {
	ReadOnly       bool           `json:"read_only"`
	FlushRows      int            `json:"flush_rows"`
	FlushInterval  *float64       `json:"flush_interval"`
	MaxFragments   int            `json:"max_fragments"`
	WAL            *bool          `json:"wal"`
	WALDir         string         `json:"wal_dir"`
	WALSync        string         `json:"wal_sync"`
	DataFormat     string         `json:"data_format"`
	StorageOptions map[string]any `json:"storage_options"`
}

// kv0_repo_open opens the repository at loc with the JSON options opts
// (see repoOptions) after applying the environment env; the handle is
// out.num.
//
//export kv0_repo_open
func kv0_repo_open(loc unsafe.Pointer, locLen C.int64_t, opts unsafe.Pointer, optsLen C.int64_t,
	env unsafe.Pointer, envLen C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	var o repoOptions
	if err := parseOptions(opts, optsLen, &o); err != nil {
		return fail(out, err)
	}
	envMu.Lock()
	defer envMu.Unlock()
	if err := applyEnv(goBytes(env, envLen)); err != nil {
		return fail(out, err)
	}
	rh := &repoHandle{runs: map[int64]struct{}{}, walDir: o.WALDir, locks: map[string]*runlock.Lock{}}
	r, err := openRepo(goString(loc, locLen), o, rh)
	if err != nil {
		return fail(out, err)
	}
	rh.repo = r
	out.num = C.int64_t(newHandle(rh))
	return codeOK
}

// openRepo opens the repository at loc; a writable open sets rh.key and
// records heartbeats in rh's run locks.
func openRepo(loc string, o repoOptions, rh *repoHandle) (*tracking.Repo, error) {
	mode, err := walMode(o.WALSync)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(o.DataFormat); err != nil {
		return nil, err
	}
	lo, err := locationOptions(o.StorageOptions)
	if err != nil {
		return nil, err
	}
	lo.Create = !o.ReadOnly
	st, root, err := location.Open(context.Background(), loc, lo)
	if err != nil {
		return nil, err
	}
	ro := tracking.RepoOptions{ReadOnly: o.ReadOnly, FlushRows: o.FlushRows,
		FlushInterval: seconds(o.FlushInterval), MaxFragments: o.MaxFragments, DataFormat: o.DataFormat}
	if !o.ReadOnly {
		key, err := location.RepoWALKey(loc)
		if err != nil {
			return nil, err
		}
		rh.key = key
		ro.OnHeartbeat = rh.recordHeartbeat
	}
	if !o.ReadOnly && (o.WAL == nil || *o.WAL) {
		if key := rh.key; key != "" {
			l, err := wal.Open(key, wal.Options{Dir: o.WALDir, Mode: mode})
			if err != nil {
				return nil, fmt.Errorf("kv0: WAL of %s: %w", loc, err)
			}
			ro.WAL = l
		}
	}
	r, err := tracking.OpenRepo(context.Background(), st, root, ro)
	if err != nil {
		if ro.WAL != nil {
			_ = ro.WAL.Close(false)
		}
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return r, nil
}

// repoCall is the argument object of kv0_repo_call and kv0_run_call.
type repoCall struct {
	RunID   string          `json:"run_id"`
	IDs     json.RawMessage `json:"ids"`
	Fields  map[string]any  `json:"fields"`
	Filters map[string]any  `json:"filters"`
	Force   bool            `json:"force"`
	Params  tracking.Params `json:"params"`
	Status  string          `json:"status"`
	EndedAt *float64        `json:"ended_at"` // finish: seconds since the epoch (default now)
	Name    string          `json:"name"`
	Context map[string]any  `json:"context"`
	Spec    *struct {
		ID          string          `json:"id"`
		Name        string          `json:"name"`
		Experiment  string          `json:"experiment"`
		Description string          `json:"description"`
		Tags        []string        `json:"tags"`
		Kind        string          `json:"kind"`
		Target      string          `json:"target"`
		Params      tracking.Params `json:"params"`
	} `json:"spec"`
}

// kv0_repo_call runs one repository method named by method with the JSON
// arguments args (see repoCall) and returns its JSON result; methods that
// make a run handle return it in out.num.
//
//export kv0_repo_call
func kv0_repo_call(h C.int64_t, method unsafe.Pointer, methodLen C.int64_t, args unsafe.Pointer, argsLen C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	m := goString(method, methodLen)
	if m == "close" {
		rh, ok := take[*repoHandle](h)
		if !ok {
			return codeOK
		}
		rh.mu.Lock()
		runs := rh.runs
		rh.runs = map[int64]struct{}{}
		rh.mu.Unlock()
		for n := range runs {
			handles.Delete(n)
		}
		err := rh.repo.Close()
		rh.unlockAll(false) // runs still held are running: keep their heartbeat records
		return done(out, err)
	}
	rh, err := lookup[*repoHandle](h)
	if err != nil {
		return fail(out, err)
	}
	var a repoCall
	if err := parseOptions(args, argsLen, &a); err != nil {
		return fail(out, err)
	}
	res, num, err := rh.call(m, &a)
	if err != nil {
		return fail(out, err)
	}
	if res != nil {
		b, err := json.Marshal(res)
		if err != nil {
			return fail(out, err)
		}
		setOut(out, b)
	}
	out.num = C.int64_t(num)
	return codeOK
}

func (rh *repoHandle) addRun(run *tracking.Run) int64 {
	n := newHandle(&runHandle{run: run, repo: rh})
	rh.mu.Lock()
	rh.runs[n] = struct{}{}
	rh.mu.Unlock()
	return n
}

func (rh *repoHandle) call(m string, a *repoCall) (any, int64, error) {
	ctx := context.Background()
	r := rh.repo
	switch m {
	case "start_run":
		if a.Spec == nil {
			return nil, 0, fmt.Errorf("%w: start_run without a spec", errInvalidArg)
		}
		s := a.Spec
		id := s.ID
		if id == "" {
			id = tracking.NewRunID()
		}
		if _, _, err := rh.lockRun(id); err != nil {
			return nil, 0, err
		}
		run, err := r.StartRun(ctx, tracking.RunSpec{ID: id, Name: s.Name, Experiment: s.Experiment,
			Description: s.Description, Tags: s.Tags, Kind: s.Kind, Target: s.Target})
		if err != nil {
			rh.unlockRun(id, false)
			return nil, 0, err
		}
		if len(s.Params) > 0 {
			if err := run.SetParams(s.Params); err != nil {
				return nil, 0, err
			}
		}
		return run.ID(), rh.addRun(run), nil
	case "resume_run":
		prev, already, err := rh.lockRun(a.RunID)
		if err != nil {
			return nil, 0, err
		}
		// Resumed only when no live writer holds it (the run's claim
		// decides; a writer of this host that held the lock until now
		// is dead). A handle that holds the run gets it back as it is.
		run, err := r.ResumeRun(ctx, a.RunID, prev.ResumeOptions())
		if err != nil {
			if !already {
				rh.unlockRun(a.RunID, false)
			}
			return nil, 0, err
		}
		return run.ID(), rh.addRun(run), nil
	case "runs":
		f, err := runFilter(a.Filters)
		if err != nil {
			return nil, 0, err
		}
		runs, err := r.Runs(ctx, f)
		if runs == nil {
			runs = []tracking.RunInfo{}
		}
		return runs, 0, err
	case "run":
		in, err := r.Run(ctx, a.RunID)
		return in, 0, err
	case "all_params":
		ps, err := inspect.RunParams(ctx, r, a.RunID)
		return ps, 0, err
	case "all_series":
		// What kv0 series --json prints: SeriesStats writes NaN and ±Inf
		// as strings, which the Python side turns back into floats.
		ss, err := inspect.RunSeries(ctx, r, a.RunID)
		return ss, 0, err
	case "series_stats":
		var ids []tracking.SeriesID
		if len(a.IDs) > 0 && string(a.IDs) != "null" {
			if err := json.Unmarshal(a.IDs, &ids); err != nil {
				return nil, 0, fmt.Errorf("%w: series ids: %v", errInvalidArg, err)
			}
			if ids == nil {
				ids = []tracking.SeriesID{}
			}
		}
		st, err := r.SeriesStats(ctx, ids)
		if err != nil {
			return nil, 0, err
		}
		res := make([]tracking.SeriesStats, 0, len(st))
		for _, s := range st {
			res = append(res, s)
		}
		return res, 0, nil
	case "update_run":
		p, err := runPatch(a.Fields)
		if err != nil {
			return nil, 0, err
		}
		return nil, 0, r.UpdateRun(ctx, a.RunID, p)
	case "delete_runs":
		var ids []string
		if err := json.Unmarshal(a.IDs, &ids); err != nil {
			return nil, 0, fmt.Errorf("%w: run ids: %v", errInvalidArg, err)
		}
		return nil, 0, r.DeleteRuns(ctx, ids)
	case "optimize":
		st, err := r.Optimize(ctx)
		return map[string]any{"run_rows": st.RunRows, "param_rows": st.ParamRows, "series_rows": st.SeriesRows,
			"record_rows": st.RecordRows, "metrics_rewritten": st.MetricsRewritten, "metrics_full": st.MetricsFull}, 0, err
	case "purge":
		return nil, 0, r.Purge(ctx, a.Force)
	case "flush":
		return nil, 0, r.Flush(ctx)
	case "flush_wal":
		return nil, 0, r.SyncWAL()
	case "latest_versions":
		v, err := r.LatestVersions(ctx)
		return v, 0, err
	}
	return nil, 0, fmt.Errorf("%w: unknown repository method %q", errInvalidArg, m)
}

// runFilter builds a RunFilter from the keyword filters of Repo.runs.
func runFilter(f map[string]any) (tracking.RunFilter, error) {
	var rf tracking.RunFilter
	for k, v := range f {
		switch k {
		case "experiment", "status":
			s, ok := v.(string)
			if !ok {
				return rf, fmt.Errorf("%w: runs(%s=...) takes a string", errInvalidArg, k)
			}
			if k == "experiment" {
				rf.Experiment = s
			} else {
				rf.Status = s
			}
		case "tags":
			tags, err := stringList(v, "tags")
			if err != nil {
				return rf, err
			}
			rf.Tags = tags
		case "archived":
			b, ok := v.(bool)
			if !ok {
				return rf, fmt.Errorf("%w: runs(archived=...) takes a bool", errInvalidArg)
			}
			rf.Archived = &b
		case "params":
			list, ok := v.([]any)
			if !ok {
				return rf, fmt.Errorf("%w: runs(params=...) takes a list of (key, op, value)", errInvalidArg)
			}
			for _, e := range list {
				t, ok := e.([]any)
				if !ok || len(t) != 3 {
					return rf, fmt.Errorf("%w: runs(params=...): %v is not (key, op, value)", errInvalidArg, e)
				}
				key, ok1 := t[0].(string)
				op, ok2 := t[1].(string)
				if !ok1 || !ok2 {
					return rf, fmt.Errorf("%w: runs(params=...): %v is not (key, op, value)", errInvalidArg, e)
				}
				rf.Params = append(rf.Params, tracking.ParamFilter{Key: key, Op: op, Value: t[2]})
			}
		default:
			return rf, fmt.Errorf("%w: runs() has no filter %q (experiment, status, tags, archived, params)", errInvalidArg, k)
		}
	}
	return rf, nil
}

func stringList(v any, what string) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s must be a list of strings", errInvalidArg, what)
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s must be a list of strings, not %v", errInvalidArg, what, e)
		}
		out[i] = s
	}
	return out, nil
}

// runPatch builds a RunPatch from keyword fields (Run.update, update_run).
func runPatch(f map[string]any) (tracking.RunPatch, error) {
	var p tracking.RunPatch
	str := func(k string, v any) (*string, error) {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s must be a string", errInvalidArg, k)
		}
		return &s, nil
	}
	var err error
	for k, v := range f {
		switch k {
		case "name":
			p.Name, err = str(k, v)
		case "experiment":
			p.Experiment, err = str(k, v)
		case "description":
			p.Description, err = str(k, v)
		case "status":
			p.Status, err = str(k, v)
		case "kind":
			p.Kind, err = str(k, v)
		case "target":
			p.Target, err = str(k, v)
		case "tags":
			var tags []string
			tags, err = stringList(v, "tags")
			p.Tags = &tags
		case "archived":
			b, ok := v.(bool)
			if !ok {
				err = fmt.Errorf("%w: archived must be a bool", errInvalidArg)
			}
			p.Archived = &b
		case "ended_at":
			secs, ok := v.(float64)
			if !ok {
				err = fmt.Errorf("%w: ended_at must be seconds since the epoch", errInvalidArg)
			}
			t := time.Unix(0, int64(secs*1e9)).UTC()
			p.EndedAt = &t
		default:
			err = fmt.Errorf("%w: a run has no field %q (name, experiment, description, tags, status, archived, ended_at, kind, target)", errInvalidArg, k)
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func getRun(h C.int64_t) (*runHandle, error) { return lookup[*runHandle](h) }

// kv0_run_call runs one method of a run: set_params, update, finish or
// series (which resolves a name and context to a slot for track, in
// out.num).
//
//export kv0_run_call
func kv0_run_call(h C.int64_t, method unsafe.Pointer, methodLen C.int64_t, args unsafe.Pointer, argsLen C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	rh, err := getRun(h)
	if err != nil {
		return fail(out, err)
	}
	var a repoCall
	if err := parseOptions(args, argsLen, &a); err != nil {
		return fail(out, err)
	}
	switch m := goString(method, methodLen); m {
	case "set_params":
		return done(out, rh.run.SetParams(a.Params))
	case "update":
		p, err := runPatch(a.Fields)
		if err != nil {
			return fail(out, err)
		}
		return done(out, rh.run.Update(p))
	case "finish":
		end := time.Now()
		if a.EndedAt != nil {
			end = time.Unix(0, int64(*a.EndedAt*1e9)).UTC()
		}
		err := rh.run.FinishAt(context.Background(), a.Status, end)
		if err == nil {
			rh.repo.unlockRun(rh.run.ID(), false)
		}
		return done(out, err)
	case "series":
		if a.Name == "" {
			return fail(out, fmt.Errorf("%w: empty metric name", tracking.ErrInvalid))
		}
		if len(a.Context) > 0 {
			if _, err := tracking.CanonicalContext(a.Context); err != nil {
				return fail(out, err)
			}
		}
		rh.mu.Lock()
		if len(rh.sl) >= 1<<30 {
			rh.mu.Unlock()
			return fail(out, fmt.Errorf("%w: too many series in one run handle", errInvalidArg))
		}
		rh.sl = append(rh.sl, seriesSlot{name: a.Name, ctx: a.Context})
		out.num = C.int64_t(len(rh.sl) - 1)
		rh.mu.Unlock()
		return codeOK
	default:
		return fail(out, fmt.Errorf("%w: unknown run method %q", errInvalidArg, m))
	}
}

func (rh *runHandle) slot(i C.int64_t) (seriesSlot, error) {
	rh.mu.RLock()
	defer rh.mu.RUnlock()
	if i < 0 || int(i) >= len(rh.sl) {
		return seriesSlot{}, fmt.Errorf("%w: no series slot %d", errInvalidArg, int64(i))
	}
	return rh.sl[i], nil
}

// Flags of kv0_run_track.
const (
	trackStep  = 1
	trackEpoch = 2
)

// kv0_run_track tracks one point. hs packs the run handle (bits 32 and
// up), the series slot (bits 2 to 31) and the flags (trackStep,
// trackEpoch): fewer arguments keep the foreign call cheap. On an error
// the message is kept for kv0_take_error.
//
//export kv0_run_track
func kv0_run_track(hs C.int64_t, value C.double, step, epoch C.int64_t) (code C.int32_t) {
	defer recoverThread(&code)
	rh, err := getRun(hs >> 32)
	if err != nil {
		return failThread(err)
	}
	s, err := rh.slot((hs & 0xffffffff) >> 2)
	if err != nil {
		return failThread(err)
	}
	o := tracking.TrackOptions{Context: s.ctx}
	st, ep := int64(step), int64(epoch)
	if hs&trackStep != 0 {
		o.Step = &st
	}
	if hs&trackEpoch != 0 {
		o.Epoch = &ep
	}
	if err := rh.run.Track(float64(value), s.name, o); err != nil {
		return failThread(err)
	}
	return codeOK
}

// kv0_run_track_many tracks n points of the series in slot: values is n
// float64s, steps n int64s or NULL (each point one past the last), epoch
// applies to every point when flags has trackEpoch. out.num is the number
// of points tracked (all of them unless an error stopped it).
//
//export kv0_run_track_many
func kv0_run_track_many(h C.int64_t, slot C.int64_t, values unsafe.Pointer, steps unsafe.Pointer, n C.int64_t, epoch C.int64_t, flags C.int32_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	rh, err := getRun(h)
	if err != nil {
		return fail(out, err)
	}
	s, err := rh.slot(slot)
	if err != nil {
		return fail(out, err)
	}
	if n <= 0 {
		return codeOK
	}
	vs := unsafe.Slice((*float64)(values), int(n))
	var ss []int64
	if steps != nil {
		ss = unsafe.Slice((*int64)(steps), int(n))
	}
	o := tracking.TrackOptions{Context: s.ctx}
	ep := int64(epoch)
	if flags&trackEpoch != 0 {
		o.Epoch = &ep
	}
	done, err := rh.run.TrackMany(s.name, vs, ss, o)
	out.num = C.int64_t(done)
	if err != nil {
		return fail(out, err)
	}
	return codeOK
}

// readOptions are the options of kv0_repo_read_many, as JSON.
type readOptions struct {
	MaxPoints int         `json:"max_points"`
	Steps     *[2]int64   `json:"steps"`
	Time      *[2]float64 `json:"time"`
}

// kv0_repo_read_many reads the series whose n ids (u64) are at ids and
// returns, per series in order: series_id (u64), count n (u64), then n
// steps (i64), n values (f64), n timestamps (f64, seconds since the
// epoch) and n epochs (i64; math.MinInt64 where a point has none), all
// little endian.
//
//export kv0_repo_read_many
func kv0_repo_read_many(h C.int64_t, ids unsafe.Pointer, n C.int64_t, opts unsafe.Pointer, optsLen C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	rh, err := lookup[*repoHandle](h)
	if err != nil {
		return fail(out, err)
	}
	var o readOptions
	if err := parseOptions(opts, optsLen, &o); err != nil {
		return fail(out, err)
	}
	ro := tracking.ReadOptions{MaxPoints: o.MaxPoints}
	if o.Steps != nil {
		ro.Steps = &tracking.StepRange{From: o.Steps[0], To: o.Steps[1]}
	}
	if o.Time != nil {
		ro.Time = &tracking.TimeRange{From: secsTime(o.Time[0]), To: secsTime(o.Time[1])}
	}
	var sids []tracking.SeriesID
	if n > 0 {
		sids = append(sids, unsafe.Slice((*tracking.SeriesID)(ids), int(n))...)
	}
	data, err := rh.repo.ReadMany(context.Background(), sids, ro)
	if err != nil {
		return fail(out, err)
	}
	size := 0
	for _, d := range data {
		size += 16 + 32*d.Len()
	}
	buf := make([]byte, 0, size)
	le := binary.LittleEndian
	for _, d := range data {
		buf = le.AppendUint64(buf, uint64(d.SeriesID))
		buf = le.AppendUint64(buf, uint64(d.Len()))
		for _, s := range d.Steps {
			buf = le.AppendUint64(buf, uint64(s))
		}
		for _, v := range d.Values {
			buf = le.AppendUint64(buf, math.Float64bits(v))
		}
		for _, t := range d.Timestamps {
			buf = le.AppendUint64(buf, math.Float64bits(float64(t.UnixMicro())/1e6))
		}
		for _, e := range d.Epochs {
			buf = le.AppendUint64(buf, uint64(e))
		}
	}
	setOut(out, buf)
	out.num = C.int64_t(len(data))
	return codeOK
}

func secsTime(s float64) time.Time {
	return time.UnixMicro(int64(math.Round(s * 1e6))).UTC()
}
