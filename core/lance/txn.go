package lance

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/kv0/kv0/core/internal/lancepb/wktpb"

	"github.com/kv0/kv0/core/internal/lancepb"
	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/version"
)

// What kv0 records as the writer of the manifests it commits. Lance only
// treats a manifest specially when writer_version is absent (it then
// recomputes row counts on its next commit) or when the library is "lance"
// with a version older than 0.8.15 (it then recomputes index fragment
// bitmaps), so a foreign library name is the safe choice: lance 8 accepted
// manifests from another library name and kept their counts.
const (
	writerLibrary = "kv0"
	writerVersion = version.Version
)

// The data file formats kv0 writes (WriteOptions.DataFormat): 2.1, which
// lance 8 and older read, and 2.2, what current Lance writes by default.
const (
	DataFormat21 = "2.1"
	DataFormat22 = "2.2"
	// DefaultDataFormat is the format of new datasets.
	DefaultDataFormat = DataFormat22
)

// dataFormatName is the manifest's name of the Lance file format.
const dataFormatName = "lance"

// CheckDataFormat returns nil for the data formats kv0 writes ("" meaning
// the default) and an error matching ErrDataFormat for any other.
func CheckDataFormat(format string) error {
	if format == "" {
		return nil
	}
	_, err := writeVersion(format)
	return err
}

// writeVersion returns the lancefile version of a data format kv0 writes.
func writeVersion(format string) (lancefile.Version, error) {
	switch format {
	case DataFormat21:
		return lancefile.V2_1, nil
	case DataFormat22:
		return lancefile.V2_2, nil
	}
	return lancefile.Version{}, fmt.Errorf("%w: kv0 writes data files of format %s or %s, not %q", ErrDataFormat, DataFormat21, DataFormat22, format)
}

// checkFragmentFormats refuses new fragments whose data files are not in
// the dataset's format: lance refuses datasets that mix versions (unless a
// feature flag kv0 does not set allows it).
func checkFragmentFormats(m *tablepb.Manifest, frags []*tablepb.DataFragment) error {
	want := m.GetDataFormat().GetVersion()
	if want == "" {
		return nil
	}
	for _, f := range frags {
		for _, df := range f.GetFiles() {
			if got := fileVersion(df); got != want {
				return fmt.Errorf("%w: data file %s is format %s, the dataset's files are %s (a dataset never mixes formats)",
					ErrDataFormat, df.GetPath(), got, want)
			}
		}
	}
	return nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() [16]byte {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// uuidString formats u in the hyphenated form.
func uuidString(u [16]byte) string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// randomU64 returns a random 64-bit number (deletion file ids).
func randomU64() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:])
}

// newDataFileName returns a fresh data file name as Lance generates them:
// the first 3 bytes of a random UUID as 24 '0'/'1' characters, then the
// other 13 bytes in lowercase hex, then ".lance".
func newDataFileName() string {
	u := newUUID()
	b := make([]byte, 0, 24+26+6)
	for _, x := range u[:3] {
		for i := 7; i >= 0; i-- {
			b = append(b, '0'+(x>>i)&1)
		}
	}
	b = hex.AppendEncode(b, u[3:])
	return string(append(b, ".lance"...))
}

// newTransaction returns a transaction read at readVersion with a fresh uuid.
func newTransaction(readVersion uint64) *tablepb.Transaction {
	return &tablepb.Transaction{ReadVersion: readVersion, Uuid: uuidString(newUUID())}
}

// txnFileName is the file name (within _transactions/) of txn.
func txnFileName(txn *tablepb.Transaction) string {
	return fmt.Sprintf("%d-%s.txn", txn.GetReadVersion(), txn.GetUuid())
}

// schemaFields flattens a schema into the manifest's pre-order field list,
// with the legacy per-field encoding hint Lance still writes.
func schemaFields(s *lancefile.Schema) (fields []*filepb.Field, md map[string][]byte) {
	var add func(f *lancefile.Field, parent int32)
	add = func(f *lancefile.Field, parent int32) {
		enc := filepb.Encoding_PLAIN
		switch f.LogicalType {
		case "struct":
			enc = filepb.Encoding_NONE
		case "string", "large_string", "binary", "large_binary", "json":
			enc = filepb.Encoding_VAR_BINARY
		}
		pf := &filepb.Field{Name: f.Name, Id: f.ID, ParentId: parent, LogicalType: f.LogicalType, Nullable: f.Nullable, Encoding: enc}
		if len(f.Metadata) > 0 {
			pf.Metadata = make(map[string][]byte, len(f.Metadata))
			for k, v := range f.Metadata {
				pf.Metadata[k] = []byte(v)
			}
		}
		fields = append(fields, pf)
		for _, c := range f.Children {
			add(c, f.ID)
		}
	}
	for _, f := range s.Fields {
		add(f, -1)
	}
	if len(s.Metadata) > 0 {
		md = make(map[string][]byte, len(s.Metadata))
		for k, v := range s.Metadata {
			md[k] = []byte(v)
		}
	}
	return fields, md
}

// nextFragmentID is the first unused fragment id after m: max_fragment_id+1,
// or the largest fragment id + 1 when the manifest does not record it.
func nextFragmentID(m *tablepb.Manifest) uint64 {
	if m == nil {
		return 0
	}
	next := uint64(0)
	if m.MaxFragmentId != nil {
		next = uint64(m.GetMaxFragmentId()) + 1
	}
	for _, f := range m.GetFragments() {
		next = max(next, f.GetId()+1)
	}
	return next
}

// assignIDs gives fresh ids to the fragments whose id is 0, as Lance does
// (a fragment that already carries an id, e.g. from a reservation, keeps it).
func assignIDs(frags []*tablepb.DataFragment, next *uint64) []*tablepb.DataFragment {
	out := make([]*tablepb.DataFragment, len(frags))
	for i, f := range frags {
		f = f.CloneVT()
		if f.Id == 0 {
			f.Id = *next
			*next++
		}
		out[i] = f
	}
	return out
}

// featureFlags computes the reader and writer flag words of m: 1 when any
// fragment has a deletion file, 2 when fragments carry row id sequences, 8
// (writer only) when the table config is non-empty, 16 with base paths.
func featureFlags(m *tablepb.Manifest) (reader, writer uint64) {
	for _, f := range m.GetFragments() {
		if f.GetDeletionFile() != nil {
			reader |= flagDeletionFiles
			writer |= flagDeletionFiles
		}
		if f.GetRowIdSequence() != nil {
			reader |= flagStableRowIDs
			writer |= flagStableRowIDs
		}
	}
	if len(m.GetConfig()) > 0 {
		writer |= flagTableConfig
	}
	if len(m.GetBasePaths()) > 0 {
		reader |= flagBasePaths
		writer |= flagBasePaths
	}
	return reader, writer
}

// buildInput is what building the manifest of a new version needs.
type buildInput struct {
	cur      *tablepb.Manifest        // latest manifest; nil when the dataset does not exist
	curIdx   []*tablepb.IndexMetadata // its indices
	format   string                   // the data format an Overwrite chose ("" when none)
	txn      *tablepb.Transaction
	version  uint64
	restored *tablepb.Manifest        // Restore: the manifest of the restored version
	restIdx  []*tablepb.IndexMetadata // and its indices
	now      time.Time
}

// overwriteFormat is the data format an Overwrite gives the dataset: that of
// its data files, else the one the writer chose, else the dataset's, else
// the default.
func overwriteFormat(in buildInput, frags []*tablepb.DataFragment) string {
	for _, f := range frags {
		for _, df := range f.GetFiles() {
			return fileVersion(df)
		}
	}
	if in.format != "" {
		return in.format
	}
	if v := in.cur.GetDataFormat().GetVersion(); v != "" {
		return v
	}
	return DefaultDataFormat
}

// buildManifest builds the manifest of a new version from the latest one and
// a transaction, as Lance does: fragment ids continue from max_fragment_id,
// the feature flags are recomputed, indices that no longer describe the
// fragments are dropped. The result has no section positions yet.
func buildManifest(in buildInput) (*tablepb.Manifest, []*tablepb.IndexMetadata, error) {
	var m *tablepb.Manifest
	if in.cur != nil {
		m = shallowClone(in.cur)
	} else {
		m = &tablepb.Manifest{}
	}
	idx := slices.Clone(in.curIdx)
	next := nextFragmentID(in.cur)
	switch op := in.txn.GetOperation().(type) {
	case *tablepb.Transaction_Overwrite_:
		o := op.Overwrite
		m.Fields = o.GetSchema()
		m.SchemaMetadata = o.GetSchemaMetadata()
		// Lance numbers the fragments of an overwrite from 0 again.
		zero := uint64(0)
		m.Fragments = assignIDs(o.GetFragments(), &zero)
		idx = nil
		for k, v := range o.GetConfigUpsertValues() {
			if m.Config == nil {
				m.Config = map[string]string{}
			}
			m.Config[k] = v
		}
		m.DataFormat = &tablepb.Manifest_DataStorageFormat{FileFormat: dataFormatName, Version: overwriteFormat(in, o.GetFragments())}
		if err := checkFragmentFormats(m, o.GetFragments()); err != nil {
			return nil, nil, err
		}
	case *tablepb.Transaction_Append_:
		if in.cur == nil {
			return nil, nil, fmt.Errorf("lance: append to a dataset that does not exist")
		}
		if err := checkFragmentFormats(m, op.Append.GetFragments()); err != nil {
			return nil, nil, err
		}
		m.Fragments = append(m.Fragments, assignIDs(op.Append.GetFragments(), &next)...)
	case *tablepb.Transaction_Delete_:
		d := op.Delete
		m.Fragments = replaceFragments(m.Fragments, d.GetDeletedFragmentIds(), d.GetUpdatedFragments())
	case *tablepb.Transaction_Update_:
		u := op.Update
		if err := checkFragmentFormats(m, u.GetNewFragments()); err != nil {
			return nil, nil, err
		}
		m.Fragments = replaceFragments(m.Fragments, u.GetRemovedFragmentIds(), u.GetUpdatedFragments())
		m.Fragments = append(m.Fragments, assignIDs(u.GetNewFragments(), &next)...)
	case *tablepb.Transaction_Rewrite_:
		for _, g := range op.Rewrite.GetGroups() {
			if err := checkFragmentFormats(m, g.GetNewFragments()); err != nil {
				return nil, nil, err
			}
		}
		var err error
		if m.Fragments, err = spliceGroups(m.Fragments, op.Rewrite.GetGroups(), &next); err != nil {
			return nil, nil, err
		}
		// kv0 does not remap index contents to the new fragments: an index
		// that covers a rewritten fragment is dropped (lance then scans).
		old := roaring.New()
		for _, g := range op.Rewrite.GetGroups() {
			for _, f := range g.GetOldFragments() {
				old.Add(uint32(f.GetId()))
			}
		}
		idx = slices.DeleteFunc(idx, func(im *tablepb.IndexMetadata) bool {
			bm := roaring.New()
			if _, err := bm.FromUnsafeBytes(slices.Clone(im.GetFragmentBitmap())); err != nil {
				return true
			}
			return bm.Intersects(old)
		})
	case *tablepb.Transaction_ReserveFragments_:
		// Like Lance: the new high-water mark is the old one (0 when none)
		// plus n, so reserved ids are never 0 (id 0 means "unassigned").
		n := uint64(op.ReserveFragments.GetNumFragments())
		if n == 0 {
			break
		}
		top := max(next, 1) - 1 + n
		if top > math.MaxUint32 {
			return nil, nil, fmt.Errorf("lance: fragment ids exhausted")
		}
		t := uint32(top)
		m.MaxFragmentId = &t
	case *tablepb.Transaction_Restore_:
		if in.restored == nil {
			return nil, nil, fmt.Errorf("lance: restore of version %d without its manifest", op.Restore.GetVersion())
		}
		keepMax := m.MaxFragmentId
		m = in.restored.CloneVT()
		idx = slices.Clone(in.restIdx)
		// Keep the high-water mark so that ids are never reused.
		if keepMax != nil && (m.MaxFragmentId == nil || *keepMax > m.GetMaxFragmentId()) {
			m.MaxFragmentId = keepMax
		}
	case *tablepb.Transaction_CreateIndex_:
		idx = applyCreateIndex(idx, op.CreateIndex) // index.go
	case *tablepb.Transaction_UpdateConfig_:
		if m.Config == nil {
			m.Config = map[string]string{}
		}
		applyUpdateMap(m.Config, op.UpdateConfig.GetConfigUpdates())
		if len(m.Config) == 0 {
			m.Config = nil
		}
	default:
		return nil, nil, fmt.Errorf("lance: kv0 cannot commit a %s transaction", operationName(in.txn))
	}
	if in.cur == nil && m.DataFormat == nil {
		m.DataFormat = &tablepb.Manifest_DataStorageFormat{FileFormat: dataFormatName, Version: overwriteFormat(in, nil)}
	}
	// Indices only describe fragments that still exist.
	live := roaring.New()
	for _, f := range m.Fragments {
		live.Add(uint32(f.GetId()))
	}
	for i, im := range idx {
		bm := roaring.New()
		if _, err := bm.FromUnsafeBytes(slices.Clone(im.GetFragmentBitmap())); err != nil {
			continue
		}
		if kept := roaring.And(bm, live); kept.GetCardinality() != bm.GetCardinality() {
			b, err := kept.ToBytes()
			if err != nil {
				return nil, nil, err
			}
			im = im.CloneVT()
			im.FragmentBitmap = b
			idx[i] = im
		}
	}
	// The high-water mark of fragment ids never decreases.
	for _, f := range m.Fragments {
		if f.GetId() > math.MaxUint32 {
			return nil, nil, fmt.Errorf("lance: fragment id %d does not fit the manifest", f.GetId())
		}
		if m.MaxFragmentId == nil || uint32(f.GetId()) > m.GetMaxFragmentId() {
			id := uint32(f.GetId())
			m.MaxFragmentId = &id
		}
	}
	m.Version = in.version
	m.VersionAuxData = 0
	m.IndexSection = nil
	m.TransactionSection = nil
	m.Tag = ""
	m.WriterVersion = &tablepb.Manifest_WriterVersion{Library: writerLibrary, Version: writerVersion}
	m.Timestamp = wktpb.NewTimestamp(in.now)
	m.TransactionFile = txnFileName(in.txn)
	m.ReaderFeatureFlags, m.WriterFeatureFlags = featureFlags(m)
	return m, idx, nil
}

// shallowClone copies a manifest for building the next one: lists and maps
// are new (so the copy can grow or change them), their elements and any
// sub-messages are shared with m. Manifests, once built, are never changed
// in place, and buildManifest replaces sub-messages rather than editing
// them, so sharing is safe and spares a deep copy of every fragment on every
// commit.
func shallowClone(m *tablepb.Manifest) *tablepb.Manifest {
	out := *m // scalars, sub-message pointers and unknown fields
	out.Fields = slices.Clone(m.Fields)
	out.Fragments = slices.Clone(m.Fragments)
	out.BasePaths = slices.Clone(m.BasePaths)
	out.SchemaMetadata = maps.Clone(m.SchemaMetadata)
	out.Config = maps.Clone(m.Config)
	out.TableMetadata = maps.Clone(m.TableMetadata)
	return &out
}

// replaceFragments drops the fragments in removed and replaces those in
// updated (matched by id), keeping the order.
func replaceFragments(frags []*tablepb.DataFragment, removed []uint64, updated []*tablepb.DataFragment) []*tablepb.DataFragment {
	out := make([]*tablepb.DataFragment, 0, len(frags))
	for _, f := range frags {
		if slices.Contains(removed, f.GetId()) {
			continue
		}
		for _, u := range updated {
			if u.GetId() == f.GetId() {
				f = u
			}
		}
		out = append(out, f)
	}
	return out
}

// spliceGroups replaces each rewrite group's old fragments by its new ones:
// in place when the old fragments are contiguous, else by removing them and
// appending the new ones (Lance's rule).
func spliceGroups(frags []*tablepb.DataFragment, groups []*tablepb.Transaction_Rewrite_RewriteGroup, next *uint64) ([]*tablepb.DataFragment, error) {
	out := slices.Clone(frags)
	for _, g := range groups {
		olds := g.GetOldFragments()
		news := assignIDs(g.GetNewFragments(), next)
		if len(olds) == 0 {
			out = append(out, news...)
			continue
		}
		start := slices.IndexFunc(out, func(f *tablepb.DataFragment) bool { return f.GetId() == olds[0].GetId() })
		if start < 0 {
			return nil, fmt.Errorf("lance: rewrite: fragment %d is not in the dataset", olds[0].GetId())
		}
		contiguous := start+len(olds) <= len(out)
		for i := 1; contiguous && i < len(olds); i++ {
			contiguous = out[start+i].GetId() == olds[i].GetId()
		}
		if contiguous {
			out = slices.Replace(out, start, start+len(olds), news...)
			continue
		}
		for _, o := range olds {
			i := slices.IndexFunc(out, func(f *tablepb.DataFragment) bool { return f.GetId() == o.GetId() })
			if i < 0 {
				return nil, fmt.Errorf("lance: rewrite: fragment %d is not in the dataset", o.GetId())
			}
			out = slices.Delete(out, i, i+1)
		}
		out = append(out, news...)
	}
	return out, nil
}

// applyUpdateMap applies an UpdateMap to a string map.
func applyUpdateMap(dst map[string]string, u *tablepb.Transaction_UpdateMap) {
	if u == nil {
		return
	}
	if u.GetReplace() {
		clear(dst)
	}
	for _, e := range u.GetUpdateEntries() {
		if e.Value == nil {
			delete(dst, e.GetKey())
		} else {
			dst[e.GetKey()] = e.GetValue()
		}
	}
}

// encodeManifestFile lays out a manifest file: the IndexSection (when there
// are indices) at offset 0, then the inline transaction, then the manifest
// and the footer. It sets m's section positions and returns the file and the
// manifest's position in it.
func encodeManifestFile(m *tablepb.Manifest, txn *tablepb.Transaction, idx []*tablepb.IndexMetadata) ([]byte, uint64, error) {
	var out []byte
	section := func(msg interface{ MarshalVT() ([]byte, error) }) (uint64, error) {
		b, err := msg.MarshalVT()
		if err != nil {
			return 0, err
		}
		if len(b) > math.MaxUint32 {
			return 0, fmt.Errorf("lance: manifest section of %d bytes", len(b))
		}
		pos := uint64(len(out))
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
		return pos, nil
	}
	if len(idx) > 0 {
		pos, err := section(&tablepb.IndexSection{Indices: idx})
		if err != nil {
			return nil, 0, err
		}
		m.IndexSection = &pos
	}
	pos, err := section(txn)
	if err != nil {
		return nil, 0, err
	}
	m.TransactionSection = &pos
	mpos, err := section(m)
	if err != nil {
		return nil, 0, err
	}
	out = binary.LittleEndian.AppendUint64(out, mpos)
	out = binary.LittleEndian.AppendUint16(out, 0)
	out = binary.LittleEndian.AppendUint16(out, 2)
	return append(out, manifestMagic...), mpos, nil
}

// readIndices returns the indices recorded in a manifest's IndexSection.
func readIndices(ctx context.Context, d *Dataset) ([]*tablepb.IndexMetadata, error) {
	if d == nil || d.mf.m.IndexSection == nil {
		return nil, nil
	}
	b, err := d.mf.section(ctx, d.st, d.mf.m.GetIndexSection())
	if err != nil {
		return nil, err
	}
	var sec tablepb.IndexSection
	if err := lancepb.Unmarshal(b, &sec); err != nil {
		return nil, corruptErr(d.mf.key, int64(d.mf.m.GetIndexSection()), "index section: %v", err)
	}
	return sec.GetIndices(), nil
}
