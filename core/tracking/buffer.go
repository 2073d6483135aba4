package tracking

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

type paramRow struct {
	seq        uint64
	runID, key string
	p          ParamValue
}

type seriesRow struct {
	id               SeriesID
	runID, name, ctx string
	created          int64 // µs
}

type recordRow struct {
	seq     uint64
	runID   string // "" is null
	itemID  string
	data    *string // nil: a deletion
	created int64
}

type deltaEntry struct {
	id    SeriesID
	runID string
	d     delta
}

// points are buffered metric points, by column.
type points struct {
	sid      []uint64
	step     []int64
	epoch    []int64
	hasEpoch []bool
	ts       []int64 // µs
	val      []float64
}

func (p *points) len() int { return len(p.sid) }

func (p *points) appendAll(o *points) {
	p.sid = append(p.sid, o.sid...)
	p.step = append(p.step, o.step...)
	p.epoch = append(p.epoch, o.epoch...)
	p.hasEpoch = append(p.hasEpoch, o.hasEpoch...)
	p.ts = append(p.ts, o.ts...)
	p.val = append(p.val, o.val...)
}

// buffer holds the writes of a Repo handle not yet committed.
type buffer struct {
	gen     uint64
	want    int // point capacity to allocate at the first point
	runs    []runRow
	params  []paramRow
	series  []seriesRow
	pts     points
	deltas  []*deltaEntry
	byID    map[SeriesID]*deltaEntry
	records map[string][]recordRow
	maxSeq  uint64
	// ending holds the runs whose handles gave them up (a final status,
	// Run.Release) in this buffer: the flush frees their claims before
	// it commits (see fence).
	ending map[string]bool
}

var bufGen atomic.Uint64

func newBuffer() *buffer {
	return &buffer{gen: bufGen.Add(1), byID: map[SeriesID]*deltaEntry{}, records: map[string][]recordRow{}, ending: map[string]bool{}}
}

// newBufferFrom returns an empty buffer reusing the point columns of a
// committed one (nil: fresh ones with room for n points, allocated when
// the first point arrives, so that handles that track nothing allocate
// nothing).
func newBufferFrom(spare *points, n int) *buffer {
	b := newBuffer()
	if spare != nil {
		b.pts = points{spare.sid[:0], spare.step[:0], spare.epoch[:0], spare.hasEpoch[:0], spare.ts[:0], spare.val[:0]}
	} else {
		b.want = n
	}
	return b
}

// reserve allocates the point columns with room for b.want points.
func (b *buffer) reserve() {
	n := max(b.want, 1)
	b.want = 0
	var p points
	p.sid, p.step, p.epoch = make([]uint64, 0, n), make([]int64, 0, n), make([]int64, 0, n)
	p.hasEpoch, p.ts, p.val = make([]bool, 0, n), make([]int64, 0, n), make([]float64, 0, n)
	p.appendAll(&b.pts)
	b.pts = p
}

// maxSpare is the largest point capacity a handle keeps for its next
// buffer: a buffer holds at most about twice FlushRows points (Track waits
// beyond that while a flush runs).
func (r *Repo) maxSpare() int { return max(1<<20, 2*r.opts.FlushRows+r.opts.FlushRows/2) }

func (b *buffer) empty() bool {
	return len(b.runs) == 0 && len(b.params) == 0 && len(b.series) == 0 && b.pts.len() == 0 &&
		len(b.deltas) == 0 && len(b.records) == 0 && len(b.ending) == 0
}

func (b *buffer) delta(id SeriesID, runID string) *deltaEntry {
	e := b.byID[id]
	if e == nil {
		e = &deltaEntry{id: id, runID: runID, d: newDelta()}
		b.byID[id] = e
		b.deltas = append(b.deltas, e)
	}
	return e
}

// prepend puts the rows of old (an earlier, failed flush) in front of b's.
func (b *buffer) prepend(old *buffer) {
	b.runs = append(old.runs, b.runs...)
	b.params = append(old.params, b.params...)
	b.series = append(old.series, b.series...)
	if old.pts.len() > 0 {
		p := old.pts
		p.appendAll(&b.pts)
		b.pts = p
	}
	for _, e := range old.deltas {
		if cur := b.byID[e.id]; cur != nil {
			cur.d.merge(e.d)
		} else {
			b.byID[e.id] = e
			b.deltas = append(b.deltas, e)
		}
	}
	for t, rows := range old.records {
		b.records[t] = append(rows, b.records[t]...)
	}
	b.maxSeq = max(b.maxSeq, old.maxSeq)
	for id := range old.ending {
		b.ending[id] = true
	}
}

// addRunRow buffers a runs row. Caller holds r.mu.
func (r *Repo) addRunRow(rw runRow) error {
	if r.opts.WAL != nil {
		if err := r.walClaimOf(rw.info.ID); err != nil {
			return err
		}
		if err := r.walAppend(walRun, encodeRunRow(nil, rw)); err != nil {
			return err
		}
	}
	r.buf.runs = append(r.buf.runs, rw)
	r.buf.maxSeq = max(r.buf.maxSeq, rw.seq)
	return nil
}

func (r *Repo) addParamRow(p paramRow) error {
	if r.opts.WAL != nil {
		if err := r.walClaimOf(p.runID); err != nil {
			return err
		}
		if err := r.walAppend(walParam, encodeParamRow(nil, p)); err != nil {
			return err
		}
	}
	r.buf.params = append(r.buf.params, p)
	r.buf.maxSeq = max(r.buf.maxSeq, p.seq)
	return nil
}

// addPoint buffers a point and returns the number of buffered points.
// Caller holds r.mu.
func (r *Repo) addPoint(run *Run, st *seriesState, step, epoch int64, hasEpoch bool, now time.Time, v float64) (int, error) {
	vals, steps := [1]float64{v}, [1]int64{step}
	_, err := r.addPoints(run, st, vals[:], steps[:], epoch, hasEpoch, now)
	return r.buf.pts.len(), err
}

// addPoints buffers points of one series: vals[i] at steps[i], or, with
// steps nil, each one past the last (0 for a new series). The points are
// in the WAL (handed to the OS, or fsynced in SyncAlways mode) before they
// are buffered, in records of up to walChunk points, so a process killed
// after the call returned loses none of them, and points whose logging
// failed are neither buffered nor replayed. It returns how many points it
// buffered: on an error, the records logged before it. Caller holds r.mu.
func (r *Repo) addPoints(run *Run, st *seriesState, vals []float64, steps []int64, epoch int64, hasEpoch bool, now time.Time) (int, error) {
	b := r.buf
	if err := r.walClaim(run.id, run.claim); err != nil {
		return 0, err
	}
	if !st.inTable {
		sr := seriesRow{id: st.id, runID: run.id, name: st.name, ctx: st.ctxJSON, created: now.UnixMicro()}
		b.series = append(b.series, sr)
		if r.opts.WAL != nil {
			if err := r.walPendingSeries(sr, r.nextSeq(now)); err != nil {
				b.series = b.series[:len(b.series)-1]
				return 0, err
			}
		}
		st.inTable = true
	}
	ts := now.UnixMicro()
	// The series' delta is dirty once a point may overwrite a step counted
	// before; the WAL records carry the flag.
	dirty := false
	if st.gen == b.gen && st.d != nil {
		dirty = st.d.d.dirty
	} else if e := b.byID[st.id]; e != nil {
		dirty = e.d.dirty
	}
	plan := r.plan[:0]
	done := 0
	var stop error
	for done < len(vals) && stop == nil {
		// Plan a chunk (steps, sequence numbers, dirty flags) as buffering
		// would make them, log it, then buffer it.
		has, last, maxStep := st.has, st.last, st.maxStep
		k := 0
		plan = plan[:0]
		for ; k < walChunk && done+k < len(vals); k++ {
			var step int64
			switch {
			case steps != nil:
				step = steps[done+k]
			case !has:
				step = 0
			case last == math.MaxInt64:
				stop = fmt.Errorf("%w: metric %q: no step follows %d; give the step", ErrInvalid, st.name, last)
			default:
				step = last + 1
			}
			if stop != nil {
				break
			}
			dirty = dirty || has && step <= maxStep
			plan = append(plan, plannedPoint{step, r.nextSeq(now), dirty})
			if !has || step > maxStep {
				maxStep = step
			}
			last, has = step, true
		}
		if r.opts.WAL != nil && k > 0 {
			var err error
			for i := 0; i < k && err == nil; i++ {
				err = r.walPendingPoint(st.id, plan[i].step, epoch, hasEpoch, ts, vals[done+i], plan[i].seq, plan[i].dirty)
			}
			if err == nil {
				err = r.walWritePending()
			}
			if err != nil { // walWritePending has dropped the chunk
				return done, err
			}
		}
		if k == 0 {
			break
		}
		if st.gen != b.gen || st.d == nil {
			st.d, st.gen = b.delta(st.id, run.id), b.gen
		}
		if b.want > 0 {
			// Room for a whole flush (up to 4Mi points): growing a large
			// buffer copies it.
			b.want = max(b.want, min(r.opts.FlushRows+1, 1<<22))
			b.reserve()
		}
		for i := 0; i < k; i++ {
			step, v := plan[i].step, vals[done+i]
			if plan[i].dirty {
				st.d.d.dirty = true
			}
			st.d.d.add(step, v, ts, plan[i].seq)
			b.pts.sid = append(b.pts.sid, uint64(st.id))
			b.pts.step = append(b.pts.step, step)
			b.pts.epoch = append(b.pts.epoch, epoch)
			b.pts.hasEpoch = append(b.pts.hasEpoch, hasEpoch)
			b.pts.ts = append(b.pts.ts, ts)
			b.pts.val = append(b.pts.val, v)
			b.maxSeq = plan[i].seq
		}
		st.has, st.last, st.maxStep = has, last, maxStep
		done += k
	}
	r.plan = plan[:0] // kept for the next call
	return done, stop
}

// plannedPoint is a point of addPoints' chunk as it will be buffered.
type plannedPoint struct {
	step  int64
	seq   uint64
	dirty bool
}

// triggerFlushLocked starts a background flush, or waits while twice
// FlushRows points are buffered and one is running. Caller holds r.mu.
func (r *Repo) triggerFlushLocked() {
	for {
		if !r.flushing {
			r.flushing = true
			go func() {
				r.flushMu.Lock()
				err := r.flushLocked(context.Background())
				r.flushMu.Unlock()
				r.setBgErr(err)
				r.mu.Lock()
				r.flushing = false
				r.full.Broadcast()
				r.mu.Unlock()
			}()
			return
		}
		if r.buf.pts.len() < 2*r.opts.FlushRows || r.closed || r.closing {
			return
		}
		r.full.Wait()
	}
}

// Flush commits the handle's buffered writes: one append per non-empty
// table, in the order runs, params, series, metrics (then records). On
// failure the rows not committed go back to the buffer. It then waits for
// a background compaction of metrics to end, and returns (once) the error
// of a failed background flush or compaction. Flush on a read-only handle
// does nothing.
func (r *Repo) Flush(ctx context.Context) error {
	if r.opts.ReadOnly {
		return nil
	}
	r.flushMu.Lock()
	err := r.flushLocked(ctx)
	done := r.compacting
	r.flushMu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
		}
	}
	if bg := r.takeBgErr(); err == nil {
		err = bg
	}
	return err
}

// flushLocked runs one flush. Caller holds r.flushMu.
func (r *Repo) flushLocked(ctx context.Context) error {
	r.mu.Lock()
	if err := r.addHeartbeatLocked(); err != nil {
		r.mu.Unlock()
		return err
	}
	b := r.buf
	if b.empty() {
		r.mu.Unlock()
		return nil
	}
	r.buf = newBufferFrom(r.spare, min(r.opts.FlushRows, 1<<20))
	r.spare = nil
	var token uint64
	var werr error
	if r.opts.WAL != nil {
		werr = r.walWritePending()
		if werr == nil {
			token, werr = r.opts.WAL.Rotate()
		}
		if werr == nil {
			r.walEpoch++ // claims are logged again before their runs' next rows
		}
	}
	r.mu.Unlock()
	if werr != nil {
		r.mu.Lock()
		r.buf.prepend(b)
		r.mu.Unlock()
		return fmt.Errorf("tracking: wal: %w", werr)
	}
	lost, err := r.commitBuffer(ctx, b)
	r.mu.Lock()
	if err != nil {
		r.buf.prepend(b)
	}
	r.full.Broadcast()
	r.mu.Unlock()
	if err != nil {
		return errors.Join(lost, err)
	}
	if r.opts.WAL != nil {
		_ = r.opts.WAL.Release(token)
	}
	if err := r.autoCompact(ctx); err != nil {
		return errors.Join(lost, err)
	}
	return lost
}

// commitBuffer appends b's rows; what it commits it removes from b, so on
// error b holds exactly the rows still to write. Rows of runs this handle
// lost to another writer are dropped first; lost reports those runs.
func (r *Repo) commitBuffer(ctx context.Context, b *buffer) (lost error, err error) {
	if err := r.refreshTombstones(ctx, false); err != nil {
		return nil, err
	}
	r.dropDeleted(b)
	if lost, err = r.fence(ctx, b); err != nil {
		return lost, err
	}
	return lost, r.commitRows(ctx, b)
}

// commitRows appends b's rows (see commitBuffer).
func (r *Repo) commitRows(ctx context.Context, b *buffer) error {
	now := r.opts.Now().UTC()
	writer, mark := "", b.maxSeq
	if r.opts.WAL != nil {
		writer = r.opts.WAL.WriterID()
	}
	if len(b.runs) > 0 {
		rows := b.runs
		if writer != "" {
			rows = append(rows[:len(rows):len(rows)], runRow{seq: mark, hasMsk: true, info: RunInfo{ID: walPrefix + writer, CreatedAt: now, UpdatedAt: now}})
		}
		d, err := appendRecord(ctx, r.tables.runs, buildRuns(rows))
		if err != nil {
			return fmt.Errorf("tracking: flush runs: %w", err)
		}
		r.tables.runs, b.runs = d, nil
	}
	if len(b.params) > 0 {
		rows := b.params
		if writer != "" {
			rows = append(rows[:len(rows):len(rows)], paramRow{seq: mark, runID: walPrefix + writer, key: "", p: ParamValue{Value: []byte("null")}})
		}
		d, err := appendRecord(ctx, r.tables.params, buildParams(rows))
		if err != nil {
			return fmt.Errorf("tracking: flush params: %w", err)
		}
		r.tables.params, b.params = d, nil
	}
	if len(b.series) > 0 {
		rows := b.series
		if writer != "" {
			rows = append(rows[:len(rows):len(rows)], seriesRow{runID: walPrefix + writer, name: fmt.Sprint(mark), ctx: "{}", created: now.UnixMicro()})
		}
		d, err := appendRecord(ctx, r.tables.series, buildSeries(rows))
		if err != nil {
			return fmt.Errorf("tracking: flush series: %w", err)
		}
		r.tables.series, b.series = d, nil
	}
	if b.pts.len() > 0 || len(b.deltas) > 0 {
		var markRow []byte
		if writer != "" {
			markRow = encodeMark(writer, mark)
		}
		// The points go as a batch sharing the buffer's columns; the
		// statistics deltas and the mark follow in a second batch of the
		// same fragment.
		recs := []arrowRecord{buildMetrics(&points{}, b.deltas, markRow, now)}
		if pr := pointsRecord(&b.pts); pr != nil {
			recs = []arrowRecord{pr, recs[0]}
		}
		d, err := r.tables.metrics.Append(ctx, lance.Batches(recs...), lance.WriteOptions{})
		for _, rec := range recs {
			rec.Release()
		}
		if err != nil {
			return fmt.Errorf("tracking: flush metrics: %w", err)
		}
		spare := b.pts
		r.tables.metrics, b.pts, b.deltas, b.byID = d, points{}, nil, map[SeriesID]*deltaEntry{}
		if cap(spare.sid) <= r.maxSpare() {
			r.mu.Lock()
			r.spare = &spare
			r.mu.Unlock()
		}
	}
	for _, t := range sortedKeys(b.records) {
		d, err := r.recordsTable(ctx, t, true)
		if err != nil {
			return err
		}
		d, err = appendRecord(ctx, d, buildRecords(t, b.records[t]))
		if err != nil {
			return fmt.Errorf("tracking: flush records %q: %w", t, err)
		}
		r.tables.records[t] = d
		delete(b.records, t)
	}
	return nil
}

func appendRecord(ctx context.Context, d *lance.Dataset, rec arrowRecord) (*lance.Dataset, error) {
	defer rec.Release()
	return d.Append(ctx, lance.Batches(rec), lance.WriteOptions{})
}

// dropDeleted removes the buffered writes to runs known to be deleted and
// marks their handles. Caller holds r.flushMu.
func (r *Repo) dropDeleted(b *buffer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.deleted) == 0 {
		return
	}
	b.dropRuns(r.deleted, true)
	for id := range r.deleted {
		if run := r.runs[id]; run != nil {
			run.deleted = true
		}
		delete(b.ending, id)
	}
}

// dropRuns removes the rows of the runs in del from b, tombstones
// excepted (and records rows naming them only with records).
func (b *buffer) dropRuns(del map[string]bool, records bool) {
	b.runs = filterRows(b.runs, func(x runRow) bool { return !del[x.info.ID] || x.fields == FieldDeleted })
	b.params = filterRows(b.params, func(x paramRow) bool { return !del[x.runID] })
	b.series = filterRows(b.series, func(x seriesRow) bool { return !del[x.runID] })
	for t, rows := range b.records {
		if !records {
			break
		}
		b.records[t] = filterRows(rows, func(x recordRow) bool { return x.runID == "" || !del[x.runID] })
		if len(b.records[t]) == 0 {
			delete(b.records, t)
		}
	}
	gone := map[uint64]bool{}
	keep := b.deltas[:0]
	for _, e := range b.deltas {
		if del[e.runID] {
			gone[uint64(e.id)] = true
			delete(b.byID, e.id)
		} else {
			keep = append(keep, e)
		}
	}
	b.deltas = keep
	if len(gone) == 0 {
		return
	}
	var p points
	for i, s := range b.pts.sid {
		if !gone[s] {
			p.sid = append(p.sid, s)
			p.step = append(p.step, b.pts.step[i])
			p.epoch = append(p.epoch, b.pts.epoch[i])
			p.hasEpoch = append(p.hasEpoch, b.pts.hasEpoch[i])
			p.ts = append(p.ts, b.pts.ts[i])
			p.val = append(p.val, b.pts.val[i])
		}
	}
	b.pts = p
}

func filterRows[T any](rows []T, keep func(T) bool) []T {
	out := rows[:0]
	for _, x := range rows {
		if keep(x) {
			out = append(out, x)
		}
	}
	return out
}

// refreshTombstones reads the runs fragments not read before for
// tombstones, at most once a second unless forced. Caller holds r.flushMu.
func (r *Repo) refreshTombstones(ctx context.Context, force bool) error {
	now := time.Now()
	if !force && now.Sub(r.tombScan.last) < time.Second {
		return nil
	}
	r.tombScan.last = now
	d, err := r.tables.runs.Latest(ctx)
	if err != nil {
		return err
	}
	r.tables.runs = d
	if d.Version() == r.tombScan.version {
		return nil
	}
	r.tombScan.version = d.Version()
	var ids []uint64
	seen := map[uint64]bool{}
	for _, f := range d.Fragments() {
		seen[f.ID] = true
		if !r.tombScan.seen[f.ID] {
			ids = append(ids, f.ID)
		}
	}
	r.tombScan.seen = seen
	if len(ids) == 0 {
		return nil
	}
	found, err := scanTombstones(ctx, d, ids)
	if err != nil {
		return err
	}
	if len(found) > 0 {
		r.mu.Lock()
		for id := range found {
			r.deleted[id] = true
		}
		r.mu.Unlock()
	}
	return nil
}

// autoCompact compacts tables with more than MaxFragments fragments.
// Conflicts with concurrent maintenance are ignored: the next flush
// retries. Caller holds r.flushMu.
func (r *Repo) autoCompact(ctx context.Context) error {
	if r.opts.MaxFragments < 0 {
		return nil
	}
	limit := r.opts.MaxFragments
	for _, p := range []**lance.Dataset{&r.tables.runs, &r.tables.params, &r.tables.series} {
		if len((*p).Fragments()) > limit {
			d, _, err := (*p).Compact(ctx, lance.CompactOptions{})
			if err != nil {
				if skippable(err) {
					continue
				}
				return err
			}
			*p = d
		}
	}
	if d := r.tables.metrics; d != nil && r.compacting == nil && compactable(planMetrics(d)) > limit {
		// Plain compaction, not the sorted rewrite: it keeps the read order
		// and costs no sort; Optimize sorts later (a merged sorted
		// fragment makes that a full rewrite). It runs in the background
		// so that flushes (and Track) go on meanwhile: Lance commits a
		// rewrite alongside appends. Flush and Close wait for it.
		done := make(chan struct{})
		r.compacting = done
		go r.compactMetrics(d, done)
	}
	for t, d := range r.tables.records {
		if len(d.Fragments()) > limit {
			nd, _, err := d.Compact(ctx, lance.CompactOptions{})
			if err == nil {
				r.tables.records[t] = nd
			} else if !skippable(err) {
				return err
			}
		}
	}
	return nil
}

// compactMetrics compacts the metrics version d in the background and
// closes done. Errors other than those of an outdated version (skippable:
// the next flush's compaction retries) go to the next Flush.
func (r *Repo) compactMetrics(d *lance.Dataset, done chan struct{}) {
	defer close(done)
	nd, _, err := d.Compact(context.Background(), lance.CompactOptions{})
	r.flushMu.Lock()
	r.compacting = nil
	if err == nil && nd.Version() > r.tables.metrics.Version() {
		// Otherwise a flush committed on top of the compaction already.
		r.tables.metrics = nd
	}
	r.flushMu.Unlock()
	if err != nil && !skippable(err) {
		r.setBgErr(fmt.Errorf("tracking: compact metrics: %w", err))
	}
}

// skippable reports whether an automatic compaction failed only because its
// version is outdated: a concurrent commit conflicts with it, or a cleanup
// removed files of the (old) version it read. It changed nothing; a later
// flush compacts the newest version.
func skippable(err error) bool {
	return errors.Is(err, lance.ErrConflict) || errors.Is(err, lance.ErrNotFound) || errors.Is(err, store.ErrNotFound)
}

// compactable counts the metrics fragments outside the sorted ranges that a
// compaction would merge: those below the target size, or with deleted
// rows. Full-size fragments do not count: compacting cannot reduce them,
// and counting them would make every flush recompact the newest partial
// fragment once a long run has written more than MaxFragments of them.
func compactable(p metricsPlan) int {
	n := 0
	for _, f := range p.scanned {
		if f.PhysicalRows < lance.DefaultMaxRowsPerFile || f.DeletedRows > 0 {
			n++
		}
	}
	return n
}
