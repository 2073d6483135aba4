package lance

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/store"
)

// lance12Dir holds datasets lance 12 wrote (see its README.md); package
// lancefile compares their every value with lancedb's, this file reads
// them as datasets.
const lance12Dir = "../lancefile/testdata/v22"

// loadLance12 loads the dataset <table>.lance of lance12Dir into a memory
// store, under the key prefix "<table>.lance/".
func loadLance12(t testing.TB, table string) *store.Memory {
	t.Helper()
	st := store.NewMemory()
	root := filepath.Join(lance12Dir, table+".lance")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(lance12Dir, p)
		return st.Put(t.Context(), filepath.ToSlash(rel), b)
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// lance12Rows returns the expected rows of a table, as JSON objects.
func lance12Rows(t testing.TB, table string) []map[string]any {
	t.Helper()
	fh, err := os.Open(filepath.Join(lance12Dir, table+".expected.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	return rows
}

// TestLance12Datasets opens every lance 12 dataset and scans it whole: the
// format the manifest records, and as many rows as lancedb read.
func TestLance12Datasets(t *testing.T) {
	for table, format := range map[string]string{
		"types": "2.2", "consts": "2.2", "dict": "2.2", "nested": "2.2", "levels": "2.2", "fullzip": "2.2",
		"pages": "2.2", "packed": "2.2", "map": "2.2", "blob": "2.2", "decimals": "2.2", "packed21": "2.1", "blob21": "2.1",
	} {
		t.Run(table, func(t *testing.T) {
			got, err := renderTable(t.Context(), loadLance12(t, table), table+".lance")
			if err != nil {
				t.Fatal(err)
			}
			d, err := Open(t.Context(), loadLance12(t, table), table+".lance", OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d.DataFormat() != format {
				t.Errorf("format %s, want %s", d.DataFormat(), format)
			}
			n := 0
			for _, c := range got.rows {
				if c == '\n' {
					n++
				}
			}
			if want := len(lance12Rows(t, table)); n != want {
				t.Fatalf("scanned %d rows, want %d", n, want)
			}
		})
	}
}

// TestLance12Blobs reads a blob v2 column through a dataset: the bytes of
// blobs inline in the data file and in sidecar .blob files, which the
// dataset's store serves under data/<data file>/.
func TestLance12Blobs(t *testing.T) {
	ctx := t.Context()
	want := lance12Rows(t, "blob")
	d, err := Open(ctx, loadLance12(t, "blob"), "blob.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Scan(ctx, ScanOptions{Columns: []string{"payload"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	row := 0
	for s.Next() {
		st := s.Record().Column(0).(*array.Struct)
		data := st.Field(0).(*array.LargeBinary)
		for i := 0; i < st.Len(); i++ {
			w := want[row]["payload"]
			switch {
			case w == nil:
				if st.IsValid(i) {
					t.Fatalf("row %d: a blob, want null", row)
				}
			default:
				b := data.Value(i)
				got := "hex:" + hex.EncodeToString(b)
				if len(b) > 64 {
					h := sha256.Sum256(b)
					got = "sha256:" + hex.EncodeToString(h[:])
				}
				if wd := w.(map[string]any)["data"]; got != wd {
					t.Fatalf("row %d: %s, want %s", row, got, wd)
				}
			}
			row++
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if row != len(want) {
		t.Fatalf("%d rows, want %d", row, len(want))
	}
}
