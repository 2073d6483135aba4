package lance

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

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
	proj := d.schema
	if len(columns) > 0 {
		var err error
		if proj, err = d.schema.Project(columns); err != nil {
			return nil, err
		}
	}
	frags, err := d.selectFragments([]uint64{fragment})
	if err != nil {
		return nil, err
	}
	f := frags[0]
	var prev uint64
	total := 0
	for _, r := range ranges {
		if r.Start < prev || r.End < r.Start || f.PhysicalRows > 0 && r.End > f.PhysicalRows {
			return nil, fmt.Errorf("lance: ReadRanges: range [%d, %d) out of order or past the %d rows of fragment %d", r.Start, r.End, f.PhysicalRows, fragment)
		}
		prev = r.End
		total += int(r.End - r.Start)
	}
	schema := proj.Arrow()
	empty := func() (arrow.RecordBatch, error) {
		cols := make([]arrow.Array, len(proj.Fields))
		for i, fl := range proj.Fields {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, fl.Type, 0)
		}
		defer releaseAll(cols)
		return array.NewRecordBatch(schema, cols, 0), nil
	}
	if total == 0 {
		return empty()
	}
	// Only the pages under the ranges are read: no readahead past them.
	fr, err := d.openFragment(ctx, f, proj.Fields, lancefile.ReadOptions{Ranges: ranges})
	if err != nil {
		return nil, err
	}
	var parts [][]arrow.Array
	defer func() {
		for _, p := range parts {
			releaseAll(p)
		}
	}()
	rows := 0
	for _, r := range ranges {
		if r.End == r.Start {
			continue
		}
		if gap := r.Start - fr.pos; gap > 0 {
			if err := fr.skip(ctx, int(gap)); err != nil {
				return nil, err
			}
		}
		n := int(r.End - r.Start)
		cols, err := fr.next(ctx, n)
		if err != nil {
			return nil, err
		}
		if runs := fr.del.liveRuns(r.Start, n); runs != nil { // nil: all live
			if len(runs) == 0 {
				releaseAll(cols)
				continue
			}
			if cols, err = keepRuns(cols, runs); err != nil {
				return nil, err
			}
		}
		rows += cols[0].Len()
		parts = append(parts, cols)
	}
	if len(parts) == 0 {
		return empty()
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
		if out[c], err = array.Concatenate(pieces, memory.DefaultAllocator); err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(schema, out, int64(rows)), nil
}
