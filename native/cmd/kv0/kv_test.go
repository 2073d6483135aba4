package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// kvRun runs one kv0 command line and returns its stdout and status.
func kvRun(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	if code != 0 {
		return errb.String(), code
	}
	return out.String(), code
}

func TestKVCommands(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	db := filepath.Join(t.TempDir(), "db.lance")
	for _, c := range [][]string{
		{"kv", "put", db, "apple", "red"},
		{"kv", "put", db, "apricot", "orange"},
		{"kv", "put", db, "banana", "yellow"},
		{"kv", "put", "--hex", db, "ff00", "00"},
		{"kv", "put", "--base64", db, "Y2hlcnJ5", "cmVk"}, // cherry=red
	} {
		if out, code := kvRun(t, c...); code != 0 {
			t.Fatalf("%v: %s", c, out)
		}
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"kv", "get", db, "apple"}, "red\n"},
		{[]string{"kv", "scan", db, "--prefix", "ap"}, "apple\tred\napricot\torange\n"},
		{[]string{"kv", "scan", db, "--start", "b", "--end", "c"}, "banana\tyellow\n"},
		{[]string{"kv", "scan", db, "--reverse", "--limit", "2"}, "\"\\xff\\x00\"\t\"\\x00\"\ncherry\tred\n"},
		{[]string{"kv", "scan", db, "--hex", "--start", "ff", "--keys-only"}, "ff00\n"},
		{[]string{"kv", "scan", db, "--base64", "--prefix", "YmFu"}, "YmFuYW5h\teWVsbG93\n"},
	}
	for _, c := range cases {
		if out, code := kvRun(t, c.args...); code != 0 || out != c.want {
			t.Errorf("%v: %d %q, want %q", c.args, code, out, c.want)
		}
	}
	if out, code := kvRun(t, "kv", "delete", db, "apple", "--end", "b"); code != 0 {
		t.Fatal(out)
	}
	if out, code := kvRun(t, "kv", "get", db, "apricot"); code != 1 || !strings.Contains(out, "not found") {
		t.Fatalf("get after range delete: %d %s", code, out)
	}
	if out, code := kvRun(t, "kv", "get", db, "apricot", "--version", "4"); code != 0 || out != "orange\n" {
		t.Fatalf("get at version 4: %d %q", code, out)
	}
	if out, code := kvRun(t, "kv", "compact", db); code != 0 {
		t.Fatal(out)
	}
	if out, code := kvRun(t, "kv", "versions", db, "--json"); code != 0 || strings.Count(out, "\n") < 7 {
		t.Fatalf("versions: %q", out)
	}
	if out, code := kvRun(t, "kv", "cleanup", db, "--older-than", "0s"); code != 0 || !strings.HasPrefix(out, "removed ") {
		t.Fatalf("cleanup: %q", out)
	}
	if out, code := kvRun(t, "kv", "tag", db, "keep"); code != 0 {
		t.Fatal(out)
	}
	if out, code := kvRun(t, "kv", "purge", db); code != 0 {
		t.Fatal(out)
	}
	if out, code := kvRun(t, "kv", "put", db, "onlykey"); code != 2 {
		t.Fatalf("put without a value: %d %s", code, out)
	}
	if out, code := kvRun(t, "kv", "get", filepath.Join(t.TempDir(), "none"), "k"); code != 1 {
		t.Fatalf("get on nothing: %d %s", code, out)
	}
}
