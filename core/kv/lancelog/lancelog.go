// Package lancelog binds the key-value layer (package kv) to a Lance
// dataset: it implements kv.OpLog over package lance, on any store.Store.
//
// The dataset is the operation log, one row per operation, in Lance 2.1
// data files that lance 8 (lancedb) opens and scans:
//
//	column  arrow type  nullable  meaning
//	seq     uint64      no        hybrid logical clock; newest wins
//	op      uint8       no        0 put, 1 delete, 2 delete range, 3 WAL mark
//	key     binary      no        key | range start | writer id
//	value   binary      yes       value | range end | mark | null (delete)
//
// Commits map onto Lance transactions:
//
//	kv.OpLog call        Lance transaction
//	Append               Append (one fragment); concurrent appends rebase
//	Materialize          one Update: removes the fragments read, adds the live rows
//	CompactFiles         ReserveFragments + Rewrite (lance.Dataset.Compact)
//	CleanupOldVersions   file and manifest removal (lance.CleanupOldVersions)
//
// A row address is the Lance one: fragment id << 32 | offset in the
// fragment. The log never writes deletion files; a fragment that another
// tool gave one cannot be scanned with addresses and is reported (compact
// it, e.g. with lancedb's optimize, to continue).
//
// New datasets get Lance's automatic cleanup configuration
// (lance.auto_cleanup.interval = 20, older_than = Options.VersionRetention),
// which core/lance (like lance itself) applies after its commits.
package lancelog

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// Defaults of the Options fields.
const (
	// DefaultVersionRetention is how old a version must be before automatic
	// cleanup removes it (7 days).
	DefaultVersionRetention = 7 * 24 * time.Hour
	// DefaultCleanupInterval is the commit interval of automatic cleanup:
	// after every commit whose version is a multiple of it.
	DefaultCleanupInterval = 20
	// DefaultScanBatchRows is the batch size of ScanFragments.
	DefaultScanBatchRows = 8192
	// DefaultMaterializeRowsPerFile bounds the fragments Materialize writes
	// (each data file is built in memory before it is stored).
	DefaultMaterializeRowsPerFile = 256 << 10
)

// Options configure Open. The zero value opens an existing dataset or, with
// Create, makes one with the defaults above.
type Options struct {
	// Create makes the dataset (empty, with the automatic cleanup
	// configuration) when there is none at the root.
	Create bool
	// VersionRetention is the lance.auto_cleanup.older_than of a created
	// dataset (default 7 days).
	VersionRetention time.Duration
	// CleanupInterval is the lance.auto_cleanup.interval of a created
	// dataset (default 20; negative: no automatic cleanup).
	CleanupInterval int
	// ScanBatchRows is the batch size of ScanFragments (default 8192).
	ScanBatchRows int
	// MaterializeRowsPerFile bounds the rows of each fragment Materialize
	// writes (default 256 Ki).
	MaterializeRowsPerFile int
	// DataFormat is the format of the data files of a dataset the log
	// creates: lance.DataFormat21 (read by lance 8 and older) or
	// lance.DataFormat22; empty means lance.DefaultDataFormat. A dataset
	// keeps its format: Open with Create fails with lance.ErrDataFormat
	// when the dataset has another one than a format asked for.
	DataFormat string
	// Commit tunes Lance's commit retries.
	Commit lance.CommitOptions
	// Warn, when set, receives what listings of the dataset's manifests
	// ignored: manifest names of the other naming scheme (see
	// lance.ErrMixedNaming). Nil ignores them silently.
	Warn func(error)
}

// ErrDeletedRows means a fragment of the log has a Lance deletion file,
// which this package never writes, so its rows' addresses are unknown. The
// error names the fragment. Compacting the dataset (lancedb optimize, or
// `kv0 lance compact`) removes the deletion file. Match with errors.Is.
var ErrDeletedRows = errors.New("lancelog: fragment with deleted rows")

// Schema returns the Arrow schema of the operation log.
func Schema() *arrow.Schema { return schema }

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "seq", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "op", Type: arrow.PrimitiveTypes.Uint8},
	{Name: "key", Type: arrow.BinaryTypes.Binary},
	{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

// Log is a kv.OpLog on the Lance dataset at one root of a store. It is safe
// for concurrent use, also by several processes sharing the store.
type Log struct {
	st   store.Store
	root string
	opts Options

	mu       sync.Mutex
	versions map[uint64]*lance.Dataset // recently opened versions
	order    []uint64                  // for eviction, oldest first
	latest   *lance.Dataset
}

var _ kv.OpLog = (*Log)(nil)

// Open returns the log stored under root of st. Without Options.Create a
// missing dataset is not an error: Latest reports 0 until someone commits,
// and the first Append creates it.
func Open(ctx context.Context, st store.Store, root string, opts Options) (*Log, error) {
	if opts.VersionRetention <= 0 {
		opts.VersionRetention = DefaultVersionRetention
	}
	if opts.CleanupInterval == 0 {
		opts.CleanupInterval = DefaultCleanupInterval
	}
	if opts.ScanBatchRows <= 0 {
		opts.ScanBatchRows = DefaultScanBatchRows
	}
	if opts.MaterializeRowsPerFile <= 0 {
		opts.MaterializeRowsPerFile = DefaultMaterializeRowsPerFile
	}
	if err := lance.CheckDataFormat(opts.DataFormat); err != nil {
		return nil, err
	}
	l := &Log{st: st, root: root, opts: opts, versions: map[uint64]*lance.Dataset{}}
	if opts.Create {
		v, err := l.Latest(ctx)
		if err != nil {
			return nil, err
		}
		if v == 0 {
			if _, _, err := l.create(ctx, nil); err != nil {
				return nil, err
			}
		} else if opts.DataFormat != "" {
			d, err := l.dataset(ctx, v)
			if err != nil {
				return nil, mapErr("open", err)
			}
			if f := d.DataFormat(); f != opts.DataFormat {
				return nil, fmt.Errorf("%w: the database stores data files in format %s, not %s (a format is chosen when a database is created)",
					lance.ErrDataFormat, f, opts.DataFormat)
			}
		}
	}
	return l, nil
}

// Store returns the store the log lives in.
func (l *Log) Store() store.Store { return l.st }

// Root returns the dataset root inside the store.
func (l *Log) Root() string { return l.root }

// create makes the dataset with rows as version 1 (nil: empty) and sets the
// cleanup configuration. It returns version 1 and the newest version it
// committed, or nil with no error when another writer created the dataset
// first.
func (l *Log) create(ctx context.Context, rows []kv.Row) (*lance.Dataset, uint64, error) {
	rr := &sliceRows{rows: rows}
	defer rr.release()
	d, err := lance.Create(ctx, l.st, l.root, schema, rr, lance.WriteOptions{MaxRowsPerFile: max(len(rows), 1), Commit: l.opts.Commit,
		DataFormat: l.opts.DataFormat})
	if errors.Is(err, lance.ErrExists) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, mapErr("create", err)
	}
	l.remember(d)
	if l.opts.CleanupInterval <= 0 {
		return d, d.Version(), nil
	}
	cfg := map[string]string{
		lance.ConfigAutoCleanupInterval:  strconv.Itoa(l.opts.CleanupInterval),
		lance.ConfigAutoCleanupOlderThan: formatDuration(l.opts.VersionRetention),
	}
	cd, err := d.UpdateConfig(ctx, cfg, nil)
	if err != nil {
		// The dataset is still correct without automatic cleanup; report
		// the failure so the caller knows.
		return d, d.Version(), mapErr("configure cleanup", err)
	}
	l.remember(cd)
	return d, cd.Version(), nil
}

// formatDuration writes d in a form lance.ParseDuration and lance 8 read:
// whole days as "7d", else seconds as "90s".
func formatDuration(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return strconv.FormatInt(max(1, int64(d/time.Second)), 10) + "s"
}

// remember caches an opened version and tracks the newest one.
func (l *Log) remember(d *lance.Dataset) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := d.Version()
	if l.latest == nil || v > l.latest.Version() {
		l.latest = d
	}
	if _, ok := l.versions[v]; ok {
		return
	}
	l.versions[v] = d
	l.order = append(l.order, v)
	if len(l.order) > 16 {
		delete(l.versions, l.order[0])
		l.order = l.order[1:]
	}
}

// dataset opens version v (cached).
func (l *Log) dataset(ctx context.Context, v uint64) (*lance.Dataset, error) {
	l.mu.Lock()
	d := l.versions[v]
	l.mu.Unlock()
	if d != nil {
		return d, nil
	}
	d, err := lance.Open(ctx, l.st, l.root, lance.OpenOptions{Version: v})
	if err != nil {
		return nil, err
	}
	l.remember(d)
	return d, nil
}

// head opens the latest version, or returns nil when there is no dataset.
func (l *Log) head(ctx context.Context) (*lance.Dataset, error) {
	d, err := lance.Open(ctx, l.st, l.root, lance.OpenOptions{Warn: l.opts.Warn})
	if errors.Is(err, lance.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	l.remember(d)
	return d, nil
}

// Latest implements kv.OpLog.
func (l *Log) Latest(ctx context.Context) (uint64, error) {
	v, err := lance.LatestVersion(ctx, l.st, l.root, lance.ListOptions{Warn: l.opts.Warn})
	if errors.Is(err, lance.ErrNotFound) {
		return 0, nil
	}
	return v, mapErr("latest version", err)
}

// Fragments implements kv.OpLog.
func (l *Log) Fragments(ctx context.Context, version uint64) ([]kv.FragmentInfo, error) {
	d, err := l.dataset(ctx, version)
	if err != nil {
		return nil, mapErr("fragments", err)
	}
	frags := d.Fragments()
	out := make([]kv.FragmentInfo, len(frags))
	for i := range frags {
		out[i] = fragInfo(&frags[i])
	}
	return out, nil
}

func fragInfo(f *lance.Fragment) kv.FragmentInfo {
	fi := kv.FragmentInfo{ID: f.ID, Rows: f.PhysicalRows, DeletionFile: f.DeletionFile}
	if len(f.Files) > 0 {
		fi.DataFile = f.Files[0].Path
	}
	return fi
}

// binaryColumn is what Binary and LargeBinary arrays have in common.
type binaryColumn interface {
	Value(i int) []byte
	IsNull(i int) bool
}

// ScanFragments implements kv.OpLog. Fragments are scanned one at a time so
// each row's address is its fragment id and physical offset.
func (l *Log) ScanFragments(ctx context.Context, version uint64, fragments []uint64, fn func(batch []kv.Row) error) error {
	d, err := l.dataset(ctx, version)
	if err != nil {
		return mapErr("scan", err)
	}
	all := d.Fragments()
	want := map[uint64]bool{}
	for _, id := range fragments {
		want[id] = true
	}
	var rows []kv.Row
	for i := range all {
		f := &all[i]
		if fragments != nil && !want[f.ID] {
			continue
		}
		delete(want, f.ID)
		if f.DeletionFile != "" {
			return fmt.Errorf("%w: fragment %d of version %d of %q has %s", ErrDeletedRows, f.ID, version, l.root, f.DeletionFile)
		}
		s, err := d.Scan(ctx, lance.ScanOptions{Fragments: []uint64{f.ID}, BatchRows: l.opts.ScanBatchRows, Columns: []string{"seq", "op", "key", "value"}})
		if err != nil {
			return mapErr("scan", err)
		}
		off := uint64(0)
		for s.Next() {
			rec := s.Record()
			n := int(rec.NumRows())
			seqs, ok1 := rec.Column(0).(*array.Uint64)
			ops, ok2 := rec.Column(1).(*array.Uint8)
			keys, ok3 := rec.Column(2).(binaryColumn)
			vals, ok4 := rec.Column(3).(binaryColumn)
			if !ok1 || !ok2 || !ok3 || !ok4 {
				s.Close()
				return &kv.CorruptionError{File: l.root, Offset: -1, Reason: "the dataset does not have the operation-log schema: " + rec.Schema().String()}
			}
			rows = rows[:0]
			for j := 0; j < n; j++ {
				r := kv.Row{Seq: seqs.Value(j), Op: kv.Op(ops.Value(j)), Key: keys.Value(j), Addr: f.ID<<32 | (off + uint64(j))}
				if !vals.IsNull(j) {
					r.Value = vals.Value(j)
					if r.Value == nil {
						r.Value = []byte{}
					}
				}
				rows = append(rows, r)
			}
			off += uint64(n)
			if err := fn(rows); err != nil {
				s.Close()
				return err
			}
		}
		err = s.Err()
		s.Close()
		if err != nil {
			return mapErr("scan", err)
		}
		if off != f.PhysicalRows {
			return &kv.CorruptionError{File: fragInfo(f).DataFile, Offset: -1, Reason: fmt.Sprintf("fragment %d: scanned %d rows of %d", f.ID, off, f.PhysicalRows)}
		}
	}
	for id := range want {
		return mapErr("scan", fmt.Errorf("%w: fragment %d in version %d", store.ErrNotFound, id, version))
	}
	return nil
}

// Take implements kv.OpLog.
func (l *Log) Take(ctx context.Context, version uint64, addrs []uint64) ([][]byte, error) {
	d, err := l.dataset(ctx, version)
	if err != nil {
		return nil, mapErr("take", err)
	}
	return take(ctx, d, addrs)
}

func take(ctx context.Context, d *lance.Dataset, addrs []uint64) ([][]byte, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	rec, err := d.Take(ctx, addrs, []string{"value"})
	if err != nil {
		return nil, mapErr("take", err)
	}
	defer rec.Release()
	col, ok := rec.Column(0).(binaryColumn)
	if !ok || int(rec.NumRows()) != len(addrs) {
		return nil, &kv.CorruptionError{File: d.Root(), Offset: -1, Reason: "take returned an unexpected value column"}
	}
	out := make([][]byte, len(addrs))
	for i := range out {
		if !col.IsNull(i) {
			out[i] = append(make([]byte, 0, len(col.Value(i))), col.Value(i)...)
		}
	}
	return out, nil
}

// appendBatchRows is the number of rows in each record batch an append
// hands to the Lance writer: enough for it to encode the columns side by
// side, small enough that the Arrow copy of a large commit is never in
// memory whole.
const appendBatchRows = 16 << 10

// sliceRows is a lance.RecordReader over rows, appendBatchRows at a time.
type sliceRows struct {
	rows []kv.Row
	rec  arrow.RecordBatch
}

func (r *sliceRows) Next() bool {
	r.release()
	if len(r.rows) == 0 {
		return false
	}
	n := min(len(r.rows), appendBatchRows)
	r.rec = buildRecord(r.rows[:n])
	r.rows = r.rows[n:]
	return true
}

func (r *sliceRows) RecordBatch() arrow.RecordBatch { return r.rec }
func (r *sliceRows) Err() error                     { return nil }

func (r *sliceRows) release() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

// buildRecord turns rows into one record batch.
func buildRecord(rows []kv.Row) arrow.RecordBatch {
	b := newBuilder(len(rows))
	defer b.release()
	kb, vb := 0, 0
	for i := range rows {
		kb += len(rows[i].Key)
		vb += len(rows[i].Value)
	}
	b.key.ReserveData(kb)
	b.val.ReserveData(vb)
	for i := range rows {
		b.add(&rows[i], rows[i].Value)
	}
	return b.finish()
}

type recBuilder struct {
	seq *array.Uint64Builder
	op  *array.Uint8Builder
	key *array.BinaryBuilder
	val *array.BinaryBuilder
}

func newBuilder(n int) *recBuilder {
	m := memory.DefaultAllocator
	b := &recBuilder{
		seq: array.NewUint64Builder(m),
		op:  array.NewUint8Builder(m),
		key: array.NewBinaryBuilder(m, arrow.BinaryTypes.Binary),
		val: array.NewBinaryBuilder(m, arrow.BinaryTypes.Binary),
	}
	b.seq.Reserve(n)
	b.op.Reserve(n)
	b.key.Reserve(n)
	b.val.Reserve(n)
	return b
}

func (b *recBuilder) add(r *kv.Row, value []byte) {
	b.seq.UnsafeAppend(r.Seq)
	b.op.UnsafeAppend(uint8(r.Op))
	b.key.Append(r.Key)
	if value == nil && r.Op == kv.OpDelete {
		b.val.AppendNull()
	} else {
		b.val.Append(value)
	}
}

func (b *recBuilder) finish() arrow.RecordBatch {
	cols := []arrow.Array{b.seq.NewArray(), b.op.NewArray(), b.key.NewArray(), b.val.NewArray()}
	rec := array.NewRecordBatch(schema, cols, int64(cols[0].Len()))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

func (b *recBuilder) release() {
	b.seq.Release()
	b.op.Release()
	b.key.Release()
	b.val.Release()
}

// Append implements kv.OpLog: one fragment, one Append commit, rebased over
// concurrent commits by Lance's retry loop.
func (l *Log) Append(ctx context.Context, rows []kv.Row) (kv.CommitResult, error) {
	if len(rows) == 0 {
		return kv.CommitResult{}, errors.New("lancelog: append of no rows")
	}
	d, err := l.head(ctx)
	if err != nil {
		return kv.CommitResult{}, mapErr("append", err)
	}
	if d == nil {
		first, last, err := l.create(ctx, rows)
		if first != nil {
			// The rows are committed; a failure to configure cleanup
			// must not make the caller commit them again.
			res, rerr := tailResult(first, len(rows), nil)
			res.Version = last
			return res, rerr
		}
		if err != nil {
			return kv.CommitResult{}, err
		}
		// Someone else created it: append on top.
		if d, err = l.head(ctx); err != nil || d == nil {
			return kv.CommitResult{}, mapErr("append", errors.Join(err, errors.New("dataset vanished after creation")))
		}
	}
	rr := &sliceRows{rows: rows}
	defer rr.release()
	nd, err := d.Append(ctx, rr, lance.WriteOptions{MaxRowsPerFile: len(rows), Commit: l.opts.Commit})
	if err != nil {
		return kv.CommitResult{}, mapErr("append", err)
	}
	l.remember(nd)
	res, err := tailResult(nd, len(rows), nil)
	if err != nil {
		return res, err
	}
	return res, nil
}

// tailResult describes a commit whose new fragments hold n rows: Lance puts
// the new fragments of an Append or Update after every other fragment, so
// they are the shortest tail of d's fragments holding n rows.
func tailResult(d *lance.Dataset, n int, removed []uint64) (kv.CommitResult, error) {
	res := kv.CommitResult{Version: d.Version(), Removed: removed}
	frags := d.Fragments()
	i := len(frags)
	var sum uint64
	for sum < uint64(n) && i > 0 {
		i--
		sum += frags[i].PhysicalRows
	}
	if sum != uint64(n) {
		return res, &kv.CorruptionError{File: d.ManifestKey(), Offset: -1, Reason: fmt.Sprintf("the committed fragments do not end with the %d rows written", n)}
	}
	res.Addrs = make([]uint64, 0, n)
	for _, f := range frags[i:] {
		res.Added = append(res.Added, fragInfo(&f))
		for off := uint64(0); off < f.PhysicalRows; off++ {
			res.Addrs = append(res.Addrs, f.ID<<32|off)
		}
	}
	return res, nil
}

// Materialize implements kv.OpLog: one Update commit built on readVersion
// that removes the fragments in remove and adds the rows as new fragments.
// Rows are written as they are pulled from the sequence, in chunks; the
// values of lazy rows are read at readVersion a chunk at a time.
func (l *Log) Materialize(ctx context.Context, readVersion uint64, rows func(yield func(kv.Row) bool), remove []uint64) (kv.CommitResult, error) {
	d, err := l.dataset(ctx, readVersion)
	if err != nil {
		if errors.Is(err, lance.ErrNotFound) {
			return kv.CommitResult{}, fmt.Errorf("%w: version %d is gone: %w", kv.ErrConflict, readVersion, mapErr("materialize", err))
		}
		return kv.CommitResult{}, mapErr("materialize", err)
	}
	for _, id := range remove {
		found := false
		for _, f := range d.Fragments() {
			if f.ID == id {
				found = true
				break
			}
		}
		if !found {
			return kv.CommitResult{}, fmt.Errorf("%w: fragment %d is not in version %d", kv.ErrConflict, id, readVersion)
		}
	}
	next, stop := iter.Pull(iter.Seq[kv.Row](rows))
	defer stop()
	src := &rowReader{ctx: ctx, d: d, next: next, chunk: 4096}
	defer src.release()
	nd, err := d.Update(ctx, lance.UpdateRequest{RemoveFragments: remove, New: src},
		lance.WriteOptions{MaxRowsPerFile: l.opts.MaterializeRowsPerFile, Commit: l.opts.Commit})
	if err == nil {
		err = src.err
	}
	if err != nil {
		var ce *lance.ConflictError
		var re *lance.RowAddressError
		if errors.As(err, &ce) || errors.As(err, &re) {
			return kv.CommitResult{}, fmt.Errorf("%w: %w", kv.ErrConflict, err)
		}
		return kv.CommitResult{}, mapErr("materialize", err)
	}
	if nd.Version() == d.Version() {
		// Nothing to commit: no rows and nothing to remove.
		return kv.CommitResult{Version: d.Version()}, nil
	}
	l.remember(nd)
	res, err := tailResult(nd, src.rows, remove)
	if err != nil {
		return res, err
	}
	return res, nil
}

// rowReader is the lance.RecordReader Materialize streams: chunks of rows
// pulled from the caller's sequence, lazy values filled by Take.
type rowReader struct {
	ctx   context.Context
	d     *lance.Dataset
	next  func() (kv.Row, bool)
	chunk int
	rows  int
	rec   arrow.RecordBatch
	err   error

	buf   []kv.Row
	arena []byte
}

func (r *rowReader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.err != nil {
		return false
	}
	r.buf, r.arena = r.buf[:0], r.arena[:0]
	var lazy []int
	var addrs []uint64
	bytes := 0
	for len(r.buf) < r.chunk && bytes < 8<<20 {
		row, ok := r.next()
		if !ok {
			break
		}
		// The row's slices are only valid during the pull: copy them.
		ks := len(r.arena)
		r.arena = append(r.arena, row.Key...)
		vs := len(r.arena)
		r.arena = append(r.arena, row.Value...)
		row.Key = r.arena[ks:vs:vs]
		if row.Value != nil {
			row.Value = r.arena[vs:len(r.arena):len(r.arena)]
		}
		bytes += len(row.Key) + len(row.Value) + int(row.ValueLen)
		if row.Lazy {
			lazy = append(lazy, len(r.buf))
			addrs = append(addrs, row.Addr)
		}
		r.buf = append(r.buf, row)
	}
	if len(r.buf) == 0 {
		return false
	}
	// Fix up the aliases: appends may have moved the arena.
	r.rebase()
	vals, err := take(r.ctx, r.d, addrs)
	if err != nil {
		r.err = err
		return false
	}
	b := newBuilder(len(r.buf))
	defer b.release()
	li := 0
	for i := range r.buf {
		row := &r.buf[i]
		v := row.Value
		if li < len(lazy) && lazy[li] == i {
			v = vals[li]
			if uint32(len(v)) != row.ValueLen {
				r.err = &kv.CorruptionError{File: fmt.Sprintf("row %#x at version %d", row.Addr, r.d.Version()), Offset: -1, Reason: "value length differs from the one scanned"}
				return false
			}
			if v == nil {
				v = []byte{}
			}
			li++
		}
		b.add(row, v)
	}
	r.rows += len(r.buf)
	r.rec = b.finish()
	return true
}

// rebase recomputes the Key and Value slices of buf against the final
// arena: each row's key and value were appended to it in order.
func (r *rowReader) rebase() {
	off := 0
	for i := range r.buf {
		row := &r.buf[i]
		k, v := len(row.Key), len(row.Value)
		row.Key = r.arena[off : off+k : off+k]
		off += k
		if row.Value != nil {
			row.Value = r.arena[off : off+v : off+v]
		}
		off += v
	}
}

func (r *rowReader) RecordBatch() arrow.RecordBatch { return r.rec }
func (r *rowReader) Err() error                     { return r.err }

func (r *rowReader) release() {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

// CompactFiles implements kv.OpLog with Lance's file compaction.
func (l *Log) CompactFiles(ctx context.Context) (kv.CommitResult, error) {
	d, err := l.head(ctx)
	if err != nil || d == nil {
		return kv.CommitResult{}, mapErr("compact", err)
	}
	nd, _, err := d.Compact(ctx, lance.CompactOptions{Commit: l.opts.Commit})
	if err != nil {
		var ce *lance.ConflictError
		if errors.As(err, &ce) {
			return kv.CommitResult{}, fmt.Errorf("%w: %w", kv.ErrConflict, err)
		}
		return kv.CommitResult{}, mapErr("compact", err)
	}
	if nd.Version() == d.Version() {
		return kv.CommitResult{}, nil
	}
	l.remember(nd)
	before := map[uint64]bool{}
	for _, f := range d.Fragments() {
		before[f.ID] = true
	}
	res := kv.CommitResult{Version: nd.Version()}
	after := nd.Fragments()
	for i := range after {
		if before[after[i].ID] {
			delete(before, after[i].ID)
			continue
		}
		res.Added = append(res.Added, fragInfo(&after[i]))
	}
	for id := range before {
		res.Removed = append(res.Removed, id)
	}
	return res, nil
}

// Versions implements kv.OpLog.
func (l *Log) Versions(ctx context.Context) ([]kv.VersionInfo, error) {
	vs, err := lance.Log(ctx, l.st, l.root, lance.ListOptions{Warn: l.opts.Warn})
	if errors.Is(err, lance.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr("versions", err)
	}
	out := make([]kv.VersionInfo, len(vs))
	for i, v := range vs {
		out[i] = kv.VersionInfo{Version: v.Version, Timestamp: v.Timestamp}
	}
	return out, nil
}

// CleanupOldVersions implements kv.OpLog. Tagged versions stay.
func (l *Log) CleanupOldVersions(ctx context.Context, olderThan time.Duration) (int, error) {
	st, err := lance.CleanupOldVersions(ctx, l.st, l.root, olderThan, lance.CleanupOptions{Warn: l.opts.Warn})
	if errors.Is(err, lance.ErrNotFound) {
		return 0, nil
	}
	l.mu.Lock()
	l.versions, l.order = map[uint64]*lance.Dataset{}, nil
	l.mu.Unlock()
	return st.VersionsRemoved, mapErr("cleanup", err)
}

// Tags implements kv.TaggedLog: the dataset's tags.
func (l *Log) Tags(ctx context.Context) ([]kv.Tag, error) {
	ts, err := lance.ListTags(ctx, l.st, l.root)
	if errors.Is(err, lance.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, mapErr("tags", err)
	}
	out := make([]kv.Tag, len(ts))
	for i, t := range ts {
		out[i] = kv.Tag{Name: t.Name, Version: t.Version}
	}
	return out, nil
}

// CreateTag names version (tests and tools; not part of kv.OpLog).
func (l *Log) CreateTag(ctx context.Context, name string, version uint64) error {
	d, err := l.head(ctx)
	if err != nil || d == nil {
		return mapErr("tag", errors.Join(err, store.ErrNotFound))
	}
	return mapErr("tag", d.CreateTag(ctx, name, version))
}

// DeleteTag implements kv.TaggedLog.
func (l *Log) DeleteTag(ctx context.Context, name string) error {
	d, err := l.head(ctx)
	if err != nil || d == nil {
		return mapErr("delete tag", errors.Join(err, store.ErrNotFound))
	}
	return mapErr("delete tag", d.DeleteTag(ctx, name))
}

var _ kv.TaggedLog = (*Log)(nil)

// opError is an error of the binding. Besides the cause it matches
// store.ErrNotFound when Lance reports a missing version or file, and
// kv.ErrCorruption (as a *kv.CorruptionError) when Lance reports corrupt
// files, as kv.OpLog requires.
type opError struct {
	op    string
	err   error
	extra error
}

func (e *opError) Error() string   { return "lancelog: " + e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() []error { return []error{e.err, e.extra} }

func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var oe *opError
	if errors.As(err, &oe) {
		return err
	}
	switch {
	case errors.Is(err, kv.ErrCorruption) || errors.Is(err, kv.ErrConflict):
		return err
	case errors.Is(err, lance.ErrCorrupt) || errors.Is(err, lancefile.ErrCorrupt):
		file := ""
		var fe *lancefile.FormatError
		if errors.As(err, &fe) {
			file = fe.File
		}
		return &opError{op: op, err: err, extra: &kv.CorruptionError{File: file, Offset: -1, Reason: err.Error()}}
	case errors.Is(err, lance.ErrNotFound) && !errors.Is(err, store.ErrNotFound):
		return &opError{op: op, err: err, extra: store.ErrNotFound}
	case errors.Is(err, lance.ErrInvalidRowAddress):
		// A row the caller expects is gone: a compaction or cleanup by
		// another writer moved it.
		return &opError{op: op, err: err, extra: store.ErrNotFound}
	}
	return &opError{op: op, err: err}
}
