package lance

import (
	"context"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// UpdateRequest is one Update commit: the general row-rewriting commit the
// key-value layer uses. All parts are optional.
type UpdateRequest struct {
	// RemoveFragments are fragments to drop entirely.
	RemoveFragments []uint64
	// DeleteRows are row addresses to delete from fragments that stay (each
	// fragment gets a deletion file, or is dropped when no row remains).
	DeleteRows []uint64
	// New are rows to add as new fragments.
	New RecordReader
}

// Update commits, in one Update transaction (mode REWRITE_ROWS, as Lance's
// update and merge-insert), the removal of whole fragments, the deletion of
// rows and the addition of new rows. Concurrent appends and commits that
// touch other fragments are rebased over; a concurrent commit that modified
// or removed one of the fragments this update touches makes it fail with a
// retryable *ConflictError, and the caller should redo its read-modify-write
// on the latest version. Nothing is committed when the request is empty.
func (d *Dataset) Update(ctx context.Context, req UpdateRequest, opts WriteOptions) (*Dataset, error) {
	fv, err := d.appendVersion(opts.DataFormat)
	if err != nil {
		return nil, err
	}
	for _, id := range req.RemoveFragments {
		if _, ok := d.byID[id]; !ok {
			return nil, &RowAddressError{Addr: id << 32, Fragment: id, Reason: "no such fragment"}
		}
	}
	sets := map[uint64]*roaring.Bitmap{}
	for _, a := range req.DeleteRows {
		fid, off := a>>32, uint32(a)
		i, ok := d.byID[fid]
		if !ok {
			return nil, &RowAddressError{Addr: a, Fragment: fid, Offset: off, Reason: "no such fragment"}
		}
		if uint64(off) >= d.frags[i].PhysicalRows {
			return nil, &RowAddressError{Addr: a, Fragment: fid, Offset: off, Reason: "offset out of range"}
		}
		if sets[fid] == nil {
			sets[fid] = roaring.New()
		}
		sets[fid].Add(off)
	}
	for _, id := range req.RemoveFragments {
		delete(sets, id)
	}
	up := &tablepb.Transaction_Update{RemovedFragmentIds: append([]uint64(nil), req.RemoveFragments...), UpdateMode: tablepb.Transaction_REWRITE_ROWS}
	if len(sets) > 0 {
		dt, _, err := d.deleteTxn(ctx, sets)
		if err != nil {
			return nil, err
		}
		if dt != nil {
			up.UpdatedFragments = dt.GetDelete().GetUpdatedFragments()
			up.RemovedFragmentIds = append(up.RemovedFragmentIds, dt.GetDelete().GetDeletedFragmentIds()...)
		}
	}
	var files []string
	if req.New != nil {
		frags, stored, err := writeFragments(ctx, d.st, d.k, d.schema, fv, req.New, opts)
		if err != nil {
			return nil, err
		}
		if files, err = stored(); err != nil {
			return nil, err
		}
		up.NewFragments = frags
	}
	if len(up.RemovedFragmentIds) == 0 && len(up.UpdatedFragments) == 0 && len(up.NewFragments) == 0 {
		return d, nil
	}
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_Update_{Update: up}
	return commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn, unsynced: files, opts: opts.Commit})
}
