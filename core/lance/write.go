package lance

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// RecordReader is a stream of record batches, as arrow-go's
// array.RecordReader and ipc.Reader provide. A batch returned by
// RecordBatch is used before the next call to Next and not retained.
type RecordReader interface {
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}

// Batches returns a RecordReader over recs.
func Batches(recs ...arrow.RecordBatch) RecordReader { return &sliceReader{recs: recs, i: -1} }

type sliceReader struct {
	recs []arrow.RecordBatch
	i    int
}

func (r *sliceReader) Next() bool                     { r.i++; return r.i < len(r.recs) }
func (r *sliceReader) RecordBatch() arrow.RecordBatch { return r.recs[r.i] }
func (r *sliceReader) Err() error                     { return nil }

// WriteOptions tune Create, Overwrite, Append and Update. The zero value
// uses the defaults.
type WriteOptions struct {
	// MaxRowsPerFile bounds the rows of each data file, hence of each new
	// fragment (default 1Mi, as Lance).
	MaxRowsPerFile int
	// MaxBytesPerFile starts a new data file once the current one reaches
	// about this many bytes (default 90 GiB, as Lance). On a store that is
	// a store.Streamer a file goes out as it is encoded; on others it is
	// built in memory first, so memory bounds it in practice.
	MaxBytesPerFile int64
	// Commit tunes the commit.
	Commit CommitOptions
	// Progress, when set, is called after each input batch with the rows
	// written so far; total is -1 (a stream's length is not known).
	Progress func(done, total int64)
	// FileBuffer, when set, is called as each data file is completed with
	// the input rows it holds: [first, first+rows) counted over every row of
	// the write. A non-nil result is stored in the file as global buffer 1,
	// which Lance readers ignore and Dataset.DataFileBuffer returns (kv0's
	// tracking layer keeps each sorted file's series row ranges there).
	FileBuffer func(first, rows uint64) []byte
	// MoreFileBuffers, when set, is called after FileBuffer with the same
	// rows; its buffers follow FileBuffer's (global buffers 2, 3, ... when
	// FileBuffer gave one), in order. A Far buffer is placed after the
	// pages rather than in the file's metadata, for buffers that readers
	// fetch in parts (Dataset.DataFileBufferParts). A nil Bytes is stored
	// as an empty buffer, so the indexes of the others stay fixed.
	MoreFileBuffers func(first, rows uint64) []FileBuffer
	// DataFormat is the format of the data files written: DataFormat21
	// (readable by lance 8 and older) or DataFormat22. Empty means the
	// dataset's format when there is a dataset, DefaultDataFormat for a
	// new one. Create and Overwrite may set any of them (Overwrite changes
	// the dataset's format); Append and Update keep the dataset's, and fail
	// with ErrDataFormat when another is asked for.
	DataFormat string
	// PageBreaks lists input rows (counted over every row of the write,
	// ascending) that must start a new page in every column, so a reader
	// of the rows between two breaks reads exactly their pages.
	PageBreaks []uint64
}

// FileBuffer is one extra global buffer of a data file
// (WriteOptions.MoreFileBuffers).
type FileBuffer struct {
	Bytes []byte
	// Far places the buffer after the pages, outside the tail that opening
	// the file reads.
	Far bool
}

// Default write bounds.
const (
	DefaultMaxRowsPerFile  = 1 << 20
	DefaultMaxBytesPerFile = 90 << 30
)

// streamBytes is how many bytes of encoded pages a data file being written
// may hold before they go to the store, on a store.Streamer as they come
// (a variable so tests can stream small files).
var streamBytes = 1 << 20

// ErrSchemaMismatch means appended rows do not have the dataset's schema.
// Match it with errors.Is.
var ErrSchemaMismatch = errors.New("lance: schema mismatch")

// Create writes a new dataset at root from the batches, all of which must
// have the given schema, and commits it as version 1 (an Overwrite
// transaction read at version 0, as Lance's create). It fails with an error
// matching ErrExists when a dataset is already there. Data files have
// opts.DataFormat (default DefaultDataFormat), manifests get V2 names.
func Create(ctx context.Context, st store.Store, root string, schema *arrow.Schema, batches RecordReader, opts WriteOptions) (*Dataset, error) {
	k := newKeys(root, nil)
	if _, err := LatestVersion(ctx, st, root); err == nil {
		return nil, fmt.Errorf("%w: %q", ErrExists, root)
	} else if !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	return overwrite(ctx, st, k, nil, schema, batches, opts, true)
}

// Overwrite replaces the contents and schema of the dataset at root (or
// creates it) with the batches, in a new version. Earlier versions remain
// readable until cleaned up. The data files keep the dataset's format
// unless opts.DataFormat names another.
func Overwrite(ctx context.Context, st store.Store, root string, schema *arrow.Schema, batches RecordReader, opts WriteOptions) (*Dataset, error) {
	k := newKeys(root, nil)
	base, err := Open(ctx, st, root, OpenOptions{})
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, err
	}
	if err == nil {
		if err := checkWritable(base); err != nil {
			return nil, err
		}
	}
	return overwrite(ctx, st, k, base, schema, batches, opts, false)
}

func overwrite(ctx context.Context, st store.Store, k keys, base *Dataset, schema *arrow.Schema, batches RecordReader, opts WriteOptions, create bool) (*Dataset, error) {
	format := opts.DataFormat
	if format == "" {
		format = DefaultDataFormat
		if base != nil {
			if _, err := writeVersion(base.DataFormat()); err == nil {
				format = base.DataFormat()
			}
		}
	}
	fv, err := writeVersion(format)
	if err != nil {
		return nil, err
	}
	ls, err := lancefile.SchemaFromArrow(schema, 0)
	if err != nil {
		return nil, err
	}
	frags, files, err := writeFragments(ctx, st, k, ls, fv, batches, opts)
	if err != nil {
		return nil, err
	}
	fields, md := schemaFields(ls)
	readVersion, naming := uint64(0), NamingV2
	if base != nil {
		readVersion, naming = base.Version(), base.Naming()
	}
	txn := newTransaction(readVersion)
	txn.Operation = &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{
		Fragments: frags, Schema: fields, SchemaMetadata: md}}
	return commit(ctx, commitReq{st: st, k: k, naming: naming, base: base, txn: txn, files: files, opts: opts.Commit, createOnly: create, format: format})
}

// Append adds the batches to the dataset as new fragments (at most
// MaxRowsPerFile rows each) in a new version committed on top of d. The
// batches must have the dataset's columns (by name, in any order) with the
// same types; a column may be non-nullable in the input where the dataset's
// is nullable, not the reverse. The new data files have the dataset's
// format: appending to a dataset whose files are neither 2.1 nor 2.2 fails
// with ErrUnsupportedFeature, and asking for another format
// (opts.DataFormat) with ErrDataFormat: kv0 never mixes versions, and lance
// refuses datasets that do. Concurrent appends from any number of writers all land (each
// is rebased onto the others), unless one of them loses to an overwrite or
// restore.
func (d *Dataset) Append(ctx context.Context, batches RecordReader, opts WriteOptions) (*Dataset, error) {
	fv, err := d.appendVersion(opts.DataFormat)
	if err != nil {
		return nil, err
	}
	frags, files, err := writeFragments(ctx, d.st, d.k, d.schema, fv, batches, opts)
	if err != nil {
		return nil, err
	}
	if len(frags) == 0 {
		_, err := files()
		return d, err
	}
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{Fragments: frags}}
	return commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn, files: files, opts: opts.Commit})
}

// appendVersion checks that kv0 can add data files to d and returns their
// format, the dataset's. want, when set, is the format the caller asked
// for: it must be the dataset's.
func (d *Dataset) appendVersion(want string) (lancefile.Version, error) {
	if err := d.checkAppendable(); err != nil {
		return lancefile.Version{}, err
	}
	f := d.DataFormat()
	if want != "" && want != f {
		if _, err := writeVersion(want); err != nil {
			return lancefile.Version{}, err
		}
		return lancefile.Version{}, fmt.Errorf("%w: %q stores data files in format %s, not %s; its new files keep %s (rewrite it with an overwrite to change it)",
			ErrDataFormat, d.k.root, f, want, f)
	}
	return writeVersion(f)
}

// checkAppendable refuses datasets kv0 cannot add data files to.
func (d *Dataset) checkAppendable() error {
	if err := checkWritable(d); err != nil {
		return err
	}
	if f := d.DataFormat(); f != DataFormat21 && f != DataFormat22 {
		return fmt.Errorf("%w: %q stores data files in format %s; kv0 writes only %s and %s and never mixes versions",
			ErrUnsupportedFeature, d.k.root, f, DataFormat21, DataFormat22)
	}
	for _, f := range d.schema.Fields {
		if f.Err != nil {
			return fmt.Errorf("%w: %s: %v", ErrUnsupportedFeature, d.k, f.Err)
		}
	}
	return nil
}

// conform checks rec against the dataset schema and returns it with the
// columns in schema order (retained; the caller releases it).
func conform(ls *lancefile.Schema, want *arrow.Schema, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	got := rec.Schema()
	if got.NumFields() != want.NumFields() {
		return nil, fmt.Errorf("%w: input has %d columns, the dataset %d (%s)", ErrSchemaMismatch, got.NumFields(), want.NumFields(), want)
	}
	cols := make([]arrow.Array, want.NumFields())
	same := true
	for i, wf := range want.Fields() {
		j := i
		if got.Field(i).Name != wf.Name {
			idx := got.FieldIndices(wf.Name)
			if len(idx) != 1 {
				return nil, fmt.Errorf("%w: input has no column %q", ErrSchemaMismatch, wf.Name)
			}
			j, same = idx[0], false
		}
		gf := got.Field(j)
		if !arrow.TypeEqual(gf.Type, wf.Type) {
			return nil, fmt.Errorf("%w: column %q has type %s in the input, %s in the dataset", ErrSchemaMismatch, wf.Name, gf.Type, wf.Type)
		}
		if !wf.Nullable && rec.Column(j).NullN() > 0 {
			return nil, fmt.Errorf("%w: column %q is not nullable but the input has nulls", ErrSchemaMismatch, wf.Name)
		}
		cols[i] = rec.Column(j)
	}
	if same {
		rec.Retain()
		return rec, nil
	}
	return array.NewRecordBatch(want, cols, rec.NumRows()), nil
}

// writeFragments writes the batches as data files of format fv of at most
// MaxRowsPerFile rows, one fragment each (ids unassigned), storing each
// file as soon as it is complete while the next one is encoded. A file
// completed while more input follows is stored and synced in the background
// (its sync overlaps the encoding of the next one); the last file is stored
// with store.PutNoSync, possibly still being stored when writeFragments
// returns: the caller must call stored, which waits for the puts and returns
// the keys not synced yet (to pass to the commit as commitReq.unsynced,
// which makes them durable before the manifest that references them) or the
// first error. On error the files already stored are deleted (best effort;
// cleanup removes any left).
func writeFragments(ctx context.Context, st store.Store, k keys, ls *lancefile.Schema, fv lancefile.Version, batches RecordReader, opts WriteOptions) (frags []*tablepb.DataFragment, stored func() ([]string, error), err error) {
	maxRows := opts.MaxRowsPerFile
	if maxRows <= 0 {
		maxRows = DefaultMaxRowsPerFile
	}
	maxBytes := opts.MaxBytesPerFile
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytesPerFile
	}
	want := ls.Arrow()
	var (
		keys    []string // every file stored
		pending []string // the files stored but not synced
		mu      sync.Mutex
		wg      sync.WaitGroup
		putErr  error
		sem     = make(chan struct{}, 2)
		w       *lancefile.Writer
		written int64
	)
	clean := func() {
		wg.Wait()
		for _, key := range keys {
			_ = st.Delete(context.WithoutCancel(ctx), key)
		}
	}
	fail := func(err error) ([]*tablepb.DataFragment, func() ([]string, error), error) {
		clean()
		return nil, nil, err
	}
	// put stores a completed file: data are its bytes, or the rest of them
	// when obj holds the beginning.
	put := func(obj store.ObjectWriter, key string, data [][]byte, sync bool) {
		var err error
		if obj == nil {
			err = store.PutPartsNoSync(ctx, st, key, data)
		} else {
			for _, p := range data {
				if err = obj.Append(p); err != nil {
					break
				}
			}
			if err == nil {
				err = obj.Commit(ctx)
			}
			obj.Abort()
		}
		if err == nil && sync {
			err = store.Sync(ctx, st, key)
		}
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, key)
		if !sync {
			pending = append(pending, key)
		}
		if err != nil && putErr == nil {
			putErr = fmt.Errorf("lance: storing data file %s: %w", key, err)
		}
	}
	// A file larger than streamBytes goes to the store as it is encoded
	// (ow), so memory holds its open pages, not the whole file.
	var (
		ow     store.ObjectWriter
		owName string
	)
	defer func() {
		if ow != nil {
			ow.Abort()
		}
	}()
	drain := func() error {
		if w.Placed() < streamBytes {
			return nil
		}
		if ow == nil {
			owName = newDataFileName()
			var err error
			if ow, err = store.NewObjectWriter(ctx, st, k.data(owName)); err != nil {
				ow = nil
				return fmt.Errorf("lance: storing data file %s: %w", k.data(owName), err)
			}
		}
		for _, p := range w.TakePlaced() {
			if err := ow.Append(p); err != nil {
				return fmt.Errorf("lance: storing data file %s: %w", k.data(owName), err)
			}
		}
		return nil
	}
	// finish completes the current file and stores it in the background
	// (at most two puts at a time), syncing it unless it is the last.
	var fileFirst uint64 // input rows stored in the files before w
	breaks := opts.PageBreaks
	finish := func(last bool) error {
		if opts.FileBuffer != nil {
			if b := opts.FileBuffer(fileFirst, w.Rows()); b != nil {
				w.AddGlobalBuffer(b)
			}
		}
		if opts.MoreFileBuffers != nil {
			for _, b := range opts.MoreFileBuffers(fileFirst, w.Rows()) {
				if b.Far {
					w.AddFarGlobalBuffer(b.Bytes)
				} else {
					w.AddGlobalBuffer(b.Bytes)
				}
			}
		}
		fileFirst += w.Rows()
		data, size, err := w.FinishParts()
		if err != nil {
			return err
		}
		name, obj := newDataFileName(), ow
		if obj != nil {
			name, ow = owName, nil
		}
		frags = append(frags, &tablepb.DataFragment{
			PhysicalRows: w.Rows(),
			Files: []*tablepb.DataFile{{Path: name, Fields: w.FieldIDs(), ColumnIndices: w.ColumnIndices(),
				FileMajorVersion: uint32(fv.Major), FileMinorVersion: uint32(fv.Minor), FileSizeBytes: uint64(size)}},
		})
		w = nil
		key := k.data(name)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			put(obj, key, data, !last)
		}()
		return nil
	}
	for batches.Next() {
		rec, err := conform(ls, want, batches.RecordBatch())
		if err != nil {
			return fail(err)
		}
		n := int(rec.NumRows())
		for off := 0; off < n; {
			if w == nil {
				if w, err = lancefile.NewWriter(ls, lancefile.WriterOptions{Version: fv}); err != nil {
					rec.Release()
					return fail(err)
				}
			}
			take := min(n-off, maxRows-int(w.Rows()))
			pos := uint64(written) + uint64(off) // input row of rec's row off
			for len(breaks) > 0 && breaks[0] <= pos {
				if breaks[0] == pos && w.Rows() > 0 {
					if err := w.BreakPages(); err != nil {
						rec.Release()
						return fail(err)
					}
				}
				breaks = breaks[1:]
			}
			if len(breaks) > 0 && breaks[0] < pos+uint64(take) {
				take = int(breaks[0] - pos)
			}
			part := rec
			if take != n {
				part = rec.NewSlice(int64(off), int64(off+take))
			}
			err = w.Write(part)
			if take != n {
				part.Release()
			}
			if err == nil {
				err = drain()
			}
			if err == nil && (int(w.Rows()) >= maxRows || w.EstimatedSize() >= maxBytes) {
				err = finish(false)
			}
			if err != nil {
				rec.Release()
				return fail(err)
			}
			off += take
		}
		rec.Release()
		written += int64(n)
		if opts.Progress != nil {
			opts.Progress(written, -1)
		}
		mu.Lock()
		perr := putErr
		mu.Unlock()
		if perr != nil {
			return fail(perr)
		}
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
	}
	if err := batches.Err(); err != nil {
		return fail(err)
	}
	if w != nil && w.Rows() > 0 {
		if err := finish(true); err != nil {
			return fail(err)
		}
	}
	return frags, func() ([]string, error) {
		wg.Wait()
		if putErr != nil {
			clean()
			return nil, putErr
		}
		return pending, nil
	}, nil
}
