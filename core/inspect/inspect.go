// Package inspect builds the views of datasets and tracking repositories that
// every face of kv0 prints: the CLI (`kv0 lance info|log|cat`, `kv0 series`,
// `kv0 params`), the HTTP read API and the WebAssembly module. Building them
// in one place keeps the faces equal byte for byte.
package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/expr"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// ArgError is a bad argument of a view (an unknown column, a filter that
// does not parse or bind). Arg names the argument ("columns", "where");
// errors.Is(err, ErrInvalid) holds for it.
type ArgError struct {
	Arg string
	Err error
	// Caret, for a filter's syntax error, is the filter with a caret line
	// under the offending position.
	Caret string
}

func (e *ArgError) Error() string { return e.Arg + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *ArgError) Unwrap() error { return e.Err }

// Is reports ErrInvalid as matching every ArgError.
func (e *ArgError) Is(target error) bool { return target == ErrInvalid }

// ErrInvalid matches every ArgError.
var ErrInvalid = errors.New("invalid argument")

// FormatTime renders a commit time in RFC 3339 UTC with the precision it
// has, or "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ---------------------------------------------------------------- info

// Info is what `kv0 lance info --json` prints about one version of a dataset.
type Info struct {
	Path       string     `json:"path"`
	Version    uint64     `json:"version"`
	Timestamp  string     `json:"timestamp"`
	DataFormat string     `json:"data_format"`
	Rows       uint64     `json:"rows"`
	Schema     []Field    `json:"schema"`
	Fragments  []Fragment `json:"fragments"`
}

// Field is one top-level field of a dataset's schema.
type Field struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// Fragment is one fragment of a version.
type Fragment struct {
	ID           uint64 `json:"id"`
	PhysicalRows uint64 `json:"physical_rows"`
	DeletedRows  uint64 `json:"deleted_rows"`
	Files        []File `json:"files"`
	DeletionFile string `json:"deletion_file,omitempty"`
}

// File is one data file of a fragment.
type File struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	Version string `json:"version"`
}

// DatasetInfo describes the version d reads; path is the location as the
// user named it.
func DatasetInfo(ctx context.Context, d *lance.Dataset, path string) (Info, error) {
	rows, err := d.CountRows(ctx)
	if err != nil {
		return Info{}, err
	}
	info := Info{
		Path:       path,
		Version:    d.Version(),
		Timestamp:  FormatTime(d.Timestamp()),
		DataFormat: d.DataFormat(),
		Rows:       rows,
		Schema:     []Field{},
		Fragments:  []Fragment{},
	}
	for _, f := range d.ArrowSchema().Fields() {
		info.Schema = append(info.Schema, Field{Name: f.Name, Type: f.Type.String(), Nullable: f.Nullable})
	}
	for _, fr := range d.Fragments() {
		fj := Fragment{ID: fr.ID, PhysicalRows: fr.PhysicalRows, DeletedRows: fr.DeletedRows, DeletionFile: fr.DeletionFile, Files: []File{}}
		for _, df := range fr.Files {
			fj.Files = append(fj.Files, File{Path: df.Path, Size: df.Size, Version: df.Version})
		}
		info.Fragments = append(info.Fragments, fj)
	}
	return info, nil
}

// ---------------------------------------------------------------- log

// LogEntry is one element of what `kv0 lance log --json` prints.
type LogEntry struct {
	Version          uint64   `json:"version"`
	Timestamp        string   `json:"timestamp"`
	Operation        string   `json:"operation"`
	RowsAdded        uint64   `json:"rows_added"`
	RowsRemoved      uint64   `json:"rows_removed"`
	FragmentsAdded   int      `json:"fragments_added"`
	FragmentsRemoved int      `json:"fragments_removed"`
	Predicate        string   `json:"predicate"`
	Tags             []string `json:"tags"`
	Rows             uint64   `json:"rows"` // live rows in this version
}

// DatasetLog lists what every stored version of the dataset at root did,
// oldest first; opts are lance.Log's (a Warn callback for manifests of the
// other naming scheme).
func DatasetLog(ctx context.Context, st store.Store, root string, opts ...lance.ListOptions) ([]LogEntry, error) {
	versions, err := lance.Log(ctx, st, root, opts...)
	if err != nil {
		return nil, err
	}
	out := make([]LogEntry, 0, len(versions))
	for _, v := range versions {
		tags := v.Tags
		if tags == nil {
			tags = []string{}
		}
		out = append(out, LogEntry{
			Version:          v.Version,
			Timestamp:        FormatTime(v.Timestamp),
			Operation:        v.Operation,
			RowsAdded:        v.RowsAdded,
			RowsRemoved:      v.RowsRemoved,
			FragmentsAdded:   v.FragmentsAdded,
			FragmentsRemoved: v.FragmentsRemoved,
			Predicate:        v.Predicate,
			Tags:             tags,
			Rows:             v.TotalRows,
		})
	}
	return out, nil
}

// ---------------------------------------------------------------- rows

// RowsOptions choose the rows of `kv0 lance cat`.
type RowsOptions struct {
	// Columns to return, in this order; empty means every column.
	Columns []string
	// Limit is the most rows to return; negative means no limit.
	Limit int64
	// Where is a filter in core/expr's language; "" keeps every row.
	Where string
}

// Rows yields the record batches of a scan as `kv0 lance cat` prints them:
// projected, filtered and limited. Use it like a lance.Scanner.
type Rows struct {
	sc      *lance.Scanner
	filter  *expr.Bound
	out     int // number of leading columns returned (the rest feed the filter)
	limit   int64
	emitted int64
	mask    []bool
	pending []arrow.RecordBatch
	cur     arrow.RecordBatch
	err     error
}

// ScanRows starts the scan opts describe. Bad columns or filters fail as
// *ArgError.
func ScanRows(ctx context.Context, d *lance.Dataset, opts RowsOptions) (*Rows, error) {
	r := &Rows{limit: opts.Limit}
	seen := map[string]bool{}
	for _, c := range opts.Columns {
		if seen[c] {
			return nil, &ArgError{Arg: "columns", Err: fmt.Errorf("column %q is named twice", c)}
		}
		seen[c] = true
		if d.ArrowSchema().FieldIndices(c) == nil {
			return nil, &ArgError{Arg: "columns", Err: fmt.Errorf("no column %q in the dataset", c)}
		}
	}
	read := opts.Columns
	if opts.Where != "" {
		e, err := expr.Parse(opts.Where)
		if err != nil {
			ae := &ArgError{Arg: "where", Err: err}
			var se *expr.SyntaxError
			if errors.As(err, &se) {
				ae.Caret = se.Caret(opts.Where)
			}
			return nil, ae
		}
		b, err := e.Bind(d.ArrowSchema())
		if err != nil {
			return nil, &ArgError{Arg: "where", Err: err}
		}
		r.filter = b
		out := opts.Columns
		if len(out) == 0 {
			for _, f := range d.ArrowSchema().Fields() {
				out = append(out, f.Name)
			}
		}
		r.out = len(out)
		read = append([]string(nil), out...)
		for _, c := range b.Columns() {
			found := false
			for _, o := range read {
				found = found || o == c
			}
			if !found {
				read = append(read, c)
			}
		}
	}
	so := lance.ScanOptions{Columns: read}
	if r.filter == nil && opts.Limit > 0 {
		so.Limit = opts.Limit
	}
	if opts.Limit == 0 {
		so.Limit = 1 // nothing is returned; the scan still checks the columns
	}
	sc, err := d.Scan(ctx, so)
	if err != nil {
		return nil, err
	}
	r.sc = sc
	return r, nil
}

func (r *Rows) done() bool { return r.limit >= 0 && r.emitted >= r.limit }

// Next advances to the next batch; false at the end or on an error.
func (r *Rows) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for {
		if len(r.pending) > 0 {
			r.cur, r.pending = r.pending[0], r.pending[1:]
			return true
		}
		if r.err != nil || r.done() || !r.sc.Next() {
			return false
		}
		rec := r.sc.Record()
		if r.filter == nil {
			n := rec.NumRows()
			if r.limit >= 0 && r.emitted+n > r.limit {
				n = r.limit - r.emitted
			}
			r.emitted += n
			r.pending = append(r.pending, rec.NewSlice(0, n))
			continue
		}
		var err error
		if r.mask, err = r.filter.Filter(rec, r.mask); err != nil {
			r.err = err
			return false
		}
		mask := r.mask
		for i := 0; i < len(mask) && !r.done(); {
			if !mask[i] {
				i++
				continue
			}
			j := i
			for j < len(mask) && mask[j] && (r.limit < 0 || r.emitted+int64(j-i) < r.limit) {
				j++
			}
			part := rec.NewSlice(int64(i), int64(j))
			proj := array.NewRecordBatch(arrow.NewSchema(part.Schema().Fields()[:r.out], nil), part.Columns()[:r.out], part.NumRows())
			part.Release()
			r.pending = append(r.pending, proj)
			r.emitted += int64(j - i)
			i = j
		}
	}
}

// Record is the current batch, valid until the next call of Next.
func (r *Rows) Record() arrow.RecordBatch { return r.cur }

// Schema is the schema of the returned batches, known before the first.
func (r *Rows) Schema() *arrow.Schema {
	s := r.sc.Schema()
	if r.filter != nil {
		return arrow.NewSchema(s.Fields()[:r.out], nil)
	}
	return s
}

// Err is the error that ended the scan, if any.
func (r *Rows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.sc.Err()
}

// Close releases the scan.
func (r *Rows) Close() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	for _, p := range r.pending {
		p.Release()
	}
	r.pending = nil
	r.sc.Close()
}

// ---------------------------------------------------------------- tracking

// Series is one element of what `kv0 series --json` prints: a series and its
// statistics (nil when it has no points yet).
type Series struct {
	tracking.SeriesInfo
	Stats *tracking.SeriesStats `json:"stats,omitempty"`
}

// RunSeries lists the series of a run with their statistics.
func RunSeries(ctx context.Context, r *tracking.Repo, runID string) ([]Series, error) {
	series, err := r.AllSeries(ctx, runID)
	if err != nil {
		return nil, err
	}
	ids := make([]tracking.SeriesID, len(series))
	for i, s := range series {
		ids[i] = s.ID
	}
	stats, err := r.SeriesStats(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Series, len(series))
	for i, s := range series {
		out[i].SeriesInfo = s
		if st, ok := stats[s.ID]; ok {
			out[i].Stats = &st
		}
	}
	return out, nil
}

// RunParams is what `kv0 params --json` prints: each parameter's JSON value
// by its dotted key.
func RunParams(ctx context.Context, r *tracking.Repo, runID string) (map[string]json.RawMessage, error) {
	ps, err := r.AllParams(ctx, runID)
	if err != nil {
		return nil, err
	}
	m := make(map[string]json.RawMessage, len(ps))
	for k, p := range ps {
		m[k] = p.Value
	}
	return m, nil
}
