package tracking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Bits of the runs table's fields column: the fields a change row sets.
const (
	FieldName uint32 = 1 << iota
	FieldExperiment
	FieldDescription
	FieldTags
	FieldStatus
	FieldArchived
	FieldCreatedAt
	FieldUpdatedAt
	FieldEndedAt
	FieldKind
	FieldTarget
	// FieldHeartbeat marks a row that carries the run's heartbeat: the time
	// in its updated_at column is the heartbeat, not an update (rows that
	// set both FieldUpdatedAt and FieldHeartbeat hold the same time for
	// both). Readers that predate it ignore the bit, so heartbeat rows read
	// as rows that change nothing.
	FieldHeartbeat

	// FieldsAll is every field a row could set before heartbeats existed;
	// a row whose fields column is null sets them all (not the heartbeat).
	FieldsAll = FieldTarget<<1 - 1
	// fieldsKnown is every field bit this version reads.
	fieldsKnown = FieldsAll | FieldHeartbeat
	// numFields is the number of field bits in fieldsKnown.
	numFields = 12
	// FieldDeleted alone (fields exactly equal to it) marks a tombstone.
	FieldDeleted uint32 = 1 << 31
)

// Run statuses.
const (
	StatusRunning  = "running"
	StatusFinished = "finished"
	StatusFailed   = "failed"
	StatusAborted  = "aborted"
	// StatusCrashed is never stored: reads report it for a run whose
	// stored status is running but whose heartbeat is older than
	// RepoOptions.CrashedAfter (its writer stopped without finishing it).
	StatusCrashed = "crashed"
)

// RunInfo is the merged state of a run. Empty strings stand for null
// columns; EndedAt is zero while the run has not ended.
type RunInfo struct {
	ID          string    `json:"run_id"`
	Name        string    `json:"name,omitempty"`
	Experiment  string    `json:"experiment,omitempty"`
	Description string    `json:"description,omitempty"`
	Tags        []string  `json:"tags"`
	Status      string    `json:"status"`
	Archived    bool      `json:"archived"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	EndedAt     time.Time `json:"ended_at,omitzero"`
	Kind        string    `json:"kind,omitempty"`
	Target      string    `json:"target,omitempty"` // JSON
	// HeartbeatAt is the last heartbeat of the run's writer (zero: none
	// recorded, as in runs written before heartbeats existed). A writing
	// handle records one at creation and then at flushes, at most every
	// RepoOptions.HeartbeatInterval, while the run is active.
	HeartbeatAt time.Time `json:"heartbeat_at,omitzero"`
}

// RunSpec describes a new run. All fields are optional; ID defaults to a
// fresh UUIDv7 (NewRunID).
type RunSpec struct {
	ID          string
	Name        string
	Experiment  string
	Description string
	Tags        []string
	Kind        string
	Target      string // JSON text describing what the run is about
	// CreatedAt, when not zero, is the run's creation time, for runs
	// imported or back-filled after the fact (default: now).
	CreatedAt time.Time
}

// RunPatch changes some fields of a run; nil fields are left alone. Only
// the fields set are written (and win per field over older changes).
type RunPatch struct {
	Name        *string
	Experiment  *string
	Description *string
	Tags        *[]string
	Status      *string
	Archived    *bool
	EndedAt     *time.Time
	Kind        *string
	Target      *string
}

// runRow is one row of runs.lance.
type runRow struct {
	seq    uint64
	info   RunInfo
	fields uint32
	hasMsk bool // fields column not null
}

func (p RunPatch) row(id string, seq uint64, now time.Time) runRow {
	rw := runRow{seq: seq, info: RunInfo{ID: id, UpdatedAt: now, CreatedAt: now, Status: StatusRunning}, fields: FieldUpdatedAt, hasMsk: true}
	set := func(bit uint32) { rw.fields |= bit }
	if p.Name != nil {
		rw.info.Name = *p.Name
		set(FieldName)
	}
	if p.Experiment != nil {
		rw.info.Experiment = *p.Experiment
		set(FieldExperiment)
	}
	if p.Description != nil {
		rw.info.Description = *p.Description
		set(FieldDescription)
	}
	if p.Tags != nil {
		rw.info.Tags = append([]string(nil), (*p.Tags)...)
		set(FieldTags)
	}
	if p.Status != nil {
		rw.info.Status = *p.Status
		set(FieldStatus)
	}
	if p.Archived != nil {
		rw.info.Archived = *p.Archived
		set(FieldArchived)
	}
	if p.EndedAt != nil {
		rw.info.EndedAt = p.EndedAt.UTC()
		set(FieldEndedAt)
	}
	if p.Kind != nil {
		rw.info.Kind = *p.Kind
		set(FieldKind)
	}
	if p.Target != nil {
		rw.info.Target = *p.Target
		set(FieldTarget)
	}
	return rw
}

// Run is a writing handle on one run, obtained from StartRun or ResumeRun.
// It is safe for concurrent use. Its writes go to the Repo's buffer.
type Run struct {
	repo *Repo
	id   string
	// guarded by repo.mu:
	plain   map[string]*seriesState // series without context, by name
	series  map[string]*seriesState // name + "\x00" + context JSON
	deleted bool
	// active: the handle writes heartbeats for the run (from StartRun, or
	// from the first write after ResumeRun, until it ends).
	active bool
	// claim is the generation under which the handle writes the run
	// (claim.go); its lost error refuses further writes.
	claim *claimState
}

type seriesState struct {
	id      SeriesID
	last    int64 // last step written (or loaded)
	maxStep int64
	has     bool
	name    string
	ctxJSON string
	inTable bool        // a series row exists or is buffered
	d       *deltaEntry // this series' delta in the buffer of generation gen
	gen     uint64
}

// ID returns the run's id.
func (run *Run) ID() string { return run.id }

// StartRun creates a run (status running) and returns its writing handle.
// The creation row is buffered like every other write.
func (r *Repo) StartRun(ctx context.Context, spec RunSpec) (*Run, error) {
	if err := checkSpec(spec); err != nil {
		return nil, err
	}
	id := spec.ID
	claim := &claimState{holder: r.holder}
	if id == "" {
		id = NewRunID()
	} else if isMarkRun(id) {
		return nil, fmt.Errorf("%w: run id %q uses the reserved prefix %s", ErrInvalid, id, walPrefix)
	} else {
		if err := r.checkWritableLocked(); err != nil {
			return nil, err
		}
		if _, err := r.Run(ctx, id); err == nil {
			return nil, fmt.Errorf("%w: run %q", ErrExists, id)
		}
		// A run is held at generation 0, which needs no object, unless
		// claims of a deleted run with this id exist: then at the next.
		c, found, err := r.newestClaim(ctx, id)
		if err != nil {
			return nil, err
		}
		if found {
			claim.gen = c.Gen + 1
			if err := r.putClaim(ctx, id, claim.gen, claimHold, r.holder,
				fmt.Sprintf("another writer claimed it at the same time (claim %d)", claim.gen)); err != nil {
				return nil, err
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkWritable(); err != nil {
		return nil, err
	}
	r.claims[id] = claim
	now := r.opts.Now().UTC()
	created := now
	if !spec.CreatedAt.IsZero() {
		created = spec.CreatedAt.UTC()
	}
	rw := runRow{seq: r.nextSeq(now), fields: FieldsAll | FieldHeartbeat, hasMsk: true, info: RunInfo{
		ID: id, Name: spec.Name, Experiment: spec.Experiment, Description: spec.Description,
		Tags: append([]string{}, spec.Tags...), Status: StatusRunning, CreatedAt: created, UpdatedAt: now,
		Kind: spec.Kind, Target: spec.Target, HeartbeatAt: now}}
	if r.opts.OnHeartbeat != nil {
		r.opts.OnHeartbeat(now)
	}
	if err := r.addRunRow(rw); err != nil {
		return nil, err
	}
	if r.lastBeat.IsZero() {
		r.lastBeat = now // the creation row is the run's first heartbeat
	}
	delete(r.deleted, id)
	run := newRun(r, id)
	run.active, run.claim = true, claim
	r.runs[id] = run
	return run, nil
}

// ResumeRun returns a writing handle on an existing run, with the last step
// of each of its series loaded so that default steps continue after them.
// Unless this handle holds the run already, it takes the run over: it
// creates the run's next claim (see claim.go), which of several writers
// resuming the run at once only one does (the others fail with ErrHeld),
// and which the previous holder finds at its next flush (it then commits
// nothing more of the run). With opts.OnlyAbandoned it first refuses a
// run another writer may still be writing (ErrHeld). It fails with
// ErrNotFound for unknown or deleted runs.
func (r *Repo) ResumeRun(ctx context.Context, id string, opts ...ResumeOptions) (*Run, error) {
	var o ResumeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if err := r.checkWritableLocked(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	var mine *claimState // the claim of a run this handle holds
	if run := r.runs[id]; run != nil && !run.deleted && run.claim != nil && run.claim.lost == nil && !run.claim.free {
		mine = run.claim
	}
	r.mu.Unlock()
	if mine != nil {
		// Still held unless another writer took it over since.
		if err := r.checkClaim(ctx, id, mine); err != nil {
			return nil, err
		}
		r.mu.Lock()
		if mine.lost != nil {
			mine = nil
		}
		r.mu.Unlock()
	}
	var claim *claimState
	if mine != nil {
		if _, err := r.Run(ctx, id); err != nil {
			return nil, err
		}
	} else {
		// The newest claim is read before the run: a claim made after
		// this point makes ours fail, one made before is judged here.
		c, found, err := r.newestClaim(ctx, id)
		if err != nil {
			return nil, err
		}
		in, err := r.Run(ctx, id)
		if err != nil {
			return nil, err
		}
		if o.OnlyAbandoned {
			if err := r.checkAbandoned(in, c, found, o); err != nil {
				return nil, err
			}
		}
		claim = &claimState{gen: 1, holder: r.holder}
		if found {
			claim.gen = c.Gen + 1
		}
		if err := r.putClaim(ctx, id, claim.gen, claimHold, r.holder,
			fmt.Sprintf("another writer resumed it at the same time (claim %d)", claim.gen)); err != nil {
			return nil, err
		}
	}
	run, err := r.resumeClaimed(ctx, id, claim)
	if err != nil && claim != nil {
		// Let the claim go rather than leave the run held by nobody
		// until its age frees it.
		_ = r.putClaim(ctx, id, claim.gen+1, claimFree, claim.holder, "")
	}
	return run, err
}

// resumeClaimed is ResumeRun once the run is held: under claim, new, or
// (nil) the handle's own.
func (r *Repo) resumeClaimed(ctx context.Context, id string, claim *claimState) (*Run, error) {
	series, err := r.AllSeries(ctx, id)
	if err != nil {
		return nil, err
	}
	ids := make([]SeriesID, len(series))
	for i, s := range series {
		ids[i] = s.ID
	}
	stats, err := r.SeriesStats(ctx, ids)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkWritable(); err != nil {
		return nil, err
	}
	run := r.runs[id]
	if run == nil || run.deleted {
		run = newRun(r, id)
		r.runs[id] = run
	}
	if claim != nil {
		if run.claim != nil && run.claim.lost != nil {
			// The handle lost the run before: start over from storage.
			run.plain, run.series = map[string]*seriesState{}, map[string]*seriesState{}
		}
		run.claim = claim
		r.claims[id] = claim
	}
	for _, s := range series {
		k := ""
		if s.Context != "{}" {
			k = s.Name + "\x00" + s.Context
		}
		st := run.lookup(s.Name, k)
		if st == nil {
			st = &seriesState{id: s.ID, name: s.Name, ctxJSON: s.Context, inTable: true}
			run.store(s.Name, k, st)
		}
		if ss, ok := stats[s.ID]; ok && ss.Count > 0 {
			if !st.has || ss.LastStep > st.maxStep {
				st.maxStep = ss.LastStep
			}
			if !st.has {
				st.last = ss.LastStep
			}
			st.has = true
		}
	}
	return run, nil
}

// TrackOptions are the optional parts of a point. A nil Step means one past
// the series' last step in this handle (0 for a new series).
type TrackOptions struct {
	Step    *int64
	Epoch   *int64
	Context map[string]any
	// Time is the point's timestamp (default: now).
	Time time.Time
}

// Track buffers one point of the series name (with opts' context) of the
// run. It fails with ErrNotFound once the run was deleted, ErrInvalid for
// an empty name, ErrClosed after Close.
func (run *Run) Track(value float64, name string, opts ...TrackOptions) error {
	var o TrackOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	key, ctxJSON, err := seriesKey(name, o.Context)
	if err != nil {
		return err
	}
	r := run.repo
	r.mu.Lock()
	if err := r.checkWritable(); err != nil {
		r.mu.Unlock()
		return err
	}
	if err := run.writable(); err != nil {
		r.mu.Unlock()
		return err
	}
	st := run.lookup(name, key)
	if st == nil {
		st = &seriesState{id: seriesID(run.id, name, ctxJSON), name: name, ctxJSON: ctxJSON}
		run.store(name, key, st)
	}
	var now time.Time
	if o.Time.IsZero() {
		now = r.opts.Now()
	} else {
		now = o.Time
	}
	var step int64
	switch {
	case o.Step != nil:
		step = *o.Step
	case !st.has:
		step = 0
	case st.last == math.MaxInt64:
		r.mu.Unlock()
		return fmt.Errorf("%w: metric %q: no step follows %d; give the step", ErrInvalid, name, st.last)
	default:
		step = st.last + 1
	}
	epoch, hasEpoch := int64(0), o.Epoch != nil
	if hasEpoch {
		epoch = *o.Epoch
	}
	n, err := r.addPoint(run, st, step, epoch, hasEpoch, now, value)
	if err == nil {
		run.active = true
	}
	if err == nil && n >= r.opts.FlushRows {
		r.triggerFlushLocked()
	}
	r.mu.Unlock()
	return err
}

// seriesKey checks a metric name and its context and returns the key of
// the series in a Run's maps ("" for no context) and its canonical
// context JSON.
func seriesKey(name string, context map[string]any) (key, ctxJSON string, err error) {
	ctxJSON = "{}"
	if len(context) > 0 {
		if ctxJSON, err = CanonicalContext(context); err != nil {
			return "", "", err
		}
		key = name + "\x00" + ctxJSON
	}
	if name == "" {
		return "", "", fmt.Errorf("%w: empty metric name", ErrInvalid)
	}
	if err := checkText("metric name", name); err != nil {
		return "", "", err
	}
	return key, ctxJSON, nil
}

// TrackMany tracks points of the series name (with opts' context) in one
// call: values[i] at steps[i], or, with steps nil, at consecutive steps
// after the series' last one (from 0 for a new series). opts.Epoch and
// opts.Time apply to every point (Time defaults to one reading of the
// clock per 4,096 points); opts.Step must be nil. The points are logged in
// WAL records of up to 4,096 points rather than one each. It returns how
// many points it tracked: all of them, or on an error those before it
// (logged and buffered; none after). Errors as Track's, and ErrInvalid
// when steps and values differ in length.
func (run *Run) TrackMany(name string, values []float64, steps []int64, opts TrackOptions) (int, error) {
	if steps != nil && len(steps) != len(values) {
		return 0, fmt.Errorf("%w: %d values but %d steps", ErrInvalid, len(values), len(steps))
	}
	if opts.Step != nil {
		return 0, fmt.Errorf("%w: TrackMany takes steps, not TrackOptions.Step", ErrInvalid)
	}
	key, ctxJSON, err := seriesKey(name, opts.Context)
	if err != nil {
		return 0, err
	}
	epoch, hasEpoch := int64(0), opts.Epoch != nil
	if hasEpoch {
		epoch = *opts.Epoch
	}
	r := run.repo
	r.mu.Lock()
	defer r.mu.Unlock()
	done := 0
	for done < len(values) {
		// Checked again at each chunk: the wait for room below lets a
		// Close or a delete in.
		if err := r.checkWritable(); err != nil {
			return done, err
		}
		if err := run.writable(); err != nil {
			return done, err
		}
		st := run.lookup(name, key)
		if st == nil {
			st = &seriesState{id: seriesID(run.id, name, ctxJSON), name: name, ctxJSON: ctxJSON}
			run.store(name, key, st)
		}
		now := opts.Time
		if now.IsZero() {
			now = r.opts.Now()
		}
		end := min(len(values), done+walChunk)
		var part []int64
		if steps != nil {
			part = steps[done:end]
		}
		n, err := r.addPoints(run, st, values[done:end], part, epoch, hasEpoch, now)
		done += n
		if n > 0 {
			run.active = true
		}
		if err != nil {
			return done, err
		}
		if r.buf.pts.len() >= r.opts.FlushRows {
			r.triggerFlushLocked()
		}
	}
	return done, nil
}

// SetParams merges parameters into the run: nested maps flatten to dotted
// keys (optimizer.lr); arrays and scalars are leaves. Setting a key does not
// remove its siblings.
func (run *Run) SetParams(params map[string]any) error {
	flat := map[string]any{}
	flatten("", params, flat)
	delete(flat, "")
	vals := make(map[string]ParamValue, len(flat))
	for k, v := range flat {
		if err := checkText("parameter key", k); err != nil {
			return err
		}
		p, err := makeParam(v)
		if err != nil {
			return fmt.Errorf("parameter %q: %w", k, err)
		}
		vals[k] = p
	}
	r := run.repo
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkWritable(); err != nil {
		return err
	}
	if err := run.writable(); err != nil {
		return err
	}
	now := r.opts.Now()
	for _, k := range sortedKeys(vals) {
		if err := r.addParamRow(paramRow{seq: r.nextSeq(now), runID: run.id, key: k, p: vals[k]}); err != nil {
			return err
		}
	}
	run.active = true
	return nil
}

// Update writes the fields set in p.
func (run *Run) Update(p RunPatch) error {
	if err := checkPatch(p); err != nil {
		return err
	}
	r := run.repo
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkWritable(); err != nil {
		return err
	}
	if err := run.writable(); err != nil {
		return err
	}
	now := r.opts.Now().UTC()
	if err := r.addRunRow(p.row(run.id, r.nextSeq(now), now)); err != nil {
		return err
	}
	// A run stays active (heartbeats continue) unless it ended; the flush
	// that commits its end frees its claim first.
	run.active = p.Status == nil || *p.Status == StatusRunning
	if p.Status != nil {
		if run.active {
			delete(r.buf.ending, run.id)
		} else {
			r.buf.ending[run.id] = true
		}
	}
	return nil
}

// writable returns why the handle may not write its run: ErrNotFound once
// the run was deleted, the ErrHeld of its loss once another writer took it
// over. Caller holds r.mu.
func (run *Run) writable() error {
	if run.deleted {
		return fmt.Errorf("%w: run %q was deleted", ErrNotFound, run.id)
	}
	if run.claim != nil && run.claim.lost != nil {
		return run.claim.lost
	}
	return nil
}

// Release gives the run up without ending it: it commits what the handle
// buffered and frees the run's claim (see claim.go), so that another
// writer may resume it at once. The handle keeps working (its later writes
// count as writes to a run it does not hold). It fails with ErrHeld when
// the run was taken over.
func (run *Run) Release(ctx context.Context) error {
	r := run.repo
	r.mu.Lock()
	if err := r.checkWritable(); err != nil {
		r.mu.Unlock()
		return err
	}
	if err := run.writable(); err != nil {
		r.mu.Unlock()
		return err
	}
	r.buf.ending[run.id] = true
	run.active = false
	r.mu.Unlock()
	return run.flushOwn(ctx)
}

// flushOwn flushes the repository's buffer and returns the error that
// concerns this run: the loss of the run, or a failure of the flush; the
// loss of another run of the handle is left to that run's handle.
func (run *Run) flushOwn(ctx context.Context) error {
	err := run.repo.Flush(ctx)
	run.repo.mu.Lock()
	own := run.writable()
	run.repo.mu.Unlock()
	if own != nil {
		return own
	}
	if err != nil && !onlyHeld(err) {
		return err
	}
	return nil
}

// onlyHeld reports whether err is made only of HeldErrors.
func onlyHeld(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyHeld(e) {
				return false
			}
		}
		return true
	}
	var he *HeldError
	return errors.As(err, &he) && err == error(he)
}

// Finish sets the run's status (StatusFinished when empty) and end time to
// now and flushes the repository's buffer: first the run's writes, then
// its status, whose flush frees the run's claim (see claim.go). It fails
// with ErrHeld, changing nothing, when another writer took the run over.
func (run *Run) Finish(ctx context.Context, status string) error {
	return run.FinishAt(ctx, status, run.repo.opts.Now())
}

// FinishAt is Finish with an explicit end time.
func (run *Run) FinishAt(ctx context.Context, status string, end time.Time) error {
	if status == "" {
		status = StatusFinished
	}
	if status == StatusRunning {
		return fmt.Errorf("%w: a run finishes as %s, %s or %s, not %s", ErrInvalid, StatusFinished, StatusFailed, StatusAborted, status)
	}
	// The writes land before the claim is freed, so a writer that resumes
	// the run at once sees them. When that flush fails for another reason
	// the status is buffered anyway, for a later flush (or the WAL).
	ferr := run.flushOwn(ctx)
	if errors.Is(ferr, ErrHeld) {
		return ferr
	}
	if err := run.Update(RunPatch{Status: &status, EndedAt: &end}); err != nil {
		return errors.Join(ferr, err)
	}
	if ferr != nil {
		return ferr
	}
	return run.flushOwn(ctx)
}

// UpdateRun writes the fields set in p to the run id, which must exist
// (ErrNotFound otherwise).
func (r *Repo) UpdateRun(ctx context.Context, id string, p RunPatch) error {
	if err := r.checkWritableLocked(); err != nil {
		return err
	}
	if err := checkPatch(p); err != nil {
		return err
	}
	if _, err := r.Run(ctx, id); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkWritable(); err != nil {
		return err
	}
	if c := r.claims[id]; c != nil && c.lost != nil {
		return c.lost // its rows would be dropped
	}
	now := r.opts.Now().UTC()
	return r.addRunRow(p.row(id, r.nextSeq(now), now))
}

func (r *Repo) checkWritableLocked() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.checkWritable()
}

func newRun(r *Repo, id string) *Run {
	return &Run{repo: r, id: id, plain: map[string]*seriesState{}, series: map[string]*seriesState{}}
}

// lookup finds a series state: by name when key is empty (no context).
func (run *Run) lookup(name, key string) *seriesState {
	if key == "" {
		return run.plain[name]
	}
	return run.series[key]
}

func (run *Run) store(name, key string, st *seriesState) {
	if key == "" {
		run.plain[name] = st
	} else {
		run.series[key] = st
	}
}
