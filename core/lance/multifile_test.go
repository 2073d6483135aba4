package lance

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/internal/lancepb/filepb"
	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
)

// TestMultiFileFragment rewrites the default fixture's version 1 so that its
// fragment has two data file entries (the same file, each owning two
// columns, the others tombstoned) and a schema column no file holds, which
// reads as nulls.
func TestMultiFileFragment(t *testing.T) {
	st := loadFixture(t, "default")
	d, err := Open(t.Context(), st, "kv.lance", OpenOptions{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := d.mf.m.CloneVT()
	m.Version = 7
	m.TransactionSection = nil
	m.Fields = append(m.Fields, &filepb.Field{Name: "extra", Id: 4, ParentId: -1, LogicalType: "int64", Nullable: true})
	frag := m.Fragments[0]
	a := frag.Files[0]
	b := a.CloneVT()
	a.Fields = []int32{0, 1, tombstone, tombstone}
	b.Fields = []int32{tombstone, tombstone, 2, 3}
	frag.Files = []*tablepb.DataFile{a, b}
	if got := planFiles(&Fragment{pb: frag}, mustProject(t, d, nil, m)); len(got) != 5 ||
		got[0] != 0 || got[1] != 0 || got[2] != 1 || got[3] != 1 || got[4] != -1 {
		t.Fatalf("plan %v", got)
	}
	st.Put(t.Context(), "kv.lance/_versions/"+manifestName(7, NamingV2), encodeManifest(t, m, nil))

	d7, err := Open(t.Context(), st, "kv.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d7.Version() != 7 {
		t.Fatalf("latest is %d", d7.Version())
	}
	s, err := d7.Scan(t.Context(), ScanOptions{Columns: []string{"extra", "key", "seq"}, BatchRows: 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := 0
	for s.Next() {
		rec := s.Record()
		extra, key, seq := rec.Column(0), rec.Column(1).(*array.Binary), rec.Column(2).(*array.Uint64)
		if extra.NullN() != extra.Len() {
			t.Fatal("extra column is not all null")
		}
		for i := 0; i < seq.Len(); i++ {
			if seq.Value(i) != uint64(rows+i) || key.IsNull(i) {
				t.Fatalf("row %d: seq %d", rows+i, seq.Value(i))
			}
		}
		rows += int(rec.NumRows())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if rows != 100 {
		t.Fatalf("%d rows", rows)
	}
}

func mustProject(t *testing.T, d *Dataset, _ []string, m *tablepb.Manifest) []*lancefile.Field {
	t.Helper()
	ds, err := newDataset(d.st, d.k, &manifestFile{key: "x", m: m})
	if err != nil {
		t.Fatal(err)
	}
	return ds.schema.Fields
}

// A fragment whose data file lives under an external base path is refused
// with ErrUnsupportedFeature when scanned; metadata still works.
func TestBasePathRefused(t *testing.T) {
	st := loadFixture(t, "default")
	d, err := Open(t.Context(), st, "kv.lance", OpenOptions{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := d.mf.m.CloneVT()
	m.Version = 7
	m.TransactionSection = nil
	base := uint32(1)
	m.Fragments[0].Files[0].BaseId = &base
	m.BasePaths = []*tablepb.BasePath{{Id: 1, Path: "s3://elsewhere/t.lance"}}
	m.ReaderFeatureFlags = flagBasePaths
	st.Put(t.Context(), "kv.lance/_versions/"+manifestName(7, NamingV2), encodeManifest(t, m, nil))
	d7, err := Open(t.Context(), st, "kv.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := d7.CountRows(t.Context()); n != 100 || err != nil {
		t.Fatal(n, err)
	}
	if _, err := d7.Scan(t.Context(), ScanOptions{}); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("got %v", err)
	}
}
