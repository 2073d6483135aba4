package tracking

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/internal/par"
	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
)

// WAL record kinds of the tracking layer (the key-value layer uses kinds
// below 20). Every record starts with its kind byte and a sequence number
// (u64, little-endian), as package native/wal requires:
//
//	20 run change   kind | seq | JSON of the runs row (walRun)
//	21 parameter    kind | seq | JSON of the params row (walParam)
//	22 series       kind | seq | JSON of the series row (walSeries)
//	23 points       kind | seq of the last point | count u32 | count × point
//	                point = series u64 | step i64 | epoch i64 | flags u8 |
//	                        timestamp i64 (µs) | value f64 | seq u64   (49 bytes)
//	                flags: bit 0 epoch present, bit 1 dirty
//	24 claim        kind | seq | JSON {"run", "gen", "holder"} (walClaimRec)
//
// Track logs its point as one record before it returns (in the WAL's
// durability mode: handed to the OS, which survives the process, or
// fsynced in SyncAlways mode), as the key-value layer logs each write.
// Replay re-logs the points it takes over in records of up to walChunk
// points.
//
// A claim record names the claim (claim.go) under which the writer holds a
// run; it precedes the writer's first row of the run after each rotation
// of the log, so every log holding rows of a run says which generation
// wrote them. Replay drops the rows of a run whose claim was taken over
// since (replayKeeps): the new holder resumed from what was committed.
// Versions that predate claims skip the record when they replay (an
// unknown kind).
//
// Each flush commit carries a mark row holding the writer id and the
// highest sequence number of the flush: in runs and params a row whose
// run_id is "__kv0_wal__/<writer>" and seq the mark, in series a row with
// that run_id and the mark in name, in metrics a series_id 0 row whose
// stats column holds an encoded mark (stats.go). Replay re-buffers a
// record only when the mark of its table for its writer is below the
// record's sequence number, so a crash between two of a flush's commits
// replays exactly the tables that were not committed.
const (
	walRun    byte = 20
	walParam  byte = 21
	walSeries byte = 22
	walPoints byte = 23
	// walClaimRec is the claim record (claim.go).
	walClaimRec byte = 24

	walChunk    = 4096
	walPointLen = 49
)

type walRunJSON struct {
	Seq    uint64  `json:"seq"`
	Info   RunInfo `json:"info"`
	Fields uint32  `json:"fields"`
	HasMsk bool    `json:"has_fields"`
}

type walParamJSON struct {
	Seq   uint64     `json:"seq"`
	RunID string     `json:"run_id"`
	Key   string     `json:"key"`
	P     ParamValue `json:"p"`
}

type walSeriesJSON struct {
	ID      SeriesID `json:"id"`
	RunID   string   `json:"run_id"`
	Name    string   `json:"name"`
	Context string   `json:"context"`
	Created int64    `json:"created"`
	Seq     uint64   `json:"seq"`
}

func encodeRunRow(dst []byte, rw runRow) []byte {
	b, _ := json.Marshal(walRunJSON{rw.seq, rw.info, rw.fields, rw.hasMsk})
	return append(dst, b...)
}

func encodeParamRow(dst []byte, p paramRow) []byte {
	b, _ := json.Marshal(walParamJSON{p.seq, p.runID, p.key, p.p})
	return append(dst, b...)
}

// walAppend logs one record of kind, after the pending points. Caller holds
// r.mu.
func (r *Repo) walAppend(kind byte, body []byte) error {
	if err := r.walWritePending(); err != nil {
		return err
	}
	rec := binary.LittleEndian.AppendUint64([]byte{kind}, r.lastSeq)
	rec = append(rec, body...)
	if err := r.opts.WAL.Append(rec); err != nil {
		return fmt.Errorf("tracking: wal append: %w", err)
	}
	return nil
}

func (r *Repo) walPendingSeries(s seriesRow, seq uint64) error {
	b, _ := json.Marshal(walSeriesJSON{s.id, s.runID, s.name, s.ctx, s.created, seq})
	return r.walAppend(walSeries, b)
}

// walPendingPoint adds a point to the pending chunk. Caller holds r.mu.
func (r *Repo) walPendingPoint(sid SeriesID, step, epoch int64, hasEpoch bool, ts int64, v float64, seq uint64, dirty bool) error {
	if len(r.walBuf) == 0 {
		r.walBuf = append(r.walBuf, walPoints, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	}
	var flags byte
	if hasEpoch {
		flags |= 1
	}
	if dirty {
		flags |= 2
	}
	b := r.walBuf
	b = binary.LittleEndian.AppendUint64(b, uint64(sid))
	b = binary.LittleEndian.AppendUint64(b, uint64(step))
	b = binary.LittleEndian.AppendUint64(b, uint64(epoch))
	b = append(b, flags)
	b = binary.LittleEndian.AppendUint64(b, uint64(ts))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	b = binary.LittleEndian.AppendUint64(b, seq)
	r.walBuf = b
	r.walN++
	if r.walN >= walChunk {
		return r.walWritePending()
	}
	return nil
}

// walWritePending logs the pending chunk of points. Caller holds r.mu.
func (r *Repo) walWritePending() error {
	if r.opts.WAL == nil || r.walN == 0 {
		return nil
	}
	binary.LittleEndian.PutUint64(r.walBuf[1:], r.lastSeq)
	binary.LittleEndian.PutUint32(r.walBuf[9:], uint32(r.walN))
	err := r.opts.WAL.Append(r.walBuf)
	r.walBuf, r.walN = r.walBuf[:0], 0
	if err != nil {
		return fmt.Errorf("tracking: wal append: %w", err)
	}
	return nil
}

// walMarks are the highest committed sequence numbers of each writer, per
// table.
type walMarks struct {
	runs, params, series, metrics map[string]uint64
}

func (r *Repo) loadMarks(ctx context.Context) (walMarks, error) {
	m := walMarks{map[string]uint64{}, map[string]uint64{}, map[string]uint64{}, map[string]uint64{}}
	upd := func(mm map[string]uint64, w string, s uint64) {
		mm[w] = max(mm[w], s)
	}
	err := scanAll(ctx, r.tables.runs, lance.ScanOptions{Columns: []string{"seq", "run_id"}}, func(rec arrow.RecordBatch) error {
		seq, id := rec.Column(0).(*array.Uint64), rec.Column(1).(*array.String)
		for i := 0; i < id.Len(); i++ {
			if isMarkRun(id.Value(i)) {
				upd(m.runs, id.Value(i)[len(walPrefix):], seq.Value(i))
			}
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	err = scanAll(ctx, r.tables.params, lance.ScanOptions{Columns: []string{"seq", "run_id"}}, func(rec arrow.RecordBatch) error {
		seq, id := rec.Column(0).(*array.Uint64), rec.Column(1).(*array.String)
		for i := 0; i < id.Len(); i++ {
			if isMarkRun(id.Value(i)) {
				upd(m.params, id.Value(i)[len(walPrefix):], seq.Value(i))
			}
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	err = scanAll(ctx, r.tables.series, lance.ScanOptions{Columns: []string{"run_id", "name"}}, func(rec arrow.RecordBatch) error {
		id, name := rec.Column(0).(*array.String), rec.Column(1).(*array.String)
		for i := 0; i < id.Len(); i++ {
			if isMarkRun(id.Value(i)) {
				if s, err := strconv.ParseUint(name.Value(i), 10, 64); err == nil {
					upd(m.series, id.Value(i)[len(walPrefix):], s)
				}
			}
		}
		return nil
	})
	if err != nil {
		return m, err
	}
	err = r.visitMetrics(ctx, r.tables.metrics, []uint64{0}, deltaCols, func(rec arrow.RecordBatch) error {
		sid := rec.Column(0).(*array.Uint64).Uint64Values()
		st := rec.Column(2).(*array.Binary)
		for i, s := range sid {
			if s == 0 && st.IsValid(i) {
				if w, seq, ok := decodeMark(st.Value(i)); ok {
					upd(m.metrics, w, seq)
				}
			}
		}
		return nil
	})
	return m, err
}

// replayWAL re-buffers the records of abandoned writers that their marks
// do not cover, logs them in this writer's WAL, releases the claimed logs
// and flushes.
func (r *Repo) replayWAL(ctx context.Context) error {
	claimed := r.opts.WAL.Claimed()
	if len(claimed) == 0 {
		return nil
	}
	marks, err := r.loadMarks(ctx)
	if err != nil {
		return err
	}
	known, err := r.loadSeries(ctx, "")
	if err != nil {
		return err
	}
	runOf := map[SeriesID]string{}
	for _, s := range known {
		runOf[s.ID] = s.RunID
	}
	drop, err := r.replayClaims(ctx, claimed)
	if err != nil {
		return err
	}
	r.mu.Lock()
	for i, l := range claimed {
		w := l.WriterID
		gone := drop[i]
		for _, rec := range l.Records {
			if len(rec) < 9 {
				continue
			}
			body := rec[9:]
			switch rec[0] {
			case walRun:
				var j walRunJSON
				if json.Unmarshal(body, &j) != nil || gone[j.Info.ID] && j.Fields != FieldDeleted {
					continue
				}
				if j.Seq > marks.runs[w] {
					err = r.addRunRow(runRow{seq: j.Seq, info: j.Info, fields: j.Fields, hasMsk: j.HasMsk})
				}
			case walParam:
				var j walParamJSON
				if json.Unmarshal(body, &j) != nil || gone[j.RunID] {
					continue
				}
				if j.Seq > marks.params[w] {
					err = r.addParamRow(paramRow{seq: j.Seq, runID: j.RunID, key: j.Key, p: j.P})
				}
			case walSeries:
				var j walSeriesJSON
				if json.Unmarshal(body, &j) != nil {
					continue
				}
				runOf[j.ID] = j.RunID
				if j.Seq > marks.series[w] && !gone[j.RunID] {
					sr := seriesRow{id: j.ID, runID: j.RunID, name: j.Name, ctx: j.Context, created: j.Created}
					r.buf.series = append(r.buf.series, sr)
					if err = r.walClaimOf(j.RunID); err == nil {
						err = r.walPendingSeries(sr, j.Seq)
					}
				}
			case walPoints:
				err = r.replayPoints(body, marks.metrics[w], runOf, gone)
			}
			if err != nil {
				r.mu.Unlock()
				return err
			}
		}
	}
	err = r.walWritePending()
	r.mu.Unlock()
	if err != nil {
		return err
	}
	if err := r.opts.WAL.Sync(); err != nil {
		return err
	}
	if err := r.opts.WAL.ReleaseClaimed(); err != nil {
		return err
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	return r.flushLocked(ctx)
}

// replayClaims reads the claim records of the abandoned logs and returns,
// per log, the runs whose rows it must not replay: runs another writer
// took over since the log's writer claimed them. It registers the claims
// of the runs it keeps, so that the replay's flush checks them as a
// writer's flush does.
func (r *Repo) replayClaims(ctx context.Context, claimed []kv.ClaimedLog) ([]map[string]bool, error) {
	logs := make([]map[string]walClaimJSON, len(claimed))
	var ids []string
	seen := map[string]bool{}
	for i, l := range claimed {
		for _, rec := range l.Records {
			if len(rec) < 9 || rec[0] != walClaimRec {
				continue
			}
			var j walClaimJSON
			if json.Unmarshal(rec[9:], &j) != nil || j.Run == "" {
				continue
			}
			if logs[i] == nil {
				logs[i] = map[string]walClaimJSON{}
			}
			logs[i][j.Run] = j // the log's last claim of the run counts
			if !seen[j.Run] {
				seen[j.Run] = true
				ids = append(ids, j.Run)
			}
		}
	}
	newest := make([]claimBody, len(ids))
	found := make([]bool, len(ids))
	err := par.Do(ctx, len(ids), 8, func(ctx context.Context, i int) (err error) {
		newest[i], found[i], err = r.newestClaim(ctx, ids[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, id := range ids {
		at[id] = i
	}
	drop := make([]map[string]bool, len(claimed))
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, m := range logs {
		for id, j := range m {
			n, ok := newest[at[id]], found[at[id]]
			if !replayKeeps(j, n, ok) {
				if drop[i] == nil {
					drop[i] = map[string]bool{}
				}
				drop[i][id] = true
				continue
			}
			c := &claimState{gen: j.Gen, holder: j.Holder}
			if ok {
				c.gen, c.free = n.Gen, n.Kind == claimFree
			}
			r.claims[id] = c
		}
	}
	return drop, nil
}

func (r *Repo) replayPoints(body []byte, mark uint64, runOf map[SeriesID]string, gone map[string]bool) error {
	if len(body) < 4 {
		return nil
	}
	n := int(binary.LittleEndian.Uint32(body))
	body = body[4:]
	if len(body) < n*walPointLen {
		return fmt.Errorf("%w: WAL points record of %d bytes for %d points", ErrCorrupt, len(body), n)
	}
	u := func(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }
	b := r.buf
	for k := 0; k < n; k++ {
		p := body[k*walPointLen:]
		seq := u(p, 41)
		if seq <= mark {
			continue
		}
		sid := SeriesID(u(p, 0))
		runID, ok := runOf[sid]
		if !ok || gone[runID] {
			continue // its series is unknown (a deleted run's), or its run was taken over
		}
		if err := r.walClaimOf(runID); err != nil {
			return err
		}
		step, epoch, flags := int64(u(p, 8)), int64(u(p, 16)), p[24]
		ts, v := int64(u(p, 25)), math.Float64frombits(u(p, 33))
		e := b.delta(sid, runID)
		e.d.dirty = true
		e.d.add(step, v, ts, seq)
		b.pts.sid = append(b.pts.sid, uint64(sid))
		b.pts.step = append(b.pts.step, step)
		b.pts.epoch = append(b.pts.epoch, epoch)
		b.pts.hasEpoch = append(b.pts.hasEpoch, flags&1 != 0)
		b.pts.ts = append(b.pts.ts, ts)
		b.pts.val = append(b.pts.val, v)
		b.maxSeq = max(b.maxSeq, seq)
		r.lastSeq = max(r.lastSeq, seq)
		if err := r.walPendingPoint(sid, step, epoch, flags&1 != 0, ts, v, seq, true); err != nil {
			return err
		}
	}
	return nil
}

// SyncWAL writes the points still pending in the handle's WAL chunk to the
// WAL and syncs it (in the WAL's durability mode: an fsync unless the log
// was opened without syncing). When it returns, every write made through
// the handle before the call survives a crash of the process and is
// replayed by the next writable OpenRepo, even if it was never flushed to
// Lance. Without a WAL it does nothing.
func (r *Repo) SyncWAL() error {
	if r.opts.WAL == nil {
		return nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	err := r.walWritePending()
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return r.opts.WAL.Sync()
}
