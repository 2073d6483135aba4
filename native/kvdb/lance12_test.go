package kvdb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/kvdb"
)

// lance12Dir returns the folder whose node_modules holds lancedb 0.39
// (KV0_LANCEDB12, else tests/interop/lance12), skipping the test when there
// is none (failing it when CI=true and the folder's package.json is there).
func lance12Dir(t *testing.T) (node, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the lance 12 interop test")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found")
	}
	dir = os.Getenv("KV0_LANCEDB12")
	if dir == "" {
		dir, _ = filepath.Abs(filepath.Join("..", "..", "tests", "interop", "lance12"))
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@lancedb", "lancedb")); err != nil {
		if _, perr := os.Stat(filepath.Join(dir, "package.json")); perr == nil && os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but lancedb 0.39 is not installed in %s (run npm ci there)", dir)
		}
		t.Skipf("no lancedb 0.39 in %s (set KV0_LANCEDB12 to a folder where npm i -E @lancedb/lancedb@0.39.0 apache-arrow@18.1.0 ran)", dir)
	}
	return node, dir
}

// logFormats returns the format of the operation log at path and of each
// of its data files.
func logFormats(t *testing.T, path string) (string, []string) {
	t.Helper()
	st, err := fsstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := lance.Open(context.Background(), st, "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range d.Fragments() {
		for _, df := range f.Files {
			files = append(files, df.Version)
		}
	}
	return d.DataFormat(), files
}

// TestLance12KeyValue: a database kv0 creates is format 2.2; lance 12
// opens its operation log, reads it, appends puts and compacts it; kv0
// then reads every key, its own and lance 12's.
func TestLance12KeyValue(t *testing.T) {
	node, l12 := lance12Dir(t)
	ctx := context.Background()
	root := t.TempDir()
	path := filepath.Join(root, "kv.lance")
	opts := quiet(t.TempDir())
	opts.DB.MaxFragments = -1
	db, err := kvdb.Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for round := range 3 {
		for i := range 200 {
			k := fmt.Sprintf("key/%04d", (round*137+i*7)%500)
			v := fmt.Sprintf("v%d.%d", round, i)
			if err := db.Put(ctx, []byte(k), []byte(v), nil); err != nil {
				t.Fatal(err)
			}
			want[k] = v
		}
		for i := range 20 {
			k := fmt.Sprintf("key/%04d", round*20+i)
			if err := db.Delete(ctx, []byte(k), nil); err != nil {
				t.Fatal(err)
			}
			delete(want, k)
		}
		if err := db.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if f, _ := logFormats(t, path); f != lance.DataFormat22 {
		t.Fatalf("a new database has format %s, want %s", f, lance.DataFormat22)
	}
	script, _ := filepath.Abs(filepath.Join("testdata", "lance12_kv.mjs"))
	const added = 40
	cmd := exec.Command(node, script, l12, root, fmt.Sprint(added))
	cmd.Env = append(os.Environ(), "RUST_LOG=error")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node lance12_kv.mjs: %v\n%s", err, stderr.String())
	}
	t.Logf("lance 12: %s", strings.TrimSpace(string(out)))
	for i := range added {
		want[fmt.Sprintf("lance12/%d", i)] = fmt.Sprintf("from lance 12 %d", i)
	}
	format, files := logFormats(t, path)
	if format != lance.DataFormat22 || len(files) != 1 || files[0] != lance.DataFormat22 {
		t.Fatalf("after lance 12: format %s, files %v", format, files)
	}
	db, err = kvdb.Open(ctx, path, quiet(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := dump(t, db)
	if len(got) != len(want) {
		t.Fatalf("kv0 reads %d keys after lance 12's writes, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("key %q: %q, want %q", k, got[k], v)
		}
	}
}

// TestDataFormatOfDatabases: a database is created in the format asked
// for and keeps it; asking an existing database for the other format
// fails with lance.ErrDataFormat, and a format kv0 does not write is
// refused before anything is created.
func TestDataFormatOfDatabases(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ create, want, other string }{
		{"", lance.DataFormat22, lance.DataFormat21},
		{lance.DataFormat21, lance.DataFormat21, lance.DataFormat22},
		{lance.DataFormat22, lance.DataFormat22, lance.DataFormat21},
	} {
		path := filepath.Join(t.TempDir(), "db")
		opts := quiet(t.TempDir())
		opts.Log.DataFormat = tc.create
		db, err := kvdb.Open(ctx, path, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Put(ctx, []byte("a"), []byte("1"), nil); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, reopen := range []string{"", tc.want} {
			opts := quiet(t.TempDir())
			opts.Log.DataFormat = reopen
			db, err := kvdb.Open(ctx, path, opts)
			if err != nil {
				t.Fatalf("create %q, reopen %q: %v", tc.create, reopen, err)
			}
			if err := db.Put(ctx, []byte("b"+reopen), []byte("2"), nil); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		}
		format, files := logFormats(t, path)
		if format != tc.want {
			t.Fatalf("create %q: format %s, want %s", tc.create, format, tc.want)
		}
		for _, f := range files {
			if f != tc.want {
				t.Fatalf("create %q: data files %v", tc.create, files)
			}
		}
		opts = quiet(t.TempDir())
		opts.Log.DataFormat = tc.other
		if _, err := kvdb.Open(ctx, path, opts); !errors.Is(err, lance.ErrDataFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("create %q, reopen as %s: %v", tc.create, tc.other, err)
		}
		// Read-only handles ignore it.
		ro := quiet("")
		ro.DB = kv.Options{ReadOnly: true}
		ro.Log.DataFormat = tc.other
		rdb, err := kvdb.Open(ctx, path, ro)
		if err != nil {
			t.Fatalf("read-only open with data format %s: %v", tc.other, err)
		}
		rdb.Close()
	}
	path := filepath.Join(t.TempDir(), "bad")
	opts := quiet(t.TempDir())
	opts.Log.DataFormat = "2.3"
	if _, err := kvdb.Open(ctx, path, opts); !errors.Is(err, lance.ErrDataFormat) {
		t.Fatalf("format 2.3: %v", err)
	}
	if _, err := os.Stat(filepath.Join(path, "_versions")); err == nil {
		t.Fatal("a refused format created a database")
	}
}
