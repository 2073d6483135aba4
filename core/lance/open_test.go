package lance

import (
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

func TestOpenFixtures(t *testing.T) {
	for _, tc := range []struct {
		dir, root string
		version   uint64
		format    string
		rows      uint64
	}{
		{"default", "kv.lance", 6, "2.1", 189},
		{"v2_0", "kv.lance", 6, "2.0", 189},
		{"v1paths", "kv.lance", 6, "2.1", 189},
		{"v2_2", "kv.lance", 6, "2.2", 189},
		{"legacy", "kv.lance", 6, "0.1", 189},
		{"bigdel", "t.lance", 2, "2.1", 10000},
		{"bigdel", "t2.lance", 2, "2.1", 990},
	} {
		t.Run(tc.dir+"/"+tc.root, func(t *testing.T) {
			st := loadFixture(t, tc.dir)
			d, err := Open(t.Context(), st, tc.root, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n, err := d.CountRows(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if d.Version() != tc.version || d.DataFormat() != tc.format || n != tc.rows || len(d.Fragments()) != 1 {
				t.Errorf("got version %d format %s rows %d fragments %d", d.Version(), d.DataFormat(), n, len(d.Fragments()))
			}
			if d.Timestamp().IsZero() {
				t.Error("no timestamp")
			}
			// Every older version opens too.
			for v := uint64(1); v < tc.version; v++ {
				old, err := Open(t.Context(), st, tc.root, OpenOptions{Version: v})
				if err != nil {
					t.Fatalf("version %d: %v", v, err)
				}
				if old.Version() != v {
					t.Fatalf("asked for %d, got %d", v, old.Version())
				}
			}
		})
	}
}

func TestUnsupportedDataFormatsNamed(t *testing.T) {
	for _, tc := range []struct {
		dir, want string
		damage    func(t *testing.T, st *store.Memory) // makes the fixture claim another version
	}{
		{dir: "legacy", want: "format 0.1 (legacy, file version 0.2;"},
		// Format 2.3 is lance 12's unstable "next": a 2.2 dataset whose
		// manifest and data file claim 2.3.
		{dir: "v2_2", want: `format 2.3 (lance's unstable "next" format`, damage: claim23},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			st := loadFixture(t, tc.dir)
			if tc.damage != nil {
				tc.damage(t, st)
			}
			d, err := Open(t.Context(), st, "kv.lance", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Scan(t.Context(), ScanOptions{})
			if err == nil {
				s, _ := d.Scan(t.Context(), ScanOptions{})
				for s.Next() {
				}
				err = s.Err()
				s.Close()
			}
			if !errors.Is(err, lancefile.ErrUnsupportedVersion) {
				t.Fatalf("got %v, want ErrUnsupportedVersion", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "kv.lance/data/") {
				t.Fatalf("error %q does not name the file and %q", err, tc.want)
			}
		})
	}
}

// claim23 makes the latest version of the v2_2 fixture claim format 2.3 in
// its manifest and in its data file's footer.
func claim23(t *testing.T, st *store.Memory) {
	ctx := t.Context()
	const key = "kv.lance/_versions/18446744073709551609.manifest" // version 6
	b, err := store.ReadAll(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := decodeManifest(key, int64(len(b)), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := mf.m.CloneVT()
	m.TransactionSection = nil
	m.DataFormat.Version = "2.3"
	for _, f := range m.Fragments {
		for _, df := range f.Files {
			df.FileMinorVersion = 3
			dk := "kv.lance/data/" + df.GetPath()
			data, err := store.ReadAll(ctx, st, dk)
			if err != nil {
				t.Fatal(err)
			}
			binary.LittleEndian.PutUint16(data[len(data)-6:], 3)
			if err := st.Put(ctx, dk, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.Put(ctx, key, mustEncodeManifest(m, nil)); err != nil {
		t.Fatal(err)
	}
}

// TestReadV22Fixture reads the dataset lance 8 wrote in format 2.2 (then
// unstable; lance 12 writes the same grammar): the same rows, value for
// value, as the lance-8 2.1 fixture of the same history.
func TestReadV22Fixture(t *testing.T) {
	ctx := t.Context()
	want, err := renderTable(ctx, loadFixture(t, "default"), "kv.lance")
	if err != nil {
		t.Fatal(err)
	}
	got, err := renderTable(ctx, loadFixture(t, "v2_2"), "kv.lance")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got.rows, "\n"); n != 189 {
		t.Fatalf("read %d rows, want 189", n)
	}
	if got != want {
		t.Fatalf("2.2 fixture reads\n%s\nwant (from the 2.1 fixture)\n%s", firstDiff(want.rows, got.rows), want.names+want.types)
	}
}

// TestLogDefault checks the change log of the default fixture: v1 create 100
// rows, v2 append 100, v3 delete 10, v4 delete 1, v5 ReserveFragments, v6
// Rewrite (compaction of both fragments into one).
func TestLogDefault(t *testing.T) {
	for _, dir := range []string{"default", "v1paths", "v2_0"} {
		t.Run(dir, func(t *testing.T) {
			st := loadFixture(t, dir)
			log, err := Log(t.Context(), st, "kv.lance")
			if err != nil {
				t.Fatal(err)
			}
			type row struct {
				v                     uint64
				op                    string
				added, removed        uint64
				fragsAdded, fragsGone int
				pred                  string
				total                 uint64
			}
			want := []row{
				{1, "Create", 100, 0, 1, 0, "", 100},
				{2, "Append", 100, 0, 1, 0, "", 200},
				{3, "Delete", 0, 10, 0, 0, "seq >= 10 AND seq < 20", 190},
				{4, "Delete", 0, 1, 0, 0, "seq = 150", 189},
				{5, "ReserveFragments", 0, 0, 0, 0, "", 189},
				{6, "Rewrite", 189, 189, 1, 2, "", 189},
			}
			var got []row
			for i, v := range log {
				got = append(got, row{v.Version, v.Operation, v.RowsAdded, v.RowsRemoved, v.FragmentsAdded, v.FragmentsRemoved, v.Predicate, v.TotalRows})
				if v.Timestamp.IsZero() || v.Baseline {
					t.Errorf("version %d: timestamp %v baseline %v", v.Version, v.Timestamp, v.Baseline)
				}
				if i > 0 && v.Timestamp.Before(log[i-1].Timestamp) {
					t.Errorf("version %d is older than its predecessor", v.Version)
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("log:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}
