package lance

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lancefile"
)

// Take returns the rows at the given row addresses (fragment_id<<32 |
// physical offset), in the order given (repeats allowed), with the named
// columns (all when columns is empty). An address naming a missing fragment,
// an offset past the fragment's end or a deleted row fails the whole call
// with a *RowAddressError (matching ErrInvalidRowAddress); the first such
// address in the input order is reported.
//
// Fragments are read concurrently; within a fragment the wanted rows are read
// in offset order, skipping the rows between them.
func (d *Dataset) Take(ctx context.Context, addrs []uint64, columns []string) (arrow.RecordBatch, error) {
	proj, err := d.schema.Project(columns)
	if err != nil {
		return nil, fmt.Errorf("lance: take from %s: %w", d.k, err)
	}
	for _, f := range proj.Fields {
		if f.Err != nil {
			return nil, f.Err
		}
	}
	schema := proj.Arrow()
	fields := proj.Fields

	// Group the wanted offsets by fragment.
	type fragTake struct {
		f       *Fragment
		offsets []uint64 // sorted, unique
		fr      *fragReader
		pieces  [][]arrow.Array // decoded runs, one slice of columns each
		where   map[uint64][2]int
	}
	var takes []*fragTake
	byFrag := map[uint64]*fragTake{}
	for _, a := range addrs {
		id := a >> 32
		ft := byFrag[id]
		if ft == nil {
			i, ok := d.byID[id]
			if !ok {
				return nil, &RowAddressError{Addr: a, Fragment: id, Offset: uint32(a), Reason: "no such fragment"}
			}
			ft = &fragTake{f: &d.frags[i]}
			byFrag[id] = ft
			takes = append(takes, ft)
		}
		ft.offsets = append(ft.offsets, a&0xffffffff)
	}
	for _, ft := range takes {
		slices.Sort(ft.offsets)
		ft.offsets = slices.Compact(ft.offsets)
		if err := d.checkFiles(ft.f); err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, ft := range takes {
			for _, p := range ft.pieces {
				releaseAll(p)
			}
		}
	}()

	// Open the fragments (data file tails and deletion files) concurrently.
	err = parallel(ctx, len(takes), func(ctx context.Context, i int) error {
		fr, err := d.openFragment(ctx, takes[i].f, fields)
		takes[i].fr = fr
		return err
	})
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		ft := byFrag[a>>32]
		off := a & 0xffffffff
		switch {
		case off >= ft.fr.rows:
			return nil, &RowAddressError{Addr: a, Fragment: a >> 32, Offset: uint32(off),
				Reason: fmt.Sprintf("offset out of range (fragment has %d rows)", ft.fr.rows)}
		case ft.fr.del.contains(off):
			return nil, &RowAddressError{Addr: a, Fragment: a >> 32, Offset: uint32(off), Reason: "row deleted"}
		}
	}

	// Read the runs of consecutive wanted offsets, fragments concurrently.
	err = parallel(ctx, len(takes), func(ctx context.Context, i int) error {
		ft := takes[i]
		ft.where = make(map[uint64][2]int, len(ft.offsets))
		offs := ft.offsets
		for len(offs) > 0 {
			run := 1
			for run < len(offs) && offs[run] == offs[0]+uint64(run) {
				run++
			}
			if gap := offs[0] - ft.fr.pos; gap > 0 {
				if err := ft.fr.skip(ctx, int(gap)); err != nil {
					return err
				}
			}
			cols, err := ft.fr.next(ctx, run)
			if err != nil {
				return err
			}
			for j := 0; j < run; j++ {
				ft.where[offs[j]] = [2]int{len(ft.pieces), j}
			}
			ft.pieces = append(ft.pieces, cols)
			offs = offs[run:]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Assemble the output in the order asked, one slice per stretch of
	// consecutive rows from the same piece.
	out := make([]arrow.Array, len(fields))
	defer func() {
		if err != nil {
			releaseAll(out)
		}
	}()
	for c, fld := range fields {
		var parts []arrow.Array
		for i := 0; i < len(addrs); {
			ft := byFrag[addrs[i]>>32]
			w := ft.where[addrs[i]&0xffffffff]
			j := i + 1
			for j < len(addrs) && addrs[j]>>32 == addrs[i]>>32 {
				w2 := ft.where[addrs[j]&0xffffffff]
				if w2[0] != w[0] || w2[1] != w[1]+(j-i) {
					break
				}
				j++
			}
			parts = append(parts, array.NewSlice(ft.pieces[w[0]][c], int64(w[1]), int64(w[1]+j-i)))
			i = j
		}
		switch len(parts) {
		case 0:
			if out[c], err = lancefile.NullArray(fld.Type, 0); err != nil {
				return nil, err
			}
		case 1:
			out[c] = parts[0]
		default:
			out[c], err = lancefile.Concat(parts)
			releaseAll(parts)
			if err != nil {
				return nil, err
			}
		}
	}
	rec := array.NewRecordBatch(schema, out, int64(len(addrs)))
	releaseAll(out)
	return rec, nil
}
