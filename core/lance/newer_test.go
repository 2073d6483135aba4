package lance

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/store"
)

// vtMessage is a generated lancepb message.
type vtMessage interface {
	MarshalVT() ([]byte, error)
	UnmarshalVT([]byte) error
}

// withUnknown returns a copy of m that carries the fields in extra (wire
// bytes) as unknown fields: the generated decoder keeps them and the
// encoder writes them again.
func withUnknown[T any, P interface {
	*T
	vtMessage
}](t *testing.T, m P, extra []byte) P {
	t.Helper()
	b, err := m.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	out := P(new(T))
	if err := out.UnmarshalVT(append(b, extra...)); err != nil {
		t.Fatal(err)
	}
	return out
}

// unknownFields returns wire bytes of fields a newer Lance might add: one of
// each wire type, at the field numbers given (the first of which carries
// marker, so that the test can find it in the file).
func unknownFields(marker string, nums ...protowire.Number) []byte {
	var b []byte
	for i, n := range nums {
		switch i % 4 {
		case 0:
			b = protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), []byte(marker))
		case 1:
			b = protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), 1<<40)
		case 2:
			b = protowire.AppendFixed64(protowire.AppendTag(b, n, protowire.Fixed64Type), 7)
		default:
			b = protowire.AppendFixed32(protowire.AppendTag(b, n, protowire.Fixed32Type), 9)
		}
	}
	return b
}

// TestUnknownFieldsAreSkipped: a manifest that a newer Lance extended, with
// fields kv0 does not know in the Manifest, the schema's Fields, the
// fragments, their data files and deletion files, reads as before, as
// Lance's contract wants (breaking changes come with reader feature flags).
// Small field numbers are what Lance would add next; large ones are
// legitimate too.
func TestUnknownFieldsAreSkipped(t *testing.T) {
	for _, v := range []uint64{4, 6} { // with deletion files, and the latest
		ctx := t.Context()
		st := loadFixture(t, "default")
		key := fixtureManifest
		if v == 4 {
			key = fixtureV4
		}
		want, err := renderVersion(ctx, st, "kv.lance", v)
		if err != nil {
			t.Fatal(err)
		}
		b, err := store.ReadAll(ctx, st, key)
		if err != nil {
			t.Fatal(err)
		}
		mf, err := decodeManifest(key, int64(len(b)), b, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := withUnknown(t, mf.m, unknownFields("manifest-ext", 22, 23, 400, 5000))
		m.TransactionSection = nil
		for i, f := range m.Fields {
			m.Fields[i] = withUnknown(t, f, unknownFields("field-ext", 13, 14, 15, 300))
		}
		for i, pf := range m.Fragments {
			pf = withUnknown(t, pf, unknownFields("fragment-ext", 12, 13, 76, 1000))
			for j, df := range pf.Files {
				pf.Files[j] = withUnknown(t, df, unknownFields("file-ext", 8, 9, 430, 70000))
			}
			if pf.DeletionFile != nil {
				pf.DeletionFile = withUnknown(t, pf.DeletionFile, unknownFields("deletion-ext", 5, 6, 99, 8))
			}
			m.Fragments[i] = pf
		}
		file := mustEncodeManifest(m, nil)
		for _, marker := range []string{"manifest-ext", "field-ext", "fragment-ext", "file-ext"} {
			if !bytes.Contains(file, []byte(marker)) {
				t.Fatalf("the encoded manifest lost the unknown field %q", marker)
			}
		}
		if v == 4 && !bytes.Contains(file, []byte("deletion-ext")) {
			t.Fatal("the encoded manifest lost the deletion file's unknown field")
		}
		if err := st.Put(ctx, key, file); err != nil {
			t.Fatal(err)
		}
		got, err := renderVersion(ctx, st, "kv.lance", v)
		if err != nil {
			t.Fatalf("version %d with unknown fields: %v", v, err)
		}
		if got != want {
			t.Fatalf("version %d with unknown fields reads differently:\n%s", v, firstDiff(want.rows, got.rows))
		}
		d, err := Open(ctx, st, "kv.lance", OpenOptions{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := d.CountRows(ctx); err != nil || n != 189 {
			t.Fatalf("version %d: CountRows %d, %v", v, n, err)
		}
		log, err := Log(ctx, st, "kv.lance")
		if err != nil || len(log) != 6 || log[v-1].TotalRows != 189 {
			t.Fatalf("log of the extended manifests: %+v, %v", log, err)
		}
	}
}

// TestDataOverlaysRefused: a fragment with data overlay files (newer values
// for some cells) is refused even when the manifest does not set reader
// feature flag 64: reading its data files alone would give the old values.
func TestDataOverlaysRefused(t *testing.T) {
	ctx := t.Context()
	st := loadFixture(t, "default")
	b, err := store.ReadAll(ctx, st, fixtureManifest)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := decodeManifest(fixtureManifest, int64(len(b)), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := mf.m.CloneVT()
	m.TransactionSection = nil
	df := m.Fragments[0].Files[0].CloneVT()
	df.Path = "overlay.lance"
	df.Fields, df.ColumnIndices = []int32{3}, []int32{0}
	m.Fragments[0].Overlays = []*tablepb.DataOverlayFile{{
		DataFile:         df,
		Coverage:         &tablepb.DataOverlayFile_SharedOffsetBitmap{SharedOffsetBitmap: []byte{1}},
		CommittedVersion: 6,
	}}
	if err := st.Put(ctx, fixtureManifest, mustEncodeManifest(m, nil)); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, st, "kv.lance", OpenOptions{})
	if !errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), "fragment 2 has 1 data overlay files") ||
		!strings.Contains(err.Error(), fixtureManifest) {
		t.Fatalf("got %v, want ErrUnsupportedFeature naming the overlays of fragment 2 and the manifest", err)
	}
}

// TestUnrecordedRowsCounted: CountRows, which reads a data file's footer for
// a fragment that records no physical rows, refuses one of 2.x files
// whose file has rows, as a scan does (TestReaderChecks).
func TestUnrecordedRowsCounted(t *testing.T) {
	ctx := t.Context()
	st := loadFixture(t, "default")
	b, err := store.ReadAll(ctx, st, fixtureV4)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := decodeManifest(fixtureV4, int64(len(b)), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := mf.m.CloneVT()
	m.TransactionSection = nil
	m.Fragments[0].PhysicalRows = 0
	if err := st.Put(ctx, fixtureV4, mustEncodeManifest(m, nil)); err != nil {
		t.Fatal(err)
	}
	d, err := Open(ctx, st, "kv.lance", OpenOptions{Version: 4})
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.CountRows(ctx)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "fragment 0 records no physical rows") {
		t.Fatalf("CountRows = %d, %v; want ErrCorrupt about fragment 0's physical rows", n, err)
	}
}

// TestOperationNames: the change log names every operation kv0's
// transaction proto knows, each differently (a version of an operation it
// cannot name shows as "Unknown").
func TestOperationNames(t *testing.T) {
	seen := map[string]string{}
	opField, _ := reflect.TypeFor[tablepb.Transaction]().FieldByName("Operation")
	for _, w := range tablepb.OneofWrappers {
		wt := reflect.TypeOf(w)
		if !wt.Implements(opField.Type) {
			continue
		}
		var txn tablepb.Transaction
		reflect.ValueOf(&txn).Elem().FieldByIndex(opField.Index).Set(reflect.New(wt.Elem()))
		txn.ReadVersion = 1 // an Overwrite of read version 0 is reported as Create
		name := operationName(&txn)
		if name == "Unknown" {
			t.Errorf("%s: operationName says Unknown", wt)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%s and %s are both named %q", wt, other, name)
		}
		seen[name] = wt.String()
	}
	for _, name := range []string{"Append", "Update", "Rewrite", "UpdateMemWalState", "DataOverlay"} {
		if _, ok := seen[name]; !ok {
			t.Errorf("no operation is named %q: %v", name, seen)
		}
	}
}

// TestInterruptedRun: an unknown field between two of the schema's Field
// messages, the trace of a flipped tag bit that hid the Field between
// them, fails the read as corruption naming the manifest; the same field
// after the last Field is read (TestUnknownFieldsAreSkipped).
func TestInterruptedRun(t *testing.T) {
	ctx := t.Context()
	st := loadFixture(t, "default")
	b, err := store.ReadAll(ctx, st, fixtureManifest)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := decodeManifest(fixtureManifest, int64(len(b)), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := mf.m.CloneVT()
	m.TransactionSection = nil
	op, err := m.Fields[1].MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	rest := m.CloneVT()
	rest.Fields = m.Fields[2:]
	restBytes, err := rest.MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	first, err := (&tablepb.Manifest{Fields: m.Fields[:1]}).MarshalVT()
	if err != nil {
		t.Fatal(err)
	}
	// seq, then op hidden in field 305 (as a flipped bit in its tag hides
	// it), then the rest of the manifest, which begins with key and value.
	pb := protowire.AppendBytes(protowire.AppendTag(first, 305, protowire.BytesType), op)
	pb = append(pb, restBytes...)
	if err := st.Put(ctx, fixtureManifest, frameManifest(pb)); err != nil {
		t.Fatal(err)
	}
	_, err = renderTable(ctx, st, "kv.lance")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "manifest: field 1 comes again after field 305") ||
		!strings.Contains(err.Error(), fixtureManifest) {
		t.Fatalf("got %v, want ErrCorrupt: field 1 comes again after field 305", err)
	}
}
