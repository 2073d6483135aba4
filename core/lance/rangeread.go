package lance

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ReadRange returns the live rows of physical offsets [start, end) of one
// fragment as one record batch of the given columns (all when empty), in
// row order. Only the pages covering those rows are read and decoded: the
// readers skip to start without decoding the pages before it. It is the
// cheap way to read a contiguous run of rows (a sorted series) that Take
// would resolve row by row. Deleted rows are left out.
func (d *Dataset) ReadRange(ctx context.Context, fragment, start, end uint64, columns []string) (arrow.RecordBatch, error) {
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
	if end > f.PhysicalRows && f.PhysicalRows > 0 {
		return nil, fmt.Errorf("lance: ReadRange [%d, %d) past the %d rows of fragment %d", start, end, f.PhysicalRows, fragment)
	}
	schema := proj.Arrow()
	if start >= end {
		cols := make([]arrow.Array, len(proj.Fields))
		for i, fl := range proj.Fields {
			cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, fl.Type, 0)
		}
		defer releaseAll(cols)
		return array.NewRecordBatch(schema, cols, 0), nil
	}
	fr, err := d.openFragment(ctx, f, proj.Fields)
	if err != nil {
		return nil, err
	}
	if start > 0 {
		if err := fr.skip(ctx, int(start)); err != nil {
			return nil, err
		}
	}
	n := int(end - start)
	cols, err := fr.next(ctx, n)
	if err != nil {
		return nil, err
	}
	rows := n
	if runs := fr.del.liveRuns(start, n); runs != nil { // nil: all live
		rows = 0
		for _, r := range runs {
			rows += r[1] - r[0]
		}
		if rows != n {
			if rows == 0 {
				releaseAll(cols)
				for i, fl := range proj.Fields {
					cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, fl.Type, 0)
				}
			} else if cols, err = keepRuns(cols, runs); err != nil {
				return nil, err
			}
		}
	}
	defer releaseAll(cols)
	return array.NewRecordBatch(schema, cols, int64(rows)), nil
}
