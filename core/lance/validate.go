package lance

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// Consistency checks of the reader. A manifest carries no checksum, so a
// damaged byte can turn it into another valid protobuf that points the
// reader at the wrong columns, drops the column indices or a field, or
// changes a count. What can be checked without a request is checked:
//
//   - at Open, from the manifest alone (checkDataFileEntry,
//     checkMaxFragmentID, and lancefile.SchemaFromProto for the schema):
//     every 2.x data file lists as many column indices as field ids; field
//     ids are tombstones (-2) or non-negative and unique within the file;
//     column indices are -1 or non-negative and unique within the file;
//     max_fragment_id, when set, is at least every fragment id; deleted
//     rows do not outnumber physical rows;
//   - when a fragment's data files are opened for reading (checkOpened,
//     checkHeld), from the footer the read fetches anyway: the file has
//     exactly as many columns as the manifest gives it column indices,
//     each index names one of them, the format version is the file's,
//     every field id the manifest gives the file is in the file's own
//     schema (when the footer read covered it) with the same type as in
//     the dataset schema, the row count equals the fragment's
//     physical_rows (checkUnrecordedRows when that is 0), a file is not
//     shorter than the size the manifest records, and no non-nullable
//     column is missing from every data file;
//   - when rows are decoded (lancefile.Reader), a non-nullable field never
//     holds a null under valid parents; when a deletion file is read, it
//     holds as many rows as the manifest's num_deleted_rows.
//
// Unknown protobuf fields are skipped: Lance extends its messages with new
// fields and announces breaking changes by reader feature flags (which
// checkReaderFlags refuses when unknown). A flipped bit in a tag byte also
// makes an unknown field, of a large number, behind which the field the tag
// began vanishes together with whatever its new length swallows; the checks
// above catch what that changes without relying on the set of field numbers:
// lost column indices (counted against field ids and the file's columns), a
// lost deletion file (Lance writes physical_rows after it, and the bytes
// the vanished field swallows take that count or leave bytes that fail to
// decode), lost field ids (against the file's own schema).
//
// Lance keeps the ids of dropped columns in the data files (only the
// schema forgets them), so a data file may list ids the dataset schema does
// not have: that alone is not corruption. Fields a manifest change can
// still alter without any check noticing are listed in docs/architecture.md
// ("Reading a dataset").

// checkDataFileEntry checks what the manifest at key says about data file df
// of fragment frag, before any I/O.
func checkDataFileEntry(key string, pos int64, frag uint64, df *tablepb.DataFile) error {
	fields, cols := df.GetFields(), df.GetColumnIndices()
	// A path is a key under data/: never empty, absolute, with NUL,
	// backslash or dot segments (which would leave the dataset), and text.
	if p := df.GetPath(); !utf8.ValidString(p) || store.ValidateKey("data/"+p) != nil {
		return corruptErr(key, pos, "fragment %d: data file path %q is not a file name under data/", frag, p)
	}
	if fileVersion(df) == "0.1" {
		// Legacy (0.x) files record no column indices; they are refused
		// when scanned.
		return nil
	}
	if len(cols) != len(fields) {
		return corruptErr(key, pos, "fragment %d file %s: %d field ids but %d column indices",
			frag, df.GetPath(), len(fields), len(cols))
	}
	for k, id := range fields {
		if id < 0 && id != tombstone {
			return corruptErr(key, pos, "fragment %d file %s: field id %d", frag, df.GetPath(), id)
		}
		if c := cols[k]; c < -1 {
			return corruptErr(key, pos, "fragment %d file %s: column index %d", frag, df.GetPath(), c)
		}
	}
	if id, ok := firstRepeat(fields); ok {
		return corruptErr(key, pos, "fragment %d file %s: field id %d listed twice", frag, df.GetPath(), id)
	}
	if c, ok := firstRepeat(cols); ok {
		return corruptErr(key, pos, "fragment %d file %s: column index %d listed twice", frag, df.GetPath(), c)
	}
	return nil
}

// firstRepeat returns a non-negative value that xs holds more than once.
// It allocates nothing for the short lists data files usually have.
func firstRepeat(xs []int32) (int32, bool) {
	if len(xs) > 32 {
		s := slices.Clone(xs)
		slices.Sort(s)
		for i := 1; i < len(s); i++ {
			if s[i] >= 0 && s[i] == s[i-1] {
				return s[i], true
			}
		}
		return 0, false
	}
	for i, x := range xs {
		if x >= 0 && slices.Contains(xs[i+1:], x) {
			return x, true
		}
	}
	return 0, false
}

// checkMaxFragmentID checks that max_fragment_id, when the manifest records
// it, is at least every fragment id (a writer takes new ids above it).
func checkMaxFragmentID(key string, pos int64, m *tablepb.Manifest) error {
	if m.MaxFragmentId == nil {
		return nil
	}
	for _, f := range m.GetFragments() {
		if f.GetId() > uint64(m.GetMaxFragmentId()) {
			return corruptErr(key, pos, "fragment id %d is above max_fragment_id %d", f.GetId(), m.GetMaxFragmentId())
		}
	}
	return nil
}

// checkOpened checks data file df, just opened as lf, against
// the manifest and the dataset schema. It reads nothing.
// (openFragment compares the row counts.)
func (d *Dataset) checkOpened(df *tablepb.DataFile, lf *lancefile.File) error {
	if v := fileVersion(df); v != lf.Version().String() {
		return corruptErr(lf.Key(), -1, "manifest %s says format %s, the file says %s", d.mf.key, v, lf.Version())
	}
	fields, cols := df.GetFields(), df.GetColumnIndices()
	n := 0
	for _, c := range cols {
		if c >= 0 {
			n++
			if int(c) >= lf.NumColumns() {
				return corruptErr(lf.Key(), -1, "manifest %s gives the file column index %d, the file has %d columns",
					d.mf.key, c, lf.NumColumns())
			}
		}
	}
	if n != lf.NumColumns() {
		return corruptErr(lf.Key(), -1, "manifest %s gives the file %d columns, the file has %d",
			d.mf.key, n, lf.NumColumns())
	}
	if lf.Schema() == nil {
		return nil // the footer read did not cover the file's schema
	}
	for k, id := range fields {
		if id == tombstone || cols[k] < 0 {
			continue
		}
		own := lf.SchemaField(id)
		if own == nil {
			return corruptErr(lf.Key(), -1, "manifest %s lists field id %d, which the file's schema does not have",
				d.mf.key, id)
		}
		if ds := d.fieldByID(id); ds != nil && ds.LogicalType != own.LogicalType {
			return corruptErr(lf.Key(), -1, "field id %d (%q) has type %q in manifest %s but %q in the file",
				id, ds.Name, ds.LogicalType, d.mf.key, own.LogicalType)
		}
	}
	return nil
}

// checkHeld refuses to read a non-nullable top-level field that no data
// file of f holds: it would read as nulls. (Lance adds columns to existing
// fragments without data only when they are nullable.)
func (d *Dataset) checkHeld(f *Fragment, fields []*lancefile.Field, plan []int) error {
	for i, j := range plan {
		if j < 0 && !fields[i].Nullable {
			return corruptErr(d.mf.key, -1, "fragment %d: no data file holds the non-nullable column %q (field id %d)",
				f.ID, fields[i].Name, fields[i].ID)
		}
	}
	return nil
}

// fieldByID returns the dataset schema's field with id id, or nil.
func (d *Dataset) fieldByID(id int32) *lancefile.Field {
	d.byFieldOnce.Do(func() {
		d.byField = map[int32]*lancefile.Field{}
		d.schema.Walk(func(x *lancefile.Field) { d.byField[x.ID] = x })
	})
	return d.byField[id]
}

// checkUnrecordedRows checks a fragment f whose manifest entry records no
// physical row count (0) against data file df of it, which holds fileRows
// rows. Lance reads 0 as "not recorded", which only writers that predate
// the 2.x data files leave; every writer of 2.x files records the count.
// So a fragment of 2.x files that records 0 while its file holds rows lost
// the count to damage (a flipped tag whose unknown field swallowed it,
// perhaps with the deletion file before it), and reading the file's count
// instead would bring back deleted rows.
func (d *Dataset) checkUnrecordedRows(f *Fragment, df *tablepb.DataFile, fileRows uint64) error {
	if fileRows == 0 || fileVersion(df) == "0.1" {
		return nil
	}
	return corruptErr(d.mf.key, -1, "fragment %d records no physical rows, but its %s data file %s has %d",
		f.ID, fileVersion(df), df.GetPath(), fileRows)
}

// runMessages names, for the messages that decide what is read, the field
// numbers that hold one of them: Manifest (fields 1: Field, fragments 2:
// DataFragment), DataFragment (files 2: DataFile, deletion_file 3:
// DeletionFile). checkRuns descends into these (and checks the fields of
// Field, DataFile and DeletionFile without descending further).
var runMessages = map[string]map[protowire.Number]string{
	"manifest": {1: "field", 2: "fragment"},
	"fragment": {2: "data file", 3: "deletion file"},
}

// checkRuns walks the protobuf bytes b of a manifest and describes the
// first field that comes again after another field has come between its
// occurrences, in the manifest, a field, a fragment, a data file or a
// deletion file; it returns "" when there is none. Every protobuf encoder
// writes the elements of a repeated field one after the other (so do
// prost, which writes Lance's manifests, and kv0's own), whatever fields a
// newer Lance adds. A flipped bit in a tag byte breaks such a run: the tag
// grows into one of a large unknown number, and the element it began (a
// struct's member in the schema, a data file) vanishes behind it while the
// elements after it still follow; read on, the column would silently be
// gone. The number does not matter, so unknown fields stay allowed.
func checkRuns(b []byte) string { return walkRuns("manifest", b) }

func walkRuns(msg string, b []byte) string {
	var seen []protowire.Number // numbers whose run has ended, few per message
	last := protowire.Number(0)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Sprintf("%s: malformed field: %v", msg, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Sprintf("%s: malformed field %d: %v", msg, num, protowire.ParseError(m))
		}
		if num != last {
			if slices.Contains(seen, num) {
				return fmt.Sprintf("%s: field %d comes again after field %d (protobuf encoders write a field's elements together)", msg, num, last)
			}
			if last != 0 {
				seen = append(seen, last)
			}
			last = num
		}
		if sub, ok := runMessages[msg][num]; ok && typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(b[n:])
			if err := walkRuns(sub, v); err != "" {
				return err
			}
		}
		b = b[n+m:]
	}
	return ""
}
