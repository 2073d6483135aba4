package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// infoFormats returns the data format of the dataset at path and the
// formats of its data files, from kv0 lance info --json.
func infoFormats(t *testing.T, path string) (string, map[string]bool) {
	t.Helper()
	var info struct {
		DataFormat string `json:"data_format"`
		Fragments  []struct {
			Files []struct{ Version string } `json:"files"`
		} `json:"fragments"`
	}
	if err := json.Unmarshal([]byte(mustRun(t, "lance", "info", path, "--json")), &info); err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, f := range info.Fragments {
		for _, df := range f.Files {
			files[df.Version] = true
		}
	}
	return info.DataFormat, files
}

// TestFormatFlag: --format chooses the data file format of what lance
// write, kv put and track create (default 2.2); an append keeps the
// dataset's, and one asking for the other format fails naming both.
func TestFormatFlag(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	tmp := t.TempDir()
	for _, tc := range []struct{ flag, want, other string }{
		{"", "2.2", "2.1"},
		{"2.1", "2.1", "2.2"},
		{"2.2", "2.2", "2.1"},
	} {
		with := func(args ...string) []string {
			if tc.flag != "" {
				args = append(args, "--format", tc.flag)
			}
			return args
		}
		ds := filepath.Join(tmp, "ds"+tc.flag)
		mustRun(t, with("lance", "write", ds, "--mode", "create", "--input", ipcFile(t, 0, 10))...)
		mustRun(t, "lance", "write", ds, "--mode", "append", "--input", ipcFile(t, 10, 5))
		mustRun(t, "lance", "write", ds, "--mode", "append", "--input", ipcFile(t, 15, 5), "--format", tc.want)
		code, _, e := runCLI("lance", "write", ds, "--mode", "append", "--input", ipcFile(t, 20, 5), "--format", tc.other)
		if code != 1 || !strings.Contains(e, "format "+tc.want) || !strings.Contains(e, tc.other) {
			t.Fatalf("append as %s to a %s dataset: exit %d: %s", tc.other, tc.want, code, e)
		}
		if f, files := infoFormats(t, ds); f != tc.want || len(files) != 1 || !files[tc.want] {
			t.Fatalf("--format %q: dataset %s, files %v", tc.flag, f, files)
		}
		mustRun(t, "lance", "write", ds, "--mode", "overwrite", "--input", ipcFile(t, 0, 3), "--format", tc.other)
		if f, files := infoFormats(t, ds); f != tc.other || len(files) != 1 || !files[tc.other] {
			t.Fatalf("overwrite --format %s: dataset %s, files %v", tc.other, f, files)
		}

		db := filepath.Join(tmp, "db"+tc.flag)
		mustRun(t, with("kv", "put", db, "a", "1")...)
		mustRun(t, "kv", "put", db, "b", "2")
		if code, _, e := runCLI("kv", "put", db, "c", "3", "--format", tc.other); code != 1 || !strings.Contains(e, tc.other) {
			t.Fatalf("kv put --format %s on a %s database: exit %d: %s", tc.other, tc.want, code, e)
		}
		if f, files := infoFormats(t, db); f != tc.want || len(files) != 1 || !files[tc.want] {
			t.Fatalf("kv --format %q: database %s, files %v", tc.flag, f, files)
		}

		repo := filepath.Join(tmp, "repo"+tc.flag)
		if _, e, code := trackIn(t, `{"name":"loss","value":1,"step":0}`+"\n", with(repo, "--run", "r1")...); code != 0 {
			t.Fatalf("track: %s", e)
		}
		for _, table := range []string{"runs", "params", "series", "metrics"} {
			if f, files := infoFormats(t, filepath.Join(repo, table+".lance")); f != tc.want || len(files) > 1 || (len(files) == 1 && !files[tc.want]) {
				t.Fatalf("track --format %q: table %s %s, files %v", tc.flag, table, f, files)
			}
		}
		if _, e, code := trackIn(t, "", repo, "--run", "r2", "--format", tc.other); code != 1 || !strings.Contains(e, tc.other) {
			t.Fatalf("track --format %s on a %s repository: exit %d: %s", tc.other, tc.want, code, e)
		}
	}
}
