package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStrayV1Manifest: a V1-named manifest ("7.manifest", here a copy of a
// real manifest, and junk) in a dataset whose manifests have V2 names
// broke `kv0 lance log`, `kv0 kv versions` and `kv0 kv cleanup` (issue 11,
// item 9). Each now succeeds, lists only the V2 versions, warns on stderr
// naming the file, and leaves the file alone.
func TestStrayV1Manifest(t *testing.T) {
	for _, stray := range []string{"copy", "junk"} {
		t.Run(stray, func(t *testing.T) {
			t.Setenv("KV0_WAL_DIR", t.TempDir())
			db := filepath.Join(t.TempDir(), "db.lance")
			for _, kv := range [][2]string{{"k1", "v1"}, {"k2", "v2"}} {
				if out, code := kvRun(t, "kv", "put", db, kv[0], kv[1]); code != 0 {
					t.Fatalf("put: %s", out)
				}
			}
			want, code := kvRun(t, "kv", "versions", db)
			if code != 0 {
				t.Fatal(want)
			}
			wantLog, code := kvRun(t, "lance", "log", db)
			if code != 0 {
				t.Fatal(wantLog)
			}
			dir := filepath.Join(db, "_versions")
			names, err := filepath.Glob(filepath.Join(dir, "1844*.manifest"))
			if err != nil || len(names) < 2 {
				t.Fatalf("manifests %v, %v", names, err)
			}
			content := []byte("junk")
			if stray == "copy" {
				if content, err = os.ReadFile(names[0]); err != nil {
					t.Fatal(err)
				}
			}
			strayPath := filepath.Join(dir, "7.manifest")
			if err := os.WriteFile(strayPath, content, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				args []string
				want string // stdout; "" when any
			}{
				{[]string{"lance", "log", db}, wantLog},
				{[]string{"kv", "versions", db}, want},
				{[]string{"kv", "cleanup", db}, "removed 0 versions\n"},
			} {
				var out, errb bytes.Buffer
				code := run(context.Background(), c.args, &out, &errb)
				if code != 0 {
					t.Errorf("%v: status %d: %s", c.args, code, errb.String())
					continue
				}
				if out.String() != c.want {
					t.Errorf("%v printed\n%s\nwant\n%s", c.args, out.String(), c.want)
				}
				if w := errb.String(); !strings.Contains(w, "kv0: warning: ") || !strings.Contains(w, "_versions/7.manifest") ||
					!strings.Contains(w, "V1 name") {
					t.Errorf("%v: stderr %q, want a warning naming _versions/7.manifest", c.args, w)
				}
			}
			if _, err := os.Stat(strayPath); err != nil {
				t.Fatalf("the stray manifest: %v", err)
			}
		})
	}
}
