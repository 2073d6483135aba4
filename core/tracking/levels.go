package tracking

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/core/internal/par"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/lancefile"
)

// The downsampled levels of sorted data files.
//
// A chart draws about a thousand points of a series that may hold
// millions, and ReadMany's downsampling (each bucket's extremes) must look
// at every point to choose them. So Optimize, which holds every point of
// the series it sorts, also stores the answer of a whole-series read at
// MaxPoints = levelPoints: the points kept and the buckets, for each series
// of at least levelMinPoints points, in the data file that holds the
// series' last row. A read asking for that answer then fetches a few
// kilobytes instead of decoding the series. Two more Lance global buffers
// (Lance readers ignore them):
//
//	buffer 2, after the pages: the levels, one after another
//	buffer 3, in the metadata (inside the tail read that opens the file):
//	  "kv0lvix1"                      8-byte magic and version
//	  u32 max points                  the MaxPoints the levels answer
//	  u32 count
//	  count × (u64 series_id, u64 points of the whole series, i64 first
//	          step, i64 last step, u64 offset in buffer 2, u32 length,
//	          u32 zero)                ascending series_id
//	  u64 xxh3-64 of everything before it
//
// A level, little-endian: u64 series_id, uvarint points kept, uvarint
// buckets; the kept points' steps, timestamps (µs) and epochs, each as
// zig-zag varint differences from the one before (from 0 for the first);
// their values as 8-byte floats; for each bucket the zig-zag difference of
// its first step from the previous bucket's last (from 0), its last step
// minus its first, its points and its non-finite points as uvarints; then
// the xxh3-64 of everything before it.
//
// A level answers a read only while it describes the series exactly: no
// step or time range (or a step range holding every step), MaxPoints equal
// to the level's, every sorted fragment that may hold the series indexed
// and without deletions, their rows of the series adding up to the level's
// count, and no unsorted fragment holding a point of it. Otherwise the read
// decodes the points as before (readSegments).
const (
	lvlIndexMagic      = "kv0lvix1"
	lvlIndexEntry      = 48
	levelDataBufferID  = 2
	levelIndexBufferID = 3
)

// levelPoints is the MaxPoints the stored levels answer: the dashboard's
// and the HTTP API's default. levelMinPoints is the smallest series that
// gets a level (below it the level's bytes would approach the series'
// own). Variables so tests can use small series.
var (
	levelPoints    = 1000
	levelMinPoints = 8000
)

// levelEntry locates one series' level in a data file.
type levelEntry struct {
	sid             uint64
	points          uint64
	firstStep, last int64
	off             uint64
	length          uint32
}

// levelIndex is the decoded buffer 3 of a data file.
type levelIndex struct {
	maxPoints int
	entries   []levelEntry
}

func (x *levelIndex) find(sid uint64) (levelEntry, bool) {
	if x == nil {
		return levelEntry{}, false
	}
	k := sort.Search(len(x.entries), func(k int) bool { return x.entries[k].sid >= sid })
	if k < len(x.entries) && x.entries[k].sid == sid {
		return x.entries[k], true
	}
	return levelEntry{}, false
}

// appendZigzag appends v as a zig-zag varint.
func appendZigzag(b []byte, v int64) []byte {
	return binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
}

// encodeLevel returns the level of series sid: m, a whole-series read of it
// downsampled to levelPoints.
func encodeLevel(sid uint64, m MetricData) []byte {
	n := len(m.Steps)
	out := make([]byte, 0, 8+20+n*14+len(m.Buckets)*6+8)
	out = binary.LittleEndian.AppendUint64(out, sid)
	out = binary.AppendUvarint(out, uint64(n))
	out = binary.AppendUvarint(out, uint64(len(m.Buckets)))
	var prev int64
	for _, s := range m.Steps {
		out = appendZigzag(out, s-prev) // wraps like the decoder's sum
		prev = s
	}
	prev = 0
	for _, t := range m.Timestamps {
		us := t.UnixMicro()
		out = appendZigzag(out, us-prev)
		prev = us
	}
	prev = 0
	for _, e := range m.Epochs {
		out = appendZigzag(out, e-prev)
		prev = e
	}
	for _, v := range m.Values {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
	}
	prev = 0
	for _, b := range m.Buckets {
		out = appendZigzag(out, b.FirstStep-prev)
		out = binary.AppendUvarint(out, uint64(b.LastStep-b.FirstStep))
		out = binary.AppendUvarint(out, uint64(b.Points))
		out = binary.AppendUvarint(out, uint64(b.NonFinite))
		prev = b.LastStep
	}
	return binary.LittleEndian.AppendUint64(out, xxh3.Hash(out))
}

// levelReader walks a level's varints, remembering the first problem.
type levelReader struct {
	b   []byte
	err error
}

func (r *levelReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = fmt.Errorf("truncated varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *levelReader) zigzag() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

// decodeLevel parses the level of e; maxPoints is the index's.
func decodeLevel(b []byte, e levelEntry, maxPoints int) (MetricData, error) {
	bad := func(format string, args ...any) (MetricData, error) {
		return MetricData{}, fmt.Errorf("%w: level of series %d: "+format, append([]any{ErrCorrupt, e.sid}, args...)...)
	}
	if len(b) < 8+2+8 {
		return bad("%d bytes", len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxh3.Hash(body) != sum {
		return bad("checksum mismatch")
	}
	if sid := binary.LittleEndian.Uint64(body); sid != e.sid {
		return bad("holds series %d", sid)
	}
	r := levelReader{b: body[8:]}
	n, nb := r.uvarint(), r.uvarint()
	if r.err != nil || n < 2 || n > uint64(maxPoints) || nb > uint64(maxPoints) || n > uint64(len(r.b)) {
		return bad("%d points and %d buckets", n, nb)
	}
	ints := make([]int64, 2*n)
	m := MetricData{SeriesID: SeriesID(e.sid), Steps: ints[:n:n], Epochs: ints[n:], Timestamps: make([]time.Time, n),
		Values: make([]float64, n), Buckets: make([]Bucket, nb)}
	var acc int64
	for i := range m.Steps {
		acc += r.zigzag()
		m.Steps[i] = acc
		if i > 0 && acc <= m.Steps[i-1] {
			return bad("steps out of order at point %d", i)
		}
	}
	acc = 0
	for i := range m.Timestamps {
		acc += r.zigzag()
		m.Timestamps[i] = time.UnixMicro(acc).UTC()
	}
	acc = 0
	for i := range m.Epochs {
		acc += r.zigzag()
		m.Epochs[i] = acc
	}
	if r.err != nil || uint64(len(r.b)) < 8*n {
		return bad("points cut short")
	}
	for i := range m.Values {
		m.Values[i] = math.Float64frombits(binary.LittleEndian.Uint64(r.b[8*i:]))
	}
	r.b = r.b[8*n:]
	acc = 0
	total := uint64(0)
	for i := range m.Buckets {
		first := acc + r.zigzag()
		span, pts, nonFinite := r.uvarint(), r.uvarint(), r.uvarint()
		if r.err != nil || pts == 0 || nonFinite > pts || span > math.MaxInt64 {
			return bad("bucket %d", i)
		}
		m.Buckets[i] = Bucket{FirstStep: first, LastStep: first + int64(span), Points: int(pts), NonFinite: int(nonFinite)}
		total += pts
		acc = m.Buckets[i].LastStep
	}
	switch {
	case r.err != nil || len(r.b) != 0:
		return bad("%d bytes left over", len(r.b))
	case m.Steps[0] != e.firstStep || m.Steps[n-1] != e.last:
		return bad("steps %d..%d, the index says %d..%d", m.Steps[0], m.Steps[n-1], e.firstStep, e.last)
	case total+2 != e.points:
		return bad("buckets hold %d points of %d", total+2, e.points)
	}
	return m, nil
}

// encodeLevelIndex returns buffer 3 for the entries (ascending sid).
func encodeLevelIndex(maxPoints int, entries []levelEntry) []byte {
	out := make([]byte, 0, len(lvlIndexMagic)+8+lvlIndexEntry*len(entries)+8)
	out = append(out, lvlIndexMagic...)
	out = binary.LittleEndian.AppendUint32(out, uint32(maxPoints))
	out = binary.LittleEndian.AppendUint32(out, uint32(len(entries)))
	for _, e := range entries {
		out = binary.LittleEndian.AppendUint64(out, e.sid)
		out = binary.LittleEndian.AppendUint64(out, e.points)
		out = binary.LittleEndian.AppendUint64(out, uint64(e.firstStep))
		out = binary.LittleEndian.AppendUint64(out, uint64(e.last))
		out = binary.LittleEndian.AppendUint64(out, e.off)
		out = binary.LittleEndian.AppendUint32(out, e.length)
		out = binary.LittleEndian.AppendUint32(out, 0)
	}
	return binary.LittleEndian.AppendUint64(out, xxh3.Hash(out))
}

// decodeLevelIndex parses buffer 3 of a file. ok is false when b is not a
// level index (another writer's buffer, or none). Whether the entries lie
// inside buffer 2 is checked when they are read.
func decodeLevelIndex(b []byte) (x *levelIndex, ok bool, err error) {
	if len(b) < len(lvlIndexMagic) || string(b[:len(lvlIndexMagic)]) != lvlIndexMagic {
		return nil, false, nil
	}
	bad := func(format string, args ...any) (*levelIndex, bool, error) {
		return nil, true, fmt.Errorf("%w: level index: "+format, append([]any{ErrCorrupt}, args...)...)
	}
	hdr := len(lvlIndexMagic) + 8
	if len(b) < hdr+8 {
		return bad("%d bytes", len(b))
	}
	body, sum := b[:len(b)-8], binary.LittleEndian.Uint64(b[len(b)-8:])
	if xxh3.Hash(body) != sum {
		return bad("checksum mismatch")
	}
	mp := binary.LittleEndian.Uint32(body[len(lvlIndexMagic):])
	n := binary.LittleEndian.Uint32(body[len(lvlIndexMagic)+4:])
	if uint64(len(body)-hdr) != uint64(n)*lvlIndexEntry || mp < 4 || mp > 1<<20 {
		return bad("%d entries in %d bytes, max points %d", n, len(body)-hdr, mp)
	}
	x = &levelIndex{maxPoints: int(mp), entries: make([]levelEntry, n)}
	for i := range x.entries {
		p := body[hdr+i*lvlIndexEntry:]
		e := levelEntry{sid: binary.LittleEndian.Uint64(p), points: binary.LittleEndian.Uint64(p[8:]),
			firstStep: int64(binary.LittleEndian.Uint64(p[16:])), last: int64(binary.LittleEndian.Uint64(p[24:])),
			off: binary.LittleEndian.Uint64(p[32:]), length: binary.LittleEndian.Uint32(p[40:])}
		switch {
		case i > 0 && e.sid <= x.entries[i-1].sid:
			return bad("series ids out of order at entry %d", i)
		case e.points <= uint64(mp) || e.firstStep >= e.last:
			return bad("entry %d: %d points, steps %d..%d", i, e.points, e.firstStep, e.last)
		}
		x.entries[i] = e
	}
	return x, true, nil
}

// sortedColumns gathers rows [lo, hi) of the point columns of recs (rows
// counted over all of them) into one ordered segment.
type sortedColumns struct {
	recs  []arrow.RecordBatch
	start []uint64 // first row of each batch
}

func newSortedColumns(recs []arrow.RecordBatch) *sortedColumns {
	c := &sortedColumns{recs: recs, start: make([]uint64, len(recs)+1)}
	for i, rec := range recs {
		c.start[i+1] = c.start[i] + uint64(rec.NumRows())
	}
	return c
}

func (c *sortedColumns) segment(lo, hi uint64) (pointSeg, bool) {
	n := hi - lo
	p := pointSeg{step: make([]int64, 0, n), val: make([]float64, 0, n), ts64: make([]int64, 0, n), epv: make([]int64, 0, n)}
	b := sort.Search(len(c.recs), func(b int) bool { return c.start[b+1] > lo })
	for ; b < len(c.recs) && c.start[b] < hi; b++ {
		rec := c.recs[b]
		step, ep := col[*array.Int64](rec, "step"), col[*array.Int64](rec, "epoch")
		ts, val := col[*array.Timestamp](rec, "timestamp"), col[*array.Float64](rec, "value")
		if step == nil || ep == nil || ts == nil || val == nil {
			return pointSeg{}, false
		}
		i, j := int(max(lo, c.start[b])-c.start[b]), int(min(hi, c.start[b+1])-c.start[b])
		p.step = append(p.step, step.Int64Values()[i:j]...)
		p.val = append(p.val, val.Float64Values()[i:j]...)
		for k := i; k < j; k++ {
			p.ts64 = append(p.ts64, int64(ts.Value(k)))
			e := int64(NoEpoch)
			if ep.IsValid(k) {
				e = ep.Value(k)
			}
			p.epv = append(p.epv, e)
		}
	}
	return p, uint64(len(p.step)) == n
}

// levelBuffers returns the level buffers of the data file holding rows
// [first, first+rows) of a sorted write whose series ids are sids: the
// levels of the series whose last row it holds. Nil when there are none.
func levelBuffers(cols *sortedColumns, sids []uint64, first, rows uint64) []lance.FileBuffer {
	var data []byte
	var entries []levelEntry
	end := first + rows
	// The series whose last row is in the file: start at the first
	// series ending there.
	i := first
	for i > 0 && sids[i-1] == sids[first] {
		i--
	}
	for i < end {
		j := i + 1
		for j < uint64(len(sids)) && sids[j] == sids[i] {
			j++
		}
		if sid := sids[i]; sid != 0 && j <= end && j-i >= uint64(levelMinPoints) && j-i > uint64(levelPoints) {
			if seg, ok := cols.segment(i, j); ok && seg.ordered() {
				m := sampleSeries(SeriesID(sid), seg, ReadOptions{MaxPoints: levelPoints})
				b := encodeLevel(sid, m)
				entries = append(entries, levelEntry{sid: sid, points: j - i, firstStep: seg.step[0], last: seg.step[len(seg.step)-1],
					off: uint64(len(data)), length: uint32(len(b))})
				data = append(data, b...)
			}
		}
		i = j
	}
	if len(entries) == 0 {
		return nil
	}
	return []lance.FileBuffer{{Bytes: data, Far: true}, {Bytes: encodeLevelIndex(levelPoints, entries)}}
}

// fragLevels returns the level index of a sorted fragment's data file (nil
// when it has none), read once per handle: it lies in the file's tail.
func (r *Repo) fragLevels(ctx context.Context, d *lance.Dataset, f lance.Fragment) (*levelIndex, error) {
	k := fragKey(f)
	r.cacheMu.Lock()
	x, ok := r.levels[k]
	r.cacheMu.Unlock()
	if ok {
		return x, nil
	}
	b, err := d.DataFileBuffer(ctx, f.ID, levelIndexBufferID)
	if err != nil {
		return nil, err
	}
	if b != nil {
		var isIndex bool
		if x, isIndex, err = decodeLevelIndex(b); err != nil {
			return nil, fmt.Errorf("metrics fragment %d (%s): %w", f.ID, fragKey(f), err)
		}
		if !isIndex {
			x = nil
		}
	}
	r.cacheMu.Lock()
	r.levels[k] = x
	r.cacheMu.Unlock()
	return x, nil
}

// levelPlan is where the levels that answer a read are: their index
// entries by fragment, and the series they answer.
type levelPlan struct {
	byFrag map[uint64][]levelEntry
	ids    map[SeriesID]bool
}

// planLevels decides which series of ids a stored level answers exactly
// (see the top of this file). It reads the sorted files' tails (both
// indexes; cached by the handle) and, only when some level could answer,
// the unsorted fragments' series ids; not the levels themselves.
func (r *Repo) planLevels(ctx context.Context, d *lance.Dataset, ids []SeriesID, opts ReadOptions) (levelPlan, error) {
	var plan levelPlan
	if d == nil || opts.Time != nil || opts.MaxPoints != levelPoints {
		return plan, nil
	}
	want := make([]uint64, len(ids))
	for i, id := range ids {
		want[i] = uint64(id)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	p := planMetrics(d)
	holding := p.holding(want)
	if len(holding) == 0 {
		return plan, nil
	}
	type opened struct {
		rs  []sidRange
		lvl *levelIndex
	}
	files := make([]opened, len(holding))
	err := par.Do(ctx, len(holding), 8, func(ctx context.Context, i int) error {
		rs, err := r.fragRanges(ctx, d, holding[i])
		if err != nil || rs == nil {
			return err
		}
		lvl, err := r.fragLevels(ctx, d, holding[i])
		files[i] = opened{rs: rs, lvl: lvl}
		return err
	})
	if err != nil {
		return plan, err
	}
	// Which series a level describes as far as the sorted fragments tell,
	// and where it is.
	type candidate struct {
		e        levelEntry
		fragment uint64
	}
	cands := map[uint64]candidate{}
	for _, s := range want {
		var rows uint64
		var c candidate
		found, usable := 0, true
		for i, f := range holding {
			if !p.spans[f.ID].holdsAny([]uint64{s}) {
				continue
			}
			o := files[i]
			if o.rs == nil || f.DeletionFile != "" {
				usable = false
				break
			}
			k := sort.Search(len(o.rs), func(k int) bool { return o.rs[k].sid >= s })
			if k < len(o.rs) && o.rs[k].sid == s {
				rows += uint64(o.rs[k].hi - o.rs[k].lo)
			}
			if le, ok := o.lvl.find(s); ok && o.lvl.maxPoints == opts.MaxPoints {
				c, found = candidate{e: le, fragment: f.ID}, found+1
			}
		}
		if !usable || found != 1 || rows != c.e.points {
			continue
		}
		if st := opts.Steps; st != nil && (st.From > c.e.firstStep || st.To <= c.e.last) {
			continue
		}
		cands[s] = c
	}
	if len(cands) == 0 {
		return plan, nil
	}
	// A point of a candidate in an unsorted fragment makes its level stale.
	var mu sync.Mutex
	err = par.Do(ctx, len(p.scanned), 8, func(ctx context.Context, i int) error {
		return scanAll(ctx, d, lance.ScanOptions{Columns: []string{"series_id"}, Fragments: []uint64{p.scanned[i].ID}, BatchRows: 1 << 16}, func(rec arrow.RecordBatch) error {
			mu.Lock()
			defer mu.Unlock()
			for _, s := range rec.Column(0).(*array.Uint64).Uint64Values() {
				delete(cands, s)
			}
			return nil
		})
	})
	if err != nil {
		return plan, err
	}
	if len(cands) == 0 {
		return plan, nil
	}
	plan = levelPlan{byFrag: map[uint64][]levelEntry{}, ids: make(map[SeriesID]bool, len(cands))}
	for _, s := range want {
		if c, ok := cands[s]; ok {
			plan.byFrag[c.fragment] = append(plan.byFrag[c.fragment], c.e)
			plan.ids[SeriesID(s)] = true
		}
	}
	return plan, nil
}

// fetchLevels reads and decodes the levels of a plan.
func (r *Repo) fetchLevels(ctx context.Context, d *lance.Dataset, plan levelPlan, opts ReadOptions) (map[SeriesID]MetricData, error) {
	byFrag := plan.byFrag
	if len(byFrag) == 0 {
		return nil, nil
	}
	frags := make([]uint64, 0, len(byFrag))
	for f := range byFrag {
		frags = append(frags, f)
	}
	slices.Sort(frags)
	got := make([][]MetricData, len(frags))
	err := par.Do(ctx, len(frags), 8, func(ctx context.Context, i int) error {
		es := byFrag[frags[i]]
		parts := make([]lancefile.Part, len(es))
		for k, e := range es {
			parts[k] = lancefile.Part{Off: e.off, Len: uint64(e.length)}
		}
		bufs, err := d.DataFileBufferParts(ctx, frags[i], levelDataBufferID, parts)
		if err != nil {
			return err
		}
		if len(bufs) != len(es) {
			return fmt.Errorf("%w: metrics fragment %d: no levels buffer", ErrCorrupt, frags[i])
		}
		for k, e := range es {
			m, err := decodeLevel(bufs[k], e, opts.MaxPoints)
			if err != nil {
				return fmt.Errorf("metrics fragment %d: %w", frags[i], err)
			}
			got[i] = append(got[i], m)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[SeriesID]MetricData{}
	for _, l := range got {
		for _, m := range l {
			out[m.SeriesID] = m
		}
	}
	r.levelHits.Add(int64(len(out)))
	return out, nil
}

// clone returns a copy of m that shares no slices with it.
func (m MetricData) clone() MetricData {
	m.Steps, m.Epochs, m.Values = slices.Clone(m.Steps), slices.Clone(m.Epochs), slices.Clone(m.Values)
	m.Timestamps, m.Buckets = slices.Clone(m.Timestamps), slices.Clone(m.Buckets)
	return m
}
