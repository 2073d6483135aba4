package lance

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lancefile"
)

// RowRange is the physical row offsets [Start, End) of a fragment.
type RowRange = lancefile.RowRange

// ReadRange returns the live rows of physical offsets [start, end) of one
// fragment as one record batch of the given columns (all when empty), in
// row order. Only the pages covering those rows are decoded: the readers
// skip to start without decoding the pages before it. It is the cheap way
// to read a contiguous run of rows (a sorted series) that Take would
// resolve row by row. Deleted rows are left out.
func (d *Dataset) ReadRange(ctx context.Context, fragment, start, end uint64, columns []string) (arrow.RecordBatch, error) {
	return d.ReadRanges(ctx, fragment, []RowRange{{Start: start, End: end}}, columns)
}

// ReadRanges is ReadRange for several ranges of one fragment, which must be
// sorted and disjoint: the fragment is opened once and the rows between the
// ranges are skipped. The rows come back in range order in one batch.
func (d *Dataset) ReadRanges(ctx context.Context, fragment uint64, ranges []RowRange, columns []string) (arrow.RecordBatch, error) {
	schema, proj, parts, rows, err := d.readRangeParts(ctx, fragment, ranges, columns, false)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, p := range parts {
			releaseAll(p)
		}
	}()
	if len(parts) == 0 {
		return emptyBatch(schema, proj)
	}
	if len(parts) == 1 {
		return array.NewRecordBatch(schema, parts[0], int64(rows)), nil
	}
	out := make([]arrow.Array, len(proj.Fields))
	defer releaseAll(out)
	for c := range out {
		pieces := make([]arrow.Array, len(parts))
		for i, p := range parts {
			pieces[i] = p[c]
		}
		if out[c], err = lancefile.Concat(pieces); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(schema, out, int64(rows)), nil
}

// ReadRangesChunks is ReadRanges returning the rows as several batches,
// in range order, cut where a range ends and where a page of one of the
// columns ends, so that no value is copied after its page is decoded: each
// batch's arrays are slices of decoded pages. It is the cheaper read when
// the caller can take its rows in pieces. Deleted rows are left out; no
// batch is empty, and there is none when no row is live.
func (d *Dataset) ReadRangesChunks(ctx context.Context, fragment uint64, ranges []RowRange, columns []string) ([]arrow.RecordBatch, error) {
	schema, _, parts, _, err := d.readRangeParts(ctx, fragment, ranges, columns, true)
	if err != nil {
		return nil, err
	}
	out := make([]arrow.RecordBatch, len(parts))
	for i, p := range parts {
		out[i] = array.NewRecordBatch(schema, p, int64(p[0].Len()))
		releaseAll(p)
	}
	return out, nil
}

func emptyBatch(schema *arrow.Schema, proj *lancefile.Schema) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(proj.Fields))
	defer releaseAll(cols)
	for i, fl := range proj.Fields {
		var err error
		if cols[i], err = lancefile.NullArray(fl.Type, 0); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(schema, cols, 0), nil
}

// readRangeParts reads the live rows of the ranges as pieces of columns,
// one piece per range, or, with paged set, per stretch of a range within
// one page of every column. The caller owns the pieces.
func (d *Dataset) readRangeParts(ctx context.Context, fragment uint64, ranges []RowRange, columns []string, paged bool) (schema *arrow.Schema, proj *lancefile.Schema, parts [][]arrow.Array, rows int, err error) {
	proj = d.schema
	if len(columns) > 0 {
		if proj, err = d.schema.Project(columns); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	frags, err := d.selectFragments([]uint64{fragment})
	if err != nil {
		return nil, nil, nil, 0, err
	}
	f := frags[0]
	var prev uint64
	total := 0
	for _, r := range ranges {
		if r.Start < prev || r.End < r.Start || f.PhysicalRows > 0 && r.End > f.PhysicalRows {
			return nil, nil, nil, 0, fmt.Errorf("lance: ReadRanges: range [%d, %d) out of order or past the %d rows of fragment %d", r.Start, r.End, f.PhysicalRows, fragment)
		}
		prev = r.End
		total += int(r.End - r.Start)
	}
	schema = proj.Arrow()
	if total == 0 {
		return schema, proj, nil, 0, nil
	}
	// Only the pages under the ranges are read: no readahead past them.
	fr, err := d.openFragment(ctx, f, proj.Fields, lancefile.ReadOptions{Ranges: ranges})
	if err != nil {
		return nil, nil, nil, 0, err
	}
	defer func() {
		if err != nil {
			for _, p := range parts {
				releaseAll(p)
			}
			parts = nil
		}
	}()
	for _, r := range ranges {
		if r.End == r.Start {
			continue
		}
		if gap := r.Start - fr.pos; gap > 0 {
			if err = fr.skip(ctx, int(gap)); err != nil {
				return nil, nil, nil, 0, err
			}
		}
		for pos := r.Start; pos < r.End; {
			n := int(r.End - pos)
			if paged {
				n = fr.pageRows(n)
			}
			var cols []arrow.Array
			if cols, err = fr.next(ctx, n); err != nil {
				return nil, nil, nil, 0, err
			}
			start := pos
			pos += uint64(n)
			if runs := fr.del.liveRuns(start, n); runs != nil { // nil: all live
				if len(runs) == 0 {
					releaseAll(cols)
					continue
				}
				if cols, err = keepRuns(cols, runs); err != nil {
					return nil, nil, nil, 0, err
				}
			}
			rows += cols[0].Len()
			parts = append(parts, cols)
		}
	}
	return schema, proj, parts, rows, nil
}
