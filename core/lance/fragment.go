package lance

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lancefile"
)

// tombstone is the field id Lance writes in DataFile.fields for a column
// that a newer data file of the same fragment supersedes.
const tombstone = -2

// fragReader reads some top-level fields of one fragment, in physical row
// order, through one lancefile.Reader per data file involved. It is not safe
// for concurrent use.
type fragReader struct {
	f      *Fragment
	rows   uint64 // physical rows
	del    *deletionSet
	fields []*lancefile.Field
	parts  []filePart
	pos    uint64 // next physical row
}

// filePart is the share of the projected fields one data file provides.
type filePart struct {
	r   *lancefile.Reader
	out []int // output column of each field r reads
}

// planFiles picks, for each field, the data file holding it: the last file
// of the fragment that lists the field or one of its descendants with a
// column. Fields no file holds get -1 (read as nulls, as Lance does for
// columns added after the fragment was written).
func planFiles(f *Fragment, fields []*lancefile.Field) []int {
	files := f.pb.GetFiles()
	holds := make([]map[int32]bool, len(files))
	for j, df := range files {
		holds[j] = map[int32]bool{}
		cols := df.GetColumnIndices()
		for k, id := range df.GetFields() {
			if id == tombstone || id < 0 || (k < len(cols) && cols[k] < 0) {
				continue
			}
			holds[j][id] = true
		}
	}
	plan := make([]int, len(fields))
	for i, fld := range fields {
		plan[i] = -1
		for j := len(files) - 1; j >= 0 && plan[i] < 0; j-- {
			fld.Walk(func(x *lancefile.Field) {
				if holds[j][x.ID] {
					plan[i] = j
				}
			})
		}
	}
	return plan
}

// openFragment opens the data files and the deletion file of f that reading
// fields needs, all concurrently: one request per data file (its tail) plus
// one for the deletion file, in a single round trip.
func (d *Dataset) openFragment(ctx context.Context, f *Fragment, fields []*lancefile.Field, ropts ...lancefile.ReadOptions) (*fragReader, error) {
	if err := d.checkFiles(f); err != nil {
		return nil, err
	}
	plan := planFiles(f, fields)
	if err := d.checkHeld(f, fields, plan); err != nil {
		return nil, err
	}
	var used []int // data file indices, in file order
	seen := map[int]bool{}
	for _, j := range plan {
		if j >= 0 && !seen[j] {
			seen[j] = true
			used = append(used, j)
		}
	}
	if len(used) == 0 && f.PhysicalRows == 0 {
		used = []int{0} // need a file for the row count
	}
	opened := make([]*lancefile.File, len(used))
	var del *deletionSet
	err := parallel(ctx, len(used)+1, func(ctx context.Context, i int) error {
		if i == len(used) {
			var err error
			del, err = d.loadDeletions(ctx, f, f.PhysicalRows)
			return err
		}
		df := f.pb.GetFiles()[used[i]]
		lf, err := d.openDataFile(ctx, df)
		opened[i] = lf
		return err
	})
	if err != nil {
		return nil, err
	}
	fr := &fragReader{f: f, rows: f.PhysicalRows, del: del, fields: fields}
	if fr.rows == 0 && len(opened) > 0 {
		if err := d.checkUnrecordedRows(f, f.pb.GetFiles()[used[0]], opened[0].NumRows()); err != nil {
			return nil, err
		}
		fr.rows = opened[0].NumRows()
	}
	for i, lf := range opened {
		if lf.NumRows() != fr.rows {
			return nil, corruptErr(lf.Key(), -1, "data file has %d rows, fragment %d has %d", lf.NumRows(), f.ID, fr.rows)
		}
		j := used[i]
		df := f.pb.GetFiles()[j]
		if err := d.checkOpened(df, lf); err != nil {
			return nil, err
		}
		columnOf := map[int32]int{}
		cols := df.GetColumnIndices()
		for k, id := range df.GetFields() {
			if id >= 0 && k < len(cols) && cols[k] >= 0 {
				columnOf[id] = int(cols[k])
			}
		}
		var part filePart
		var pfields []*lancefile.Field
		for c, pj := range plan {
			if pj == j {
				part.out = append(part.out, c)
				pfields = append(pfields, fields[c])
			}
		}
		if len(pfields) == 0 {
			continue
		}
		var ro lancefile.ReadOptions
		if len(ropts) > 0 {
			ro = ropts[0]
		}
		r, err := lf.NewReader(pfields, columnOf, ro)
		if err != nil {
			return nil, err
		}
		part.r = r
		fr.parts = append(fr.parts, part)
	}
	return fr, nil
}

// next decodes the next n physical rows of every field (nulls for fields no
// file holds). The caller owns the arrays.
func (fr *fragReader) next(ctx context.Context, n int) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(fr.fields))
	errs := make([]error, len(fr.parts))
	read := func(p int) {
		cols, err := fr.parts[p].r.Next(ctx, n)
		if err != nil {
			errs[p] = err
			return
		}
		for k, c := range fr.parts[p].out {
			out[c] = cols[k]
		}
	}
	if len(fr.parts) == 1 {
		read(0)
	} else {
		var wg sync.WaitGroup
		for p := range fr.parts {
			wg.Add(1)
			go func() { defer wg.Done(); read(p) }()
		}
		wg.Wait()
	}
	var err error
	for _, e := range errs {
		if e != nil {
			err = e
			break
		}
	}
	for c, a := range out {
		if err == nil && a == nil {
			out[c], err = lancefile.NullArray(fr.fields[c].Type, n)
		}
	}
	if err != nil {
		releaseAll(out)
		return nil, err
	}
	fr.pos += uint64(n)
	return out, nil
}

// skip moves past n physical rows.
// pageRows returns how many of the next rows (at most n) every part can
// return without copying (lancefile.Reader.PageRows).
func (fr *fragReader) pageRows(n int) int {
	for _, p := range fr.parts {
		if k := p.r.PageRows(); k > 0 && k < n {
			n = k
		}
	}
	return n
}

func (fr *fragReader) skip(ctx context.Context, n int) error {
	for _, p := range fr.parts {
		if err := p.r.Skip(ctx, n); err != nil {
			return err
		}
	}
	fr.pos += uint64(n)
	return nil
}

// keepRuns returns the rows of cols in runs ([from, to) pairs), releasing
// cols. Runs must be non-empty.
func keepRuns(cols []arrow.Array, runs [][2]int) ([]arrow.Array, error) {
	out := make([]arrow.Array, len(cols))
	var err error
	for c, a := range cols {
		if err == nil {
			if len(runs) == 1 {
				out[c] = array.NewSlice(a, int64(runs[0][0]), int64(runs[0][1]))
			} else {
				pieces := make([]arrow.Array, len(runs))
				for i, r := range runs {
					pieces[i] = array.NewSlice(a, int64(r[0]), int64(r[1]))
				}
				out[c], err = lancefile.Concat(pieces)
				for _, p := range pieces {
					p.Release()
				}
			}
		}
		a.Release()
	}
	if err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

func releaseAll(as []arrow.Array) {
	for _, a := range as {
		if a != nil {
			a.Release()
		}
	}
}
