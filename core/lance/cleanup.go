package lance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kv0/kv0/core/store"
)

// ModTimeStore is an optional store interface: the last modification time
// of an object. CleanupOldVersions uses it to age files that no manifest
// references (leftovers of failed or in-flight commits); on stores without
// it such files are kept unless CleanupOptions.DeleteUnverified is set.
type ModTimeStore interface {
	ModTime(ctx context.Context, key string) (time.Time, error)
}

// CleanupOptions tune CleanupOldVersions. The zero value is safe with
// concurrent writers.
type CleanupOptions struct {
	// RetainVersions keeps at least this many of the newest versions
	// whatever their age (the latest is always kept).
	RetainVersions int
	// DeleteUnverified removes files no manifest references whatever their
	// age. Only safe when no other writer is committing.
	DeleteUnverified bool
	// UnverifiedOlderThan is the age past which a file no manifest
	// references is presumed abandoned rather than part of a commit in
	// flight (default: olderThan). Automatic cleanup uses 7 days, as Lance.
	UnverifiedOlderThan time.Duration
	// Now is the current time (tests); nil means time.Now.
	Now func() time.Time
	// Progress, when set, is called with the files examined so far and the
	// total.
	Progress func(done, total int64)
	// Warn, when set, receives the manifest names the listing ignored
	// (see ListOptions); cleanup neither reads nor removes those files.
	Warn func(error)
}

// CleanupStats counts what CleanupOldVersions removed.
type CleanupStats struct {
	VersionsRemoved         int
	DataFilesRemoved        int
	DeletionFilesRemoved    int
	TransactionFilesRemoved int
	IndexFilesRemoved       int
	BytesRemoved            int64
}

// CleanupOldVersions removes the versions of the dataset at root whose
// commit time is more than olderThan ago, except the latest version, tagged
// versions and the newest RetainVersions, and then the files no retained
// version needs: data files, deletion files, transaction files and index
// directories. A file a removed version referenced is removed at once; a
// file no manifest references (left by a failed commit, or by one in flight)
// is removed only when the store reports it older than olderThan (or
// UnverifiedOlderThan; see ModTimeStore) or DeleteUnverified is set.
// Manifests go first, so a crash midway leaves only unreferenced files. It
// needs a store that can list.
func CleanupOldVersions(ctx context.Context, st store.Store, root string, olderThan time.Duration, opts CleanupOptions) (CleanupStats, error) {
	var stats CleanupStats
	k := keys{root: root}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	cutoff := now.Add(-olderThan)
	unverifiedCutoff := cutoff
	if opts.UnverifiedOlderThan > 0 {
		unverifiedCutoff = now.Add(-opts.UnverifiedOlderThan)
	}
	refs, err := ListVersions(ctx, st, root, ListOptions{Warn: opts.Warn})
	if err != nil {
		return stats, err
	}
	tags, err := ListTags(ctx, st, root)
	if err != nil {
		return stats, err
	}
	tagged := map[uint64]bool{}
	for _, t := range tags {
		tagged[t.Version] = true
	}
	// Read every manifest and fold the files it references into keep (a
	// version that stays) or old (one that goes) at once: a manifest is
	// dropped as soon as it is read, so memory follows the distinct files,
	// not versions × fragments (a table of 10,000 versions holds ~50M
	// fragment entries across its manifests).
	keep := map[string]bool{}
	old := map[string]bool{}
	retained := make([]bool, len(refs))
	var foldMu sync.Mutex
	err = parallel(ctx, len(refs), func(ctx context.Context, i int) error {
		mf, err := readManifest(ctx, st, refs[i].Key, refs[i].Size)
		if err != nil {
			return err
		}
		mf.naming = refs[i].Naming
		d, err := newDataset(st, k, mf)
		if err != nil {
			return err
		}
		files, err := referencedFiles(ctx, d)
		if err != nil {
			return err
		}
		r := refs[i]
		retain := i == len(refs)-1 || tagged[r.Version] || i >= len(refs)-opts.RetainVersions ||
			!d.Timestamp().Before(cutoff)
		foldMu.Lock()
		defer foldMu.Unlock()
		retained[i] = retain
		into := old
		if retain {
			into = keep
		}
		for _, f := range files {
			into[f] = true
		}
		return nil
	})
	if err != nil {
		return stats, err
	}
	var remove []VersionRef
	for i, r := range refs {
		if !retained[i] {
			remove = append(remove, r)
		}
	}
	for _, r := range remove {
		if err := st.Delete(ctx, r.Key); err != nil {
			return stats, err
		}
		stats.VersionsRemoved++
	}
	// Then the files.
	var objs []store.ObjectInfo
	for _, dir := range []string{dataDir, deletionsDir, transactionsDir, indicesDir} {
		o, err := st.List(ctx, store.ListOptions{Prefix: store.Join(root, dir) + "/"})
		if err != nil {
			return stats, err
		}
		objs = append(objs, o...)
	}
	mt, _ := st.(ModTimeStore)
	var mu sync.Mutex
	var done int64
	err = parallel(ctx, len(objs), func(ctx context.Context, i int) error {
		o := objs[i]
		defer func() {
			if opts.Progress != nil {
				mu.Lock()
				done++
				opts.Progress(done, int64(len(objs)))
				mu.Unlock()
			}
		}()
		kind, ref := classify(k, o.Key)
		if kind == fileOther || keep[ref] {
			return nil
		}
		if !old[ref] && !opts.DeleteUnverified {
			if mt == nil {
				return nil
			}
			t, err := mt.ModTime(ctx, o.Key)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			if !t.Before(unverifiedCutoff) {
				return nil
			}
		}
		if err := st.Delete(ctx, o.Key); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		stats.BytesRemoved += o.Size
		switch kind {
		case fileData:
			stats.DataFilesRemoved++
		case fileDeletion:
			stats.DeletionFilesRemoved++
		case fileTxn:
			stats.TransactionFilesRemoved++
		case fileIndex:
			stats.IndexFilesRemoved++
		}
		return nil
	})
	if err != nil {
		return stats, fmt.Errorf("lance: cleanup of %q: %w", root, err)
	}
	return stats, nil
}

const indicesDir = "_indices"

type fileKind int

const (
	fileOther fileKind = iota
	fileData
	fileDeletion
	fileTxn
	fileIndex
)

// classify tells what kind of dataset file key is and the reference that
// keeps it: the key itself, or for index files their index directory.
func classify(k keys, key string) (fileKind, string) {
	rel := strings.TrimPrefix(key, store.Join(k.root, "x")[:len(store.Join(k.root, "x"))-1])
	switch {
	case strings.HasPrefix(rel, dataDir+"/") && strings.HasSuffix(rel, ".lance"):
		return fileData, key
	case strings.HasPrefix(rel, deletionsDir+"/") && (strings.HasSuffix(rel, ".arrow") || strings.HasSuffix(rel, ".bin")):
		return fileDeletion, key
	case strings.HasPrefix(rel, transactionsDir+"/") && strings.HasSuffix(rel, ".txn"):
		return fileTxn, key
	case strings.HasPrefix(rel, indicesDir+"/"):
		parts := strings.SplitN(rel, "/", 3)
		if len(parts) == 3 {
			return fileIndex, store.Join(k.root, indicesDir, parts[1])
		}
	}
	return fileOther, ""
}

// referencedFiles lists the files a version needs: its data and deletion
// files, its transaction file and its index directories.
func referencedFiles(ctx context.Context, d *Dataset) ([]string, error) {
	var out []string
	for _, f := range d.frags {
		for _, df := range f.pb.GetFiles() {
			out = append(out, d.k.data(df.GetPath()))
		}
		if del := f.pb.GetDeletionFile(); del != nil {
			out = append(out, d.k.deletion(deletionFileName(f.ID, del)))
		}
	}
	if t := d.mf.m.GetTransactionFile(); t != "" {
		out = append(out, d.k.txn(t))
	}
	idx, err := readIndices(ctx, d)
	if err != nil {
		return nil, err
	}
	for _, im := range idx {
		if u := im.GetUuid().GetUuid(); len(u) == 16 {
			out = append(out, store.Join(d.k.root, indicesDir, uuidString([16]byte(u))))
		}
	}
	return out, nil
}
