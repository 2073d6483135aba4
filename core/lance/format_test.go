package lance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/internal/lancepb/tablepb"
	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// fileFormats returns the distinct formats of d's data files, as their
// footers and their DataFile records say (each must agree).
func fileFormats(t testing.TB, d *Dataset) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, f := range d.Fragments() {
		for _, df := range f.Files {
			lf, err := lancefile.Open(ctx, d.st, d.k.data(df.Path[len("data/"):]), 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := lf.Version().String(); got != df.Version {
				t.Fatalf("file %s: footer %s, manifest %s", df.Path, got, df.Version)
			}
			if !slices.Contains(out, df.Version) {
				out = append(out, df.Version)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkFormat requires the dataset and all its data files to be format.
func checkFormat(t testing.TB, d *Dataset, format string) {
	t.Helper()
	if d.DataFormat() != format {
		t.Fatalf("version %d: dataset format %s, want %s", d.Version(), d.DataFormat(), format)
	}
	if got := fileFormats(t, d); len(got) > 0 && !slices.Equal(got, []string{format}) {
		t.Fatalf("version %d: data files of formats %v, want %s", d.Version(), got, format)
	}
}

// TestDataFormats checks the choice of data file format: new datasets get
// the default (2.2) or the format asked for; appends, updates, compactions
// and indices keep the dataset's; asking an append or update for the other
// format fails with ErrDataFormat, and so does a format kv0 does not write;
// an overwrite keeps the format unless it names another.
func TestDataFormats(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ opt, want, other string }{
		{"", DataFormat22, DataFormat21},
		{DataFormat22, DataFormat22, DataFormat21},
		{DataFormat21, DataFormat21, DataFormat22},
	} {
		t.Run("create "+tc.opt, func(t *testing.T) {
			st := store.NewMemory()
			d := mustCreate(t, st, "t.lance", 0, 100, WriteOptions{DataFormat: tc.opt, MaxRowsPerFile: 30})
			checkFormat(t, d, tc.want)
			// Appends keep the dataset's format, whether asked for by name
			// or not; the other one is refused, and nothing is committed.
			d = mustAppend(t, d, 100, 110)
			checkFormat(t, d, tc.want)
			d, err := d.Append(ctx, Batches(idBatch(110, 120)), WriteOptions{DataFormat: tc.want})
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, d, tc.want)
			v := d.Version()
			_, err = d.Append(ctx, Batches(idBatch(120, 130)), WriteOptions{DataFormat: tc.other})
			if !errors.Is(err, ErrDataFormat) || !strings.Contains(err.Error(), tc.other) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("append of %s files to a %s dataset: %v", tc.other, tc.want, err)
			}
			_, err = d.Update(ctx, UpdateRequest{New: Batches(idBatch(120, 130))}, WriteOptions{DataFormat: tc.other})
			if !errors.Is(err, ErrDataFormat) {
				t.Fatalf("update with %s files of a %s dataset: %v", tc.other, tc.want, err)
			}
			if latest, err := LatestVersion(ctx, st, "t.lance"); err != nil || latest != v {
				t.Fatalf("refused writes committed: latest %d (%v), want %d", latest, err, v)
			}
			// Delete, update, compaction and an index keep it too.
			d, _, err = d.Delete(ctx, "id < 20 OR id = 50")
			if err != nil {
				t.Fatal(err)
			}
			d, err = d.Update(ctx, UpdateRequest{DeleteRows: nil, New: Batches(idBatch(200, 210))}, WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, d, tc.want)
			d, _, err = d.Compact(ctx, CompactOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, d, tc.want)
			if n := len(d.Fragments()); n != 1 {
				t.Fatalf("%d fragments after compaction", n)
			}
			d, err = d.CreateBTreeIndex(ctx, "id", "")
			if err != nil {
				t.Fatal(err)
			}
			idx, err := readIndices(ctx, d)
			if err != nil || len(idx) != 1 {
				t.Fatalf("indices %v (%v)", idx, err)
			}
			dir := joinKey(d.k.root, indicesDir, uuidString([16]byte(idx[0].GetUuid().GetUuid())))
			for _, name := range []string{btreeDataFile, btreeLookupFile} {
				lf, err := lancefile.Open(ctx, st, joinKey(dir, name), 0)
				if err != nil {
					t.Fatal(err)
				}
				if lf.Version().String() != tc.want {
					t.Fatalf("index file %s of format %s in a %s dataset", name, lf.Version(), tc.want)
				}
			}
			want := slices.DeleteFunc(seq(0, 120), func(i int64) bool { return i < 20 || i == 50 })
			want = append(want, seq(200, 210)...)
			if got := ids(t, d); !slices.Equal(got, want) {
				t.Fatalf("ids %v, want %v", got, want)
			}
			// An overwrite keeps the format, or takes the one it names.
			d, err = Overwrite(ctx, st, "t.lance", wSchema, Batches(idBatch(0, 5)), WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, d, tc.want)
			d, err = Overwrite(ctx, st, "t.lance", wSchema, Batches(idBatch(0, 5)), WriteOptions{DataFormat: tc.other})
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, d, tc.other)
			d = mustAppend(t, d, 5, 10)
			checkFormat(t, d, tc.other)
			// An empty overwrite names the format too.
			d, err = Overwrite(ctx, st, "t.lance", wSchema, Batches(), WriteOptions{DataFormat: tc.want})
			if err != nil {
				t.Fatal(err)
			}
			checkFormat(t, d, tc.want)
			d = mustAppend(t, d, 0, 3)
			checkFormat(t, d, tc.want)
		})
	}
	st := store.NewMemory()
	for _, bad := range []string{"2.0", "2.3", "0.1", "legacy", "stable", "bogus"} {
		if _, err := Create(ctx, st, "x.lance", wSchema, Batches(idBatch(0, 1)), WriteOptions{DataFormat: bad}); !errors.Is(err, ErrDataFormat) || !strings.Contains(err.Error(), bad) {
			t.Fatalf("create with format %q: %v", bad, err)
		}
	}
	if _, err := Open(ctx, st, "x.lance", OpenOptions{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a refused create left a dataset: %v", err)
	}
}

// TestCommitRefusesMixedFormats builds manifests from transactions whose
// new fragments have another format than the dataset: lance refuses such
// datasets, so kv0 must never commit one, whatever the path to it (a
// transaction rebased onto a version that changed the format).
func TestCommitRefusesMixedFormats(t *testing.T) {
	frag := func(minor uint32) []*tablepb.DataFragment {
		return []*tablepb.DataFragment{{PhysicalRows: 1, Files: []*tablepb.DataFile{{Path: "x.lance", Fields: []int32{0},
			ColumnIndices: []int32{0}, FileMajorVersion: 2, FileMinorVersion: minor}}}}
	}
	cur := func(format string) *tablepb.Manifest {
		return &tablepb.Manifest{Version: 1, DataFormat: &tablepb.Manifest_DataStorageFormat{FileFormat: "lance", Version: format}}
	}
	ops := map[string]func(f []*tablepb.DataFragment) *tablepb.Transaction{
		"append": func(f []*tablepb.DataFragment) *tablepb.Transaction {
			return &tablepb.Transaction{Operation: &tablepb.Transaction_Append_{Append: &tablepb.Transaction_Append{Fragments: f}}}
		},
		"update": func(f []*tablepb.DataFragment) *tablepb.Transaction {
			return &tablepb.Transaction{Operation: &tablepb.Transaction_Update_{Update: &tablepb.Transaction_Update{NewFragments: f}}}
		},
		"rewrite": func(f []*tablepb.DataFragment) *tablepb.Transaction {
			return &tablepb.Transaction{Operation: &tablepb.Transaction_Rewrite_{Rewrite: &tablepb.Transaction_Rewrite{
				Groups: []*tablepb.Transaction_Rewrite_RewriteGroup{{NewFragments: f}}}}}
		},
	}
	for name, op := range ops {
		for _, tc := range []struct {
			format string
			minor  uint32
			ok     bool
		}{{"2.1", 1, true}, {"2.2", 2, true}, {"2.1", 2, false}, {"2.2", 1, false}} {
			_, _, err := buildManifest(buildInput{cur: cur(tc.format), txn: op(frag(tc.minor)), version: 2, now: time.Now()})
			if tc.ok && err != nil {
				t.Fatalf("%s of 2.%d files to a %s dataset: %v", name, tc.minor, tc.format, err)
			}
			if !tc.ok && !errors.Is(err, ErrDataFormat) {
				t.Fatalf("%s of 2.%d files to a %s dataset: %v, want ErrDataFormat", name, tc.minor, tc.format, err)
			}
		}
	}
	// An overwrite takes the format of its files.
	for _, minor := range []uint32{1, 2} {
		txn := &tablepb.Transaction{Operation: &tablepb.Transaction_Overwrite_{Overwrite: &tablepb.Transaction_Overwrite{Fragments: frag(minor)}}}
		m, _, err := buildManifest(buildInput{cur: cur("2.1"), txn: txn, version: 2, now: time.Now(), format: "2.1"})
		want := (lancefile.Version{Major: 2, Minor: int(minor)}).String()
		if err != nil || m.GetDataFormat().GetVersion() != want {
			t.Fatalf("overwrite with 2.%d files: format %s (%v)", minor, m.GetDataFormat().GetVersion(), err)
		}
	}
}
