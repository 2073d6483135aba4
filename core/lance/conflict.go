package lance

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
)

// ErrConflict means a commit lost a race to a concurrent commit it cannot be
// rebased onto, or kept losing races until CommitOptions.MaxRetries. Match
// it with errors.Is; the error is a *ConflictError.
var ErrConflict = errors.New("lance: commit conflict")

// ErrExists means Create found a dataset already there. Match it with
// errors.Is.
var ErrExists = errors.New("lance: dataset already exists")

// ConflictError describes a lost commit race.
type ConflictError struct {
	Root string
	// Version is the version of the concurrent commit this one lost to.
	Version uint64
	// Operation is that commit's operation ("Overwrite", "Delete", ...).
	Operation string
	// Mine is the operation of the commit that failed.
	Mine string
	// Retryable reports that redoing the operation on the latest version
	// may succeed (e.g. a delete touching fragments a compaction rewrote);
	// false means the other commit replaced the table (overwrite, restore)
	// or the retries ran out.
	Retryable bool
	Reason    string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("lance: %s commit on %q lost to %s at version %d: %s", e.Mine, e.Root, e.Operation, e.Version, e.Reason)
}

// Unwrap returns ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// verdict is how a transaction relates to one committed after its read
// version.
type verdict int

const (
	compatible   verdict = iota // rebase by rebuilding the manifest on top
	retryable                   // the operation must be redone on the new version
	incompatible                // the operation cannot proceed
)

func (v verdict) String() string {
	return [...]string{"compatible", "retryable", "incompatible"}[v]
}

// touched returns the ids of existing fragments a transaction modifies or
// removes, and whether it replaces or rewrites the whole table's fragments
// in a way that touches every fragment.
func touched(t *tablepb.Transaction) (ids []uint64, all bool) {
	switch op := t.GetOperation().(type) {
	case *tablepb.Transaction_Delete_:
		ids = append(ids, op.Delete.GetDeletedFragmentIds()...)
		for _, f := range op.Delete.GetUpdatedFragments() {
			ids = append(ids, f.GetId())
		}
	case *tablepb.Transaction_Update_:
		ids = append(ids, op.Update.GetRemovedFragmentIds()...)
		for _, f := range op.Update.GetUpdatedFragments() {
			ids = append(ids, f.GetId())
		}
	case *tablepb.Transaction_Rewrite_:
		for _, f := range op.Rewrite.GetOldFragments() {
			ids = append(ids, f.GetId())
		}
		for _, g := range op.Rewrite.GetGroups() {
			for _, f := range g.GetOldFragments() {
				ids = append(ids, f.GetId())
			}
		}
	case *tablepb.Transaction_DataReplacement_:
		for _, r := range op.DataReplacement.GetReplacements() {
			ids = append(ids, r.GetFragmentId())
		}
	case *tablepb.Transaction_Merge_, *tablepb.Transaction_Overwrite_, *tablepb.Transaction_Restore_:
		all = true
	}
	return ids, all
}

func overlaps(a, b []uint64) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// configKeys returns the config keys a transaction sets or removes.
func configKeys(t *tablepb.Transaction) []string {
	var keys []string
	switch op := t.GetOperation().(type) {
	case *tablepb.Transaction_Overwrite_:
		for k := range op.Overwrite.GetConfigUpsertValues() {
			keys = append(keys, k)
		}
	case *tablepb.Transaction_UpdateConfig_:
		u := op.UpdateConfig
		for _, e := range u.GetConfigUpdates().GetUpdateEntries() {
			keys = append(keys, e.GetKey())
		}
		if u.GetConfigUpdates().GetReplace() {
			keys = append(keys, "*")
		}
		for k := range u.GetUpsertValues() {
			keys = append(keys, k)
		}
		keys = append(keys, u.GetDeleteKeys()...)
	}
	return keys
}

func keysOverlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	if slices.Contains(a, "*") || slices.Contains(b, "*") {
		return true
	}
	for _, k := range a {
		if slices.Contains(b, k) {
			return true
		}
	}
	return false
}

// checkConflict applies Lance's conflict rules to a transaction being
// committed (mine) and one committed after mine's read version (other):
//
//	mine \ other    Append  Delete/Update    Rewrite       Overwrite/Restore  UpdateConfig   Reserve/CreateIndex/Project/Clone
//	Append          ok      ok               ok            incompatible       ok             ok
//	Delete/Update   ok      retry if shared  retry shared  incompatible       ok             ok (Merge: retry)
//	Rewrite         ok      retry if shared  retry shared  incompatible       ok             ok
//	Overwrite       ok      ok               ok            same config keys   same keys      ok
//	Restore         ok      ok               ok            ok                 ok             ok
//	Reserve         ok      ok               ok            ok                 ok             ok
//	UpdateConfig    ok      ok               ok            same config keys   same keys      ok
//
// "shared" means both touch (modify or remove) a common fragment. Operations
// kv0 does not know conflict as "retry" when they could matter.
func checkConflict(mine, other *tablepb.Transaction) (verdict, string) {
	otherName := operationName(other)
	switch mine.GetOperation().(type) {
	case *tablepb.Transaction_Restore_, *tablepb.Transaction_ReserveFragments_:
		return compatible, ""
	case *tablepb.Transaction_Overwrite_, *tablepb.Transaction_UpdateConfig_:
		switch other.GetOperation().(type) {
		case *tablepb.Transaction_Overwrite_, *tablepb.Transaction_UpdateConfig_:
			if keysOverlap(configKeys(mine), configKeys(other)) {
				return incompatible, "both change the same table config keys"
			}
		}
		return compatible, ""
	}
	// Append, Delete, Update and Rewrite.
	switch other.GetOperation().(type) {
	case *tablepb.Transaction_Overwrite_, *tablepb.Transaction_Restore_:
		return incompatible, otherName + " replaced the table"
	case *tablepb.Transaction_Append_, *tablepb.Transaction_ReserveFragments_, *tablepb.Transaction_Project_,
		*tablepb.Transaction_UpdateConfig_, *tablepb.Transaction_Clone_, *tablepb.Transaction_CreateIndex_:
		return compatible, ""
	}
	if _, ok := mine.GetOperation().(*tablepb.Transaction_Append_); ok {
		return compatible, ""
	}
	switch other.GetOperation().(type) {
	case *tablepb.Transaction_Delete_, *tablepb.Transaction_Update_, *tablepb.Transaction_Rewrite_,
		*tablepb.Transaction_DataReplacement_:
		mineIDs, _ := touched(mine)
		otherIDs, _ := touched(other)
		if overlaps(mineIDs, otherIDs) {
			return retryable, "both modify fragments " + fmt.Sprint(sharedIDs(mineIDs, otherIDs))
		}
		return compatible, ""
	case *tablepb.Transaction_Merge_:
		return retryable, "a Merge changed every fragment"
	}
	return retryable, "kv0 cannot rebase onto a " + otherName
}

func sharedIDs(a, b []uint64) []uint64 {
	var out []uint64
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
