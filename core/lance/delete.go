package lance

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/expr"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
)

// DeleteStats summarises a delete.
type DeleteStats struct {
	RowsDeleted       uint64 // rows newly deleted
	FragmentsUpdated  int    // fragments that got a new deletion file
	FragmentsRemoved  int    // fragments dropped because every row is gone
	DeletionFilesMade int
}

// Delete deletes the rows for which predicate (a core/expr filter) is TRUE
// and commits a Delete transaction whose predicate is the expression's
// canonical text. Fragments that lose rows get a new deletion file holding
// the union of old and new deletions (Arrow for up to 5,000 rows, Roaring
// above); fragments that lose every row are dropped. Deleting nothing
// commits nothing and returns d. When a concurrent commit touched the same
// fragments, the delete is evaluated again on the newer version.
func (d *Dataset) Delete(ctx context.Context, predicate string) (*Dataset, DeleteStats, error) {
	e, err := expr.Parse(predicate)
	if err != nil {
		return nil, DeleteStats{}, err
	}
	var stats DeleteStats
	plan := func(ctx context.Context, base *Dataset) (*tablepb.Transaction, error) {
		b, err := e.Bind(base.ArrowSchema())
		if err != nil {
			return nil, err
		}
		sets, err := base.matchRows(ctx, b)
		if err != nil {
			return nil, err
		}
		txn, st, err := base.deleteTxn(ctx, sets)
		if err != nil {
			return nil, err
		}
		if txn != nil {
			txn.GetDelete().Predicate = e.String()
		}
		stats = st
		return txn, nil
	}
	if err := checkWritable(d); err != nil {
		return nil, stats, err
	}
	txn, err := plan(ctx, d)
	if err != nil || txn == nil {
		return d, stats, err
	}
	nd, err := commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn, redo: func(ctx context.Context, latest *Dataset) (*tablepb.Transaction, error) {
		t, err := plan(ctx, latest)
		if err == nil && t == nil {
			// Nothing left to delete: commit an empty delete so the retry
			// loop still terminates with a version.
			t = newTransaction(latest.Version())
			t.Operation = &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{Predicate: e.String()}}
		}
		return t, err
	}})
	if err != nil {
		return nil, DeleteStats{}, err
	}
	return nd, stats, nil
}

// DeleteRows deletes the rows at the given row addresses ((fragment << 32)
// | physical offset) and commits a Delete transaction. Addresses of rows
// already deleted are ignored; an address naming no fragment or an offset
// past its end fails with a *RowAddressError. On a conflict with a
// concurrent commit touching the same fragments the addresses are applied
// to the newer version, unless that commit rewrote or removed one of their
// fragments (then the result is a *ConflictError).
func (d *Dataset) DeleteRows(ctx context.Context, addrs []uint64) (*Dataset, DeleteStats, error) {
	if err := checkWritable(d); err != nil {
		return nil, DeleteStats{}, err
	}
	var stats DeleteStats
	plan := func(ctx context.Context, base *Dataset) (*tablepb.Transaction, error) {
		sets := map[uint64]*roaring.Bitmap{}
		for _, a := range addrs {
			fid, off := a>>32, uint32(a)
			i, ok := base.byID[fid]
			if !ok {
				return nil, &RowAddressError{Addr: a, Fragment: fid, Offset: off, Reason: "no such fragment"}
			}
			if uint64(off) >= base.frags[i].PhysicalRows {
				return nil, &RowAddressError{Addr: a, Fragment: fid, Offset: off, Reason: "offset out of range"}
			}
			if sets[fid] == nil {
				sets[fid] = roaring.New()
			}
			sets[fid].Add(off)
		}
		txn, st, err := base.deleteTxn(ctx, sets)
		stats = st
		return txn, err
	}
	txn, err := plan(ctx, d)
	if err != nil || txn == nil {
		return d, stats, err
	}
	nd, err := commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn, redo: func(ctx context.Context, latest *Dataset) (*tablepb.Transaction, error) {
		for _, a := range addrs {
			if _, ok := latest.byID[a>>32]; !ok {
				return nil, &ConflictError{Root: d.k.root, Version: latest.Version(), Operation: "a commit that removed fragment " + fmt.Sprint(a>>32),
					Mine: "Delete", Retryable: false, Reason: "the row addresses no longer exist"}
			}
		}
		t, err := plan(ctx, latest)
		if err == nil && t == nil {
			t = newTransaction(latest.Version())
			t.Operation = &tablepb.Transaction_Delete_{Delete: &tablepb.Transaction_Delete{}}
		}
		return t, err
	}})
	if err != nil {
		return nil, DeleteStats{}, err
	}
	return nd, stats, nil
}

// matchRows returns, per fragment, the physical offsets of live rows for
// which b is TRUE. Fragments are read concurrently, projecting only the
// columns the predicate reads.
func (d *Dataset) matchRows(ctx context.Context, b *expr.Bound) (map[uint64]*roaring.Bitmap, error) {
	proj, err := d.schema.Project(b.Columns())
	if err != nil {
		return nil, err
	}
	schema := proj.Arrow()
	var mu sync.Mutex
	sets := map[uint64]*roaring.Bitmap{}
	err = parallel(ctx, len(d.frags), func(ctx context.Context, i int) error {
		bm, err := d.matchFragment(ctx, &d.frags[i], proj.Fields, schema, b)
		if err != nil || bm == nil {
			return err
		}
		mu.Lock()
		sets[d.frags[i].ID] = bm
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sets, nil
}

func (d *Dataset) matchFragment(ctx context.Context, f *Fragment, fields []*lancefile.Field, schema *arrow.Schema, b *expr.Bound) (*roaring.Bitmap, error) {
	fr, err := d.openFragment(ctx, f, fields)
	if err != nil {
		return nil, err
	}
	var bm *roaring.Bitmap
	var mask []bool
	for fr.pos < fr.rows {
		n := int(min(uint64(DefaultBatchRows), fr.rows-fr.pos))
		start := fr.pos
		cols, err := fr.next(ctx, n)
		if err != nil {
			return nil, err
		}
		rec := array.NewRecordBatch(schema, cols, int64(n))
		releaseAll(cols)
		mask, err = b.Filter(rec, mask)
		rec.Release()
		if err != nil {
			return nil, err
		}
		for j, hit := range mask {
			if hit && !fr.del.contains(start+uint64(j)) {
				if bm == nil {
					bm = roaring.New()
				}
				bm.Add(uint32(start) + uint32(j))
			}
		}
	}
	return bm, nil
}

// deleteTxn turns new deletions per fragment into a Delete transaction read
// at d's version, writing the deletion files. It returns nil when nothing
// new is deleted.
func (d *Dataset) deleteTxn(ctx context.Context, sets map[uint64]*roaring.Bitmap) (*tablepb.Transaction, DeleteStats, error) {
	var stats DeleteStats
	ids := make([]uint64, 0, len(sets))
	for id := range sets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	del := &tablepb.Transaction_Delete{}
	updated := make([]*tablepb.DataFragment, len(ids))
	removed := make([]bool, len(ids))
	newRows := make([]uint64, len(ids))
	err := parallel(ctx, len(ids), func(ctx context.Context, i int) error {
		f := &d.frags[d.byID[ids[i]]]
		old, err := d.loadDeletions(ctx, f, f.PhysicalRows)
		if err != nil {
			return err
		}
		all := sets[ids[i]].Clone()
		before := old.count()
		if old != nil {
			all.Or(old.bm)
		}
		newRows[i] = all.GetCardinality() - before
		if newRows[i] == 0 {
			return nil
		}
		if all.GetCardinality() >= f.PhysicalRows && f.PhysicalRows > 0 {
			removed[i] = true
			return nil
		}
		nf, _, err := d.writeDeletionFile(ctx, f.pb, all, d.Version())
		updated[i] = nf
		return err
	})
	if err != nil {
		return nil, stats, err
	}
	for i, id := range ids {
		stats.RowsDeleted += newRows[i]
		switch {
		case removed[i]:
			del.DeletedFragmentIds = append(del.DeletedFragmentIds, id)
			stats.FragmentsRemoved++
		case updated[i] != nil:
			del.UpdatedFragments = append(del.UpdatedFragments, updated[i])
			stats.FragmentsUpdated++
			stats.DeletionFilesMade++
		}
	}
	if stats.RowsDeleted == 0 {
		return nil, stats, nil
	}
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_Delete_{Delete: del}
	return txn, stats, nil
}
