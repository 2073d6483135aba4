package kvdb_test

import (
	"path/filepath"
	"testing"

	"github.com/kv0/kv0/native/kvdb"
)

// TestURI checks that every spelling of one location keys the same WAL
// directory, from any working directory.
func TestURI(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	abs, _ := filepath.Abs("db.lance")
	for _, group := range [][]string{
		{"db.lance", "./db.lance/", abs, abs + "/", "file://" + abs},
		{"s3://b/p", "s3://b/p/", "s3://b//p", "S3://b/p"},
	} {
		want, err := kvdb.URI(group[0])
		if err != nil || want == "" {
			t.Fatalf("%s: %q %v", group[0], want, err)
		}
		for _, loc := range group[1:] {
			if got, err := kvdb.URI(loc); err != nil || got != want {
				t.Errorf("%s: %q %v, want %q (as %s)", loc, got, err, want, group[0])
			}
		}
	}
	if got, err := kvdb.URI("memory://x"); err != nil || got != "" {
		t.Errorf("memory://: %q %v, want no WAL", got, err)
	}
}
