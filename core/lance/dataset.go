package lance

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// OpenOptions selects the version Open reads. The zero value opens the
// latest version. Setting both fields is an error.
type OpenOptions struct {
	Version uint64 // a version number, or 0
	Tag     string // a tag name, or ""
	// Files caches opened data files; share one across Opens of a dataset
	// (a reader that follows new versions) so unchanged files are not
	// opened again. Nil gives the Dataset (and the versions committed on
	// top of it) a cache of its own.
	Files *FileCache
	// Warn, when set, receives the manifest names the search for the
	// latest version ignored (see ListOptions).
	Warn func(error)
}

// Dataset is one version of a Lance dataset: its manifest, decoded. It is
// immutable and safe for concurrent use; scans and takes read data files
// through the store it was opened with.
type Dataset struct {
	st     store.Store
	k      keys
	mf     *manifestFile
	schema *lancefile.Schema
	arrow  *arrow.Schema
	frags  []Fragment
	byID   map[uint64]int // fragment id -> index in frags

	byFieldOnce sync.Once
	byField     map[int32]*lancefile.Field // schema fields by id, built on first use

	idOnce sync.Once
	id     string // ManifestID, computed on first use
}

// Fragment describes one fragment of a version. Paths are relative to the
// dataset root.
type Fragment struct {
	ID           uint64
	PhysicalRows uint64 // rows in the data files, deleted ones included
	DeletedRows  uint64 // from the manifest's deletion file entry
	Files        []DataFileInfo
	DeletionFile string // e.g. "_deletions/0-2-17824774954798410326.arrow"; "" when none

	pb *tablepb.DataFragment
}

// DataFileInfo describes one data file of a fragment.
type DataFileInfo struct {
	Path    string // e.g. "data/0101…df.lance"
	Size    int64  // 0 when the manifest does not record it
	Version string // file format version as lance names it: "2.0", "2.1"; "0.1" for the legacy format
}

// Open reads one version of the dataset whose files live under root (a key
// prefix such as "t.lance", or "" when the store is rooted at the dataset).
//
// Cost, on a store that implements store.TailReader and a manifest under
// 64 KiB: the latest version takes 2 requests on a listing store (a limit-1
// listing, which gives the manifest's size, and one read) when manifests have
// V2 names, a full listing plus one read with V1 names; on a store that
// cannot list, 3 requests when latest_version_hint.json is current (hint,
// manifest N and the missing N+1, the last two concurrent). A given version
// costs one read (V2 names) or two (V1); a tag adds one read. On a store
// without store.TailReader every read of an object of unknown size (the hint,
// a tag, a manifest found by probing) costs a Stat more.
func Open(ctx context.Context, st store.Store, root string, opts OpenOptions) (*Dataset, error) {
	k := newKeys(root, opts.Files)
	var (
		mf  *manifestFile
		err error
	)
	switch {
	case opts.Tag != "" && opts.Version != 0:
		return nil, fmt.Errorf("lance: open %q: give a version or a tag, not both", root)
	case opts.Tag != "":
		tag, err := readTag(ctx, st, k, opts.Tag)
		if err != nil {
			return nil, err
		}
		mf, err = readVersion(ctx, st, k, tag.Version)
		if err != nil {
			return nil, fmt.Errorf("tag %q: %w", opts.Tag, err)
		}
	case opts.Version != 0:
		mf, err = readVersion(ctx, st, k, opts.Version)
	default:
		mf, err = openLatest(ctx, st, k, opts.Warn)
	}
	if err != nil {
		return nil, err
	}
	return newDataset(st, k, mf)
}

// openLatest reads the newest manifest; warn (when not nil) receives the
// manifest names the listing ignored.
func openLatest(ctx context.Context, st store.Store, k keys, warn func(error)) (*manifestFile, error) {
	return scopedLatest(ctx, st, k, func(ctx context.Context) (*manifestFile, error) {
		return findLatest(ctx, st, k, warn)
	})
}

// findLatest is openLatest without a scope (but speculative in a
// speculative one: see byHint).
func findLatest(ctx context.Context, st store.Store, k keys, warn func(error)) (*manifestFile, error) {
	ref, err := latestByListing(ctx, st, k, warn)
	if isNotSupported(err) {
		return byHint(ctx, st, k)
	}
	if err != nil {
		return nil, err
	}
	mf, err := readManifest(ctx, st, ref.Key, ref.Size)
	if err != nil {
		return nil, err
	}
	mf.naming = ref.Naming
	return mf, nil
}

// newDataset validates a manifest and builds the Dataset.
func newDataset(st store.Store, k keys, mf *manifestFile) (*Dataset, error) {
	return newDatasetFrom(st, k, mf, nil, nil)
}

// newDatasetFrom is newDataset for the manifest a commit of txn on top of
// prev just created: when txn keeps the schema, prev's decoded schema is
// reused instead of decoded again.
func newDatasetFrom(st store.Store, k keys, mf *manifestFile, prev *Dataset, txn *tablepb.Transaction) (*Dataset, error) {
	m := mf.m
	if err := checkReaderFlags(mf.key, m.GetReaderFeatureFlags()); err != nil {
		return nil, err
	}
	if v, _, ok := parseManifestName(baseName(mf.key)); ok && v != m.GetVersion() {
		return nil, corruptErr(mf.key, mf.pos, "manifest says version %d", m.GetVersion())
	}
	var (
		schema *lancefile.Schema
		as     *arrow.Schema
	)
	if prev != nil && keepsSchema(txn) {
		schema, as = prev.schema, prev.arrow
	} else {
		var err error
		if schema, err = lancefile.SchemaFromProto(m.GetFields(), m.GetSchemaMetadata()); err != nil {
			return nil, corruptErr(mf.key, mf.pos, "schema: %v", err)
		}
		as = schema.Arrow()
	}
	if err := checkMaxFragmentID(mf.key, mf.pos, m); err != nil {
		return nil, err
	}
	d := &Dataset{st: st, k: k, mf: mf, schema: schema, arrow: as, byID: make(map[uint64]int, len(m.GetFragments()))}
	for _, pf := range m.GetFragments() {
		if _, dup := d.byID[pf.GetId()]; dup {
			return nil, corruptErr(mf.key, mf.pos, "fragment id %d appears twice", pf.GetId())
		}
		if prev != nil {
			// A fragment the commit left alone is the same message.
			if i, ok := prev.byID[pf.GetId()]; ok && prev.frags[i].pb == pf {
				d.byID[pf.GetId()] = len(d.frags)
				d.frags = append(d.frags, prev.frags[i])
				continue
			}
		}
		if n := len(pf.GetOverlays()); n > 0 {
			// Lance writes overlays only under reader feature flag 64,
			// which checkReaderFlags refuses; without the flag they still
			// hold newer values than the data files.
			return nil, fmt.Errorf("%w: %s: fragment %d has %d data overlay files, which kv0 does not read",
				ErrUnsupportedFeature, mf.key, pf.GetId(), n)
		}
		f := Fragment{ID: pf.GetId(), PhysicalRows: pf.GetPhysicalRows(), pb: pf}
		for _, df := range pf.GetFiles() {
			if err := checkDataFileEntry(mf.key, mf.pos, pf.GetId(), df); err != nil {
				return nil, err
			}
			f.Files = append(f.Files, DataFileInfo{
				Path:    dataDir + "/" + df.GetPath(),
				Size:    int64(min(df.GetFileSizeBytes(), 1<<62)),
				Version: fileVersion(df),
			})
		}
		if del := pf.GetDeletionFile(); del != nil {
			f.DeletedRows = del.GetNumDeletedRows()
			f.DeletionFile = deletionsDir + "/" + deletionFileName(pf.GetId(), del)
			if f.PhysicalRows > 0 && f.DeletedRows > f.PhysicalRows {
				return nil, corruptErr(mf.key, mf.pos, "fragment %d: %d deleted rows of %d", pf.GetId(), f.DeletedRows, f.PhysicalRows)
			}
		}
		d.byID[f.ID] = len(d.frags)
		d.frags = append(d.frags, f)
	}
	return d, nil
}

// keepsSchema reports whether committing txn leaves the schema (fields and
// schema metadata) as it was.
func keepsSchema(txn *tablepb.Transaction) bool {
	switch txn.GetOperation().(type) {
	case *tablepb.Transaction_Append_, *tablepb.Transaction_Delete_, *tablepb.Transaction_Update_,
		*tablepb.Transaction_Rewrite_, *tablepb.Transaction_ReserveFragments_, *tablepb.Transaction_UpdateConfig_:
		return true
	}
	return false
}

func baseName(key string) string {
	for i := len(key) - 1; i >= 0; i-- {
		if key[i] == '/' {
			return key[i+1:]
		}
	}
	return key
}

// fileVersion names a data file's format version as the manifest records it.
func fileVersion(df *tablepb.DataFile) string {
	maj, mnr := df.GetFileMajorVersion(), df.GetFileMinorVersion()
	if maj == 0 && mnr < 3 {
		return "0.1" // lance's name of the legacy format (alias "legacy")
	}
	switch {
	case maj == 0 && mnr == 3:
		return "2.0"
	case maj == 2 && mnr == 0:
		return "2.0"
	case maj == 2 && mnr == 1:
		return "2.1"
	case maj == 2 && mnr == 2:
		return "2.2"
	}
	return fmt.Sprintf("%d.%d", maj, mnr)
}

// deletionFileName is the file name of a fragment's deletion file.
func deletionFileName(fragID uint64, del *tablepb.DeletionFile) string {
	ext := "arrow"
	if del.GetFileType() == tablepb.DeletionFile_BITMAP {
		ext = "bin"
	}
	return fmt.Sprintf("%d-%d-%d.%s", fragID, del.GetReadVersion(), del.GetId(), ext)
}

// Version returns the version number.
func (d *Dataset) Version() uint64 { return d.mf.m.GetVersion() }

// Timestamp returns the commit time of the version (UTC), or the zero time
// when the manifest does not record one.
func (d *Dataset) Timestamp() time.Time { return pbTime(d.mf.m) }

func pbTime(m *tablepb.Manifest) time.Time {
	ts := m.GetTimestamp()
	if ts == nil {
		return time.Time{}
	}
	return time.Unix(ts.GetSeconds(), int64(ts.GetNanos())).UTC()
}

// DataFormat returns the data file format version, e.g. "2.1". Manifests
// that do not record it get the version of the first data file, or "0.1"
// (lance's name of the legacy format).
func (d *Dataset) DataFormat() string {
	if v := d.mf.m.GetDataFormat().GetVersion(); v != "" {
		return v
	}
	for _, f := range d.frags {
		if len(f.Files) > 0 {
			return f.Files[0].Version
		}
	}
	return "0.1"
}

// Schema returns the dataset schema. Callers must not modify it.
func (d *Dataset) Schema() *lancefile.Schema { return d.schema }

// ArrowSchema returns the dataset schema as an Arrow schema; fields of types
// kv0 cannot read appear with the Null type (see lancefile.Field.Err).
func (d *Dataset) ArrowSchema() *arrow.Schema { return d.arrow }

// Fragments returns the fragments in manifest order (the scan order). The
// slice is a copy; the Files slices are shared and must not be modified.
func (d *Dataset) Fragments() []Fragment { return append([]Fragment(nil), d.frags...) }

// Config returns a copy of the table configuration (Manifest.config).
func (d *Dataset) Config() map[string]string { return maps.Clone(d.mf.m.GetConfig()) }

// ManifestKey returns the store key of the version's manifest.
func (d *Dataset) ManifestKey() string { return d.mf.key }

// CountRows returns the number of live rows: the sum over fragments of
// physical rows minus deleted rows, from the manifest alone. Fragments from
// writers too old to record those counts make it read the missing figures
// (a data file footer or a deletion file).
func (d *Dataset) CountRows(ctx context.Context) (uint64, error) {
	var total uint64
	for i := range d.frags {
		f := &d.frags[i]
		phys, deleted := f.PhysicalRows, f.DeletedRows
		if phys == 0 && len(f.Files) > 0 {
			n, err := d.physicalRows(ctx, f)
			if err != nil {
				return 0, err
			}
			phys = n
		}
		if f.DeletionFile != "" && deleted == 0 {
			del, err := d.loadDeletions(ctx, f, phys)
			if err != nil {
				return 0, err
			}
			deleted = del.count()
		}
		if deleted > phys {
			return 0, corruptErr(d.mf.key, -1, "fragment %d: %d deleted rows of %d", f.ID, deleted, phys)
		}
		total += phys - deleted
	}
	return total, nil
}

// physicalRows asks the first data file of f for its row count.
func (d *Dataset) physicalRows(ctx context.Context, f *Fragment) (uint64, error) {
	if err := d.checkFiles(f); err != nil {
		return 0, err
	}
	df := f.pb.GetFiles()[0]
	lf, err := d.openDataFile(ctx, df)
	if err != nil {
		return 0, err
	}
	if err := d.checkUnrecordedRows(f, df, lf.NumRows()); err != nil {
		return 0, err
	}
	return lf.NumRows(), nil
}

// checkFiles refuses fragments kv0 cannot read before any I/O: data files
// under external base paths and data files of unsupported format versions.
// The version error is a *lancefile.FormatError matching
// lancefile.ErrUnsupportedVersion, naming the file and its version.
func (d *Dataset) checkFiles(f *Fragment) error {
	if len(f.Files) == 0 {
		return corruptErr(d.mf.key, -1, "fragment %d has no data files", f.ID)
	}
	for _, df := range f.pb.GetFiles() {
		key := d.k.data(df.GetPath())
		if df.BaseId != nil {
			return fmt.Errorf("%w: fragment %d: data file %s lives under external base path %d",
				ErrUnsupportedFeature, f.ID, key, df.GetBaseId())
		}
		switch v := fileVersion(df); v {
		case "2.0", "2.1", "2.2":
		case "0.1":
			return &lancefile.FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: lancefile.ErrUnsupportedVersion,
				Msg: fmt.Sprintf("format 0.1 (legacy, file version %d.%d; kv0 reads 2.0, 2.1 and 2.2)", df.GetFileMajorVersion(), df.GetFileMinorVersion())}
		case "2.3":
			return &lancefile.FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: lancefile.ErrUnsupportedVersion,
				Msg: "format 2.3 (lance's unstable \"next\" format; kv0 reads 2.0, 2.1 and 2.2)"}
		default:
			return &lancefile.FormatError{File: key, Column: -1, Page: -1, Offset: -1, Err: lancefile.ErrUnsupportedVersion,
				Msg: fmt.Sprintf("format %s (kv0 reads 2.0, 2.1 and 2.2)", v)}
		}
	}
	return nil
}
