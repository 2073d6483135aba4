package lancefile

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
)

// fieldDecoder produces consecutive rows of one top-level field. The 2.1
// (v21*.go) and 2.0 (v20*.go) readers implement it.
type fieldDecoder interface {
	// next decodes the next n rows (0 < n ≤ rows left) into one array.
	next(ctx context.Context, n int) (arrow.Array, error)
	// skip moves past n rows (0 < n ≤ rows left), reading as little as it can.
	skip(ctx context.Context, n int) error
}

// ReadOptions tune a Reader. The zero value is usable.
type ReadOptions struct {
	// Readahead is the number of bytes each column keeps in flight
	// (default 8 MiB).
	Readahead int64
	// Ranges, when set, are the rows the caller will read (sorted,
	// disjoint; Skip the rows between them): pages outside them are not
	// read ahead, so a range read fetches only the pages it decodes.
	Ranges []RowRange
}

// RowRange is the rows [Start, End) of a file.
type RowRange struct{ Start, End uint64 }

// Reader streams rows of some top-level fields of a file as Arrow arrays.
// It is not safe for concurrent use.
type Reader struct {
	f        *File
	fields   []*Field
	decoders []fieldDecoder
	left     uint64
}

// NewReader returns a Reader over fields, which must be top-level fields of
// the file's schema (normally the dataset's schema). columnOf maps a field id
// to its column index in this file, as the manifest's DataFile lists them: in
// 2.1 files only leaves have columns, in 2.0 files every field does.
func (f *File) NewReader(fields []*Field, columnOf map[int32]int, opts ReadOptions) (*Reader, error) {
	r := &Reader{f: f, fields: fields, left: f.NumRows()}
	for _, fld := range fields {
		if fld.Err != nil {
			return nil, fld.Err
		}
		var (
			d   fieldDecoder
			err error
		)
		switch f.version {
		case V2_1, V2_2:
			d, err = newDecoder21(f, fld, columnOf, opts)
		case V2_0:
			d, err = newDecoder20(f, fld, columnOf, opts)
		default:
			err = &FormatError{File: f.key, Column: -1, Page: -1, Offset: -1, Err: ErrUnsupportedVersion, Msg: f.version.String()}
		}
		if err != nil {
			return nil, err
		}
		r.decoders = append(r.decoders, d)
	}
	return r, nil
}

// Rows returns the number of rows not yet read.
func (r *Reader) Rows() uint64 { return r.left }

// Next returns the next min(n, Rows()) rows, one array per field, or io.EOF
// when every row has been read. Fields are decoded concurrently.
func (r *Reader) Next(ctx context.Context, n int) ([]arrow.Array, error) {
	if r.left == 0 {
		return nil, io.EOF
	}
	if n <= 0 {
		return nil, fmt.Errorf("lancefile: Next(%d): need a positive row count", n)
	}
	if uint64(n) > r.left {
		n = int(r.left)
	}
	out := make([]arrow.Array, len(r.decoders))
	errs := r.eachField(func(i int, d fieldDecoder) (err error) {
		out[i], err = d.next(ctx, n)
		return err
	})
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", r.fields[i].Name, err)
		}
		if out[i].Len() != n {
			return nil, r.f.corruptf(-1, "column %q decoded %d rows, want %d", r.fields[i].Name, out[i].Len(), n)
		}
		if path, row, found := firstBadNull(r.fields[i], out[i]); found {
			for _, a := range out {
				if a != nil {
					a.Release()
				}
			}
			return nil, r.f.corruptf(-1, "column %q is not nullable but row %d is null", path, r.f.NumRows()-r.left+uint64(row))
		}
	}
	r.left -= uint64(n)
	return out, nil
}

// pageRower is a fieldDecoder that knows where its current pages end.
type pageRower interface {
	// pageRows returns how many of the next rows lie in the pages it holds
	// or will read next, every column's page at once; 0 when unknown.
	pageRows() int
}

// PageRows returns how many of the next rows (at most Rows()) Next can
// return as slices of decoded pages, copying nothing: the rows up to the
// nearest end of a page of any of the reader's columns. A read that is to
// be cheap asks for at most that many rows. It returns Rows() when the
// file's layout does not tell (2.0 files).
func (r *Reader) PageRows() int {
	n := r.left
	for _, d := range r.decoders {
		if pr, ok := d.(pageRower); ok {
			if k := pr.pageRows(); k > 0 && uint64(k) < n {
				n = uint64(k)
			}
		}
	}
	return int(n)
}

// Skip moves past min(n, Rows()) rows without decoding what it can avoid.
func (r *Reader) Skip(ctx context.Context, n int) error {
	if uint64(n) > r.left {
		n = int(r.left)
	}
	if n <= 0 {
		return nil
	}
	// A skip that ends inside a page reads that page: skip the fields
	// concurrently so their reads share one round trip.
	errs := r.eachField(func(i int, d fieldDecoder) error { return d.skip(ctx, n) })
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("column %q: %w", r.fields[i].Name, err)
		}
	}
	r.left -= uint64(n)
	return nil
}

// eachField runs fn for every field's decoder, concurrently when there are
// several, and returns their errors by field.
func (r *Reader) eachField(fn func(i int, d fieldDecoder) error) []error {
	errs := make([]error, len(r.decoders))
	if len(r.decoders) == 1 {
		errs[0] = fn(0, r.decoders[0])
		return errs
	}
	var wg sync.WaitGroup
	for i, d := range r.decoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i, d)
		}()
	}
	wg.Wait()
	return errs
}
