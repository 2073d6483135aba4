package lance

import (
	"context"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// Restore commits a new version whose contents (schema, fragments, config,
// indices) are those of an earlier version, with a Restore transaction.
// Versions in between stay readable. Concurrent appends, deletes and
// compactions that lose to the restore fail with a non-retryable
// *ConflictError, as in Lance.
func (d *Dataset) Restore(ctx context.Context, version uint64) (*Dataset, error) {
	if err := checkWritable(d); err != nil {
		return nil, err
	}
	old, err := Open(ctx, d.st, d.k.root, OpenOptions{Version: version})
	if err != nil {
		return nil, err
	}
	if err := checkWritable(old); err != nil {
		return nil, err
	}
	idx, err := readIndices(ctx, old)
	if err != nil {
		return nil, err
	}
	txn := newTransaction(d.Version())
	txn.Operation = &tablepb.Transaction_Restore_{Restore: &tablepb.Transaction_Restore{Version: version}}
	return commit(ctx, commitReq{st: d.st, k: d.k, naming: d.Naming(), base: d, txn: txn, restored: old.mf.m, restoredIdx: idx})
}
