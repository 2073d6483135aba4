package lance

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/kv0/kv0/core/internal/lancepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// VersionInfo is one row of a dataset's change log: what one version did.
//
// Operation is the transaction's operation name as Lance spells it
// ("Append", "Delete", "Overwrite", "CreateIndex", "Rewrite", "Merge",
// "Restore", "ReserveFragments", "Update", "Project", "UpdateConfig",
// "DataReplacement", "UpdateMemWalState", "Clone", "UpdateBases",
// "DataOverlay"), except
// that an Overwrite that read no earlier version (read_version 0: the
// commit that created the table) is reported as "Create". A version whose
// transaction is missing or of a kind kv0 does not know is "Unknown".
//
// The counts compare this version's manifest with the previous version's
// (version-1), fragment by fragment (fragments are matched by id):
//   - FragmentsAdded / FragmentsRemoved: fragment ids present only in this
//     version / only in the previous one;
//   - RowsAdded: live rows (physical minus deleted) of added fragments, plus
//     live rows gained by fragments present in both;
//   - RowsRemoved: live rows of removed fragments, plus live rows lost by
//     fragments present in both (new deletions).
//
// So an Update that rewrites n rows shows n added and n removed, and a
// compaction (Rewrite) shows its rows as both removed and added. An
// Overwrite replaces everything: all previous fragments count as removed and
// all new ones as added, even if ids repeat. When version-1 is not stored
// (cleaned up), Baseline is set and the counts compare with an empty table.
type VersionInfo struct {
	Version          uint64
	Timestamp        time.Time
	Operation        string
	ReadVersion      uint64 // the version the transaction was built on
	RowsAdded        uint64
	RowsRemoved      uint64
	FragmentsAdded   int
	FragmentsRemoved int
	Predicate        string   // the filter of a Delete
	Tags             []string // tags pointing at this version, sorted
	TotalRows        uint64   // live rows in this version
	Fragments        int      // fragments in this version
	Baseline         bool     // version-1 is not stored; counts are against an empty table
}

// Log returns what every stored version of the dataset did, oldest first.
// Cost on a listing store: one listing of _versions/, one of _refs/tags/
// plus one read per tag, and one read per version (the inline transaction
// section usually comes with the manifest's tail; otherwise one more read of
// the section or of the _transactions/ file), issued concurrently. On a
// store that cannot list, tags are not reported. Manifest names of the
// other naming scheme are skipped (see ErrMixedNaming), and reported to the
// Warn callback of opts. A version a cleanup removes while Log reads is
// left out, as if the listing had come after the cleanup.
func Log(ctx context.Context, st store.Store, root string, opts ...ListOptions) ([]VersionInfo, error) {
	k := keys{root: root}
	refs, err := ListVersions(ctx, st, root, opts...)
	if err != nil {
		return nil, err
	}
	tags, err := ListTags(ctx, st, root)
	if err != nil && !isNotSupported(err) {
		return nil, err
	}
	tagsOf := map[uint64][]string{}
	for _, t := range tags {
		tagsOf[t.Version] = append(tagsOf[t.Version], t.Name)
	}

	type entry struct {
		m   *tablepb.Manifest
		txn *tablepb.Transaction
	}
	entries := make([]entry, len(refs))
	err = parallel(ctx, len(refs), func(ctx context.Context, i int) error {
		// A version missing here was removed after the listing (a cleanup
		// under the reader), or enumerated without one and cleaned up
		// before: it is no longer part of the history.
		mf, err := readManifest(ctx, st, refs[i].Key, refs[i].Size)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if v := mf.m.GetVersion(); v != refs[i].Version {
			return corruptErr(mf.key, mf.pos, "manifest says version %d", v)
		}
		txn, err := readTransaction(ctx, st, k, mf)
		if errors.Is(err, ErrNotFound) {
			return nil // its transaction section went with the manifest
		}
		if err != nil {
			return err
		}
		entries[i] = entry{mf.m, txn}
		return nil
	})
	if err != nil {
		return nil, err
	}

	out := make([]VersionInfo, 0, len(refs))
	if !slices.ContainsFunc(entries, func(e entry) bool { return e.m != nil }) {
		return nil, noDataset(k) // every version went: the dataset was deleted
	}
	var prev *tablepb.Manifest
	for i, e := range entries {
		if e.m == nil {
			prev = nil
			continue
		}
		vi := VersionInfo{
			Version:   refs[i].Version,
			Timestamp: pbTime(e.m),
			Operation: "Unknown",
			Tags:      tagsOf[refs[i].Version],
			Fragments: len(e.m.GetFragments()),
		}
		if e.txn != nil {
			vi.Operation = operationName(e.txn)
			vi.ReadVersion = e.txn.GetReadVersion()
			vi.Predicate = e.txn.GetDelete().GetPredicate()
		}
		if prev != nil && prev.GetVersion()+1 != vi.Version {
			prev = nil
		}
		if prev == nil && vi.Version > 1 {
			vi.Baseline = true
		}
		var before *tablepb.Manifest
		if e.txn.GetOverwrite() == nil {
			before = prev
		} else if prev != nil {
			vi.FragmentsRemoved = len(prev.GetFragments())
			vi.RowsRemoved = liveRows(prev)
		}
		diffFragments(before, e.m, &vi)
		vi.TotalRows = liveRows(e.m)
		out = append(out, vi)
		prev = e.m
	}
	return out, nil
}

// diffFragments adds the fragment and row changes from before to after.
func diffFragments(before, after *tablepb.Manifest, vi *VersionInfo) {
	old := map[uint64]uint64{}
	for _, f := range before.GetFragments() {
		old[f.GetId()] = fragLive(f)
	}
	seen := map[uint64]bool{}
	for _, f := range after.GetFragments() {
		live := fragLive(f)
		seen[f.GetId()] = true
		was, ok := old[f.GetId()]
		switch {
		case !ok:
			vi.FragmentsAdded++
			vi.RowsAdded += live
		case live > was:
			vi.RowsAdded += live - was
		case live < was:
			vi.RowsRemoved += was - live
		}
	}
	for _, f := range before.GetFragments() {
		if !seen[f.GetId()] {
			vi.FragmentsRemoved++
			vi.RowsRemoved += old[f.GetId()]
		}
	}
}

func fragLive(f *tablepb.DataFragment) uint64 {
	p, d := f.GetPhysicalRows(), f.GetDeletionFile().GetNumDeletedRows()
	if d > p {
		return 0
	}
	return p - d
}

func liveRows(m *tablepb.Manifest) uint64 {
	var n uint64
	for _, f := range m.GetFragments() {
		n += fragLive(f)
	}
	return n
}

// readTransaction returns the transaction that produced a version: the
// inline section when the manifest has one, else the _transactions/ file.
// A version without either gives nil.
func readTransaction(ctx context.Context, st store.Store, k keys, mf *manifestFile) (*tablepb.Transaction, error) {
	var (
		b   []byte
		src string
		off int64 = -1
		err error
	)
	switch {
	case mf.m.TransactionSection != nil:
		src, off = mf.key, int64(mf.m.GetTransactionSection())
		b, err = mf.section(ctx, st, mf.m.GetTransactionSection())
	case mf.m.GetTransactionFile() != "":
		src = k.txn(mf.m.GetTransactionFile())
		b, err = readSmall(ctx, st, src)
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
	default:
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var txn tablepb.Transaction
	if err := lancepb.Unmarshal(b, &txn); err != nil {
		return nil, corruptErr(src, off, "transaction protobuf: %v", err)
	}
	return &txn, nil
}

// operationName names a transaction's operation (see VersionInfo).
func operationName(t *tablepb.Transaction) string {
	switch t.GetOperation().(type) {
	case *tablepb.Transaction_Append_:
		return "Append"
	case *tablepb.Transaction_Delete_:
		return "Delete"
	case *tablepb.Transaction_Overwrite_:
		if t.GetReadVersion() == 0 {
			return "Create"
		}
		return "Overwrite"
	case *tablepb.Transaction_CreateIndex_:
		return "CreateIndex"
	case *tablepb.Transaction_Rewrite_:
		return "Rewrite"
	case *tablepb.Transaction_Merge_:
		return "Merge"
	case *tablepb.Transaction_Restore_:
		return "Restore"
	case *tablepb.Transaction_ReserveFragments_:
		return "ReserveFragments"
	case *tablepb.Transaction_Update_:
		return "Update"
	case *tablepb.Transaction_Project_:
		return "Project"
	case *tablepb.Transaction_UpdateConfig_:
		return "UpdateConfig"
	case *tablepb.Transaction_DataReplacement_:
		return "DataReplacement"
	case *tablepb.Transaction_Clone_:
		return "Clone"
	case *tablepb.Transaction_UpdateBases_:
		return "UpdateBases"
	case *tablepb.Transaction_UpdateMemWalState_:
		return "UpdateMemWalState"
	case *tablepb.Transaction_DataOverlay_:
		return "DataOverlay"
	}
	return "Unknown"
}

func isNotSupported(err error) bool { return errors.Is(err, store.ErrNotSupported) }
