package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLI runs one command line and returns its stdout, stderr and status.
// TestNumericFlagRanges: every numeric and duration flag refuses values
// out of its range as a usage error (status 2) naming the flag, before the
// command touches anything, and accepts its boundaries.
func TestNumericFlagRanges(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	tmp := t.TempDir()
	db := filepath.Join(tmp, "db.lance") // a key-value database is a Lance dataset too
	for _, k := range []string{"a", "b", "c"} {
		if code, _, e := runCLI("kv", "put", db, k, "v"); code != 0 {
			t.Fatalf("put: %s", e)
		}
	}
	repo := filepath.Join(tmp, "repo")
	if code, _, e := runCLI("demo", repo, "--runs", "1", "--steps", "1"); code != 0 {
		t.Fatalf("demo at the lower boundaries: %s", e)
	}
	versions := func() string {
		code, out, e := runCLI("kv", "versions", db, "--json")
		if code != 0 {
			t.Fatalf("versions: %s", e)
		}
		return out
	}
	before := versions()
	token := filepath.Join(tmp, "no-token")
	fresh := filepath.Join(tmp, "fresh")
	s3 := []string{"sign-server", "--bucket-uri", "s3://bucket/repo", "--token-file", token}
	refused := []struct {
		args []string
		flag string
	}{
		{[]string{"lance", "cat", db, "--limit", "-5"}, "limit"},
		{[]string{"lance", "cat", db, "--limit", "-1"}, "limit"},
		{[]string{"lance", "cat", db, "--limit", "x"}, "limit"},
		{[]string{"lance", "cat", db, "--version", "0"}, "version"},
		{[]string{"lance", "cat", db, "--version", "-1"}, "version"},
		{[]string{"lance", "info", db, "--version", "-3"}, "version"},
		{[]string{"lance", "write", fresh, "--mode", "create", "--max-rows-per-file", "-1"}, "max-rows-per-file"},
		{[]string{"lance", "write", fresh, "--mode", "create", "--max-rows-per-file", "4294967296"}, "max-rows-per-file"},
		{[]string{"lance", "compact", db, "--target-rows", "-5"}, "target-rows"},
		{[]string{"lance", "compact", db, "--target-rows", "4294967296"}, "target-rows"},
		{[]string{"lance", "tag", "create", db, "t", "--version", "0"}, "version"},
		{[]string{"lance", "tag", "create", db, "t", "--version", "-2"}, "version"},
		{[]string{"lance", "restore", db, "--version", "0"}, "version"},
		{[]string{"lance", "restore", db, "--version", "-1"}, "version"},
		{[]string{"lance", "cleanup", db, "--older-than", "-1h"}, "older-than"},
		{[]string{"lance", "cleanup", db, "--older-than", "-1d"}, "older-than"},
		{[]string{"lance", "cleanup", db, "--older-than", "1d-23h"}, "older-than"},
		{[]string{"lance", "cleanup", db, "--older-than", "soon"}, "older-than"},
		{[]string{"lance", "cleanup", db, "--older-than", "106752d"}, "older-than"},
		{[]string{"lance", "cleanup", db}, "older-than"},
		{[]string{"lance", "cleanup", db, "--older-than", "1h", "--retain-versions", "-1"}, "retain-versions"},
		{[]string{"kv", "get", db, "a", "--version", "0"}, "version"},
		{[]string{"kv", "scan", db, "--limit", "-5"}, "limit"},
		{[]string{"kv", "scan", db, "--version", "0"}, "version"},
		{[]string{"kv", "tag", db, "t", "--version", "0"}, "version"},
		{[]string{"kv", "cleanup", db, "--older-than", "-1h"}, "older-than"},
		{[]string{"kv", "cleanup", db, "--older-than", "-0.5s"}, "older-than"},
		{[]string{"metrics", repo, "resnet-cifar10-1", "lr", "--max-points", "-1"}, "max-points"},
		{[]string{"demo", fresh, "--runs", "0"}, "runs"},
		{[]string{"demo", fresh, "--runs", "1001"}, "runs"},
		{[]string{"demo", fresh, "--steps", "0"}, "steps"},
		{[]string{"demo", fresh, "--steps", "-1"}, "steps"},
		{[]string{"demo", fresh, "--steps", "10000001"}, "steps"},
		{[]string{"lance", "write", fresh, "--mode", "create", "--format", "2.3"}, "format"},
		{[]string{"lance", "write", fresh, "--mode", "create", "--format", "stable"}, "format"},
		{[]string{"kv", "put", db, "a", "v", "--format", "2.0"}, "format"},
		{[]string{"kv", "delete", db, "a", "--format", ""}, "format"},
		{[]string{"track", fresh, "--run", "r", "--format", "legacy"}, "format"},
		{[]string{"demo", fresh, "--format", "2"}, "format"},
		{append(s3, "--expiry", "0s"), "expiry"},
		{append(s3, "--expiry", "999ms"), "expiry"},
		{append(s3, "--expiry", "-5m"), "expiry"},
		{append(s3, "--expiry", "7d1s"), "expiry"},
		{append(s3, "--expiry", "2w"), "expiry"},
	}
	for _, c := range refused {
		t.Run("refuse "+strings.Join(c.args[1:], " "), func(t *testing.T) {
			code, _, e := runCLI(c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (usage error): %s", code, e)
			}
			msg := ""
			for _, l := range strings.Split(e, "\n") {
				if strings.HasPrefix(l, "kv0: ") {
					msg = l
				}
			}
			if !strings.Contains(msg, "-"+c.flag) {
				t.Fatalf("message does not name --%s: %q", c.flag, msg)
			}
		})
	}
	if after := versions(); after != before {
		t.Fatalf("refused commands changed the database:\n%s\nthen\n%s", before, after)
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Fatalf("a refused command created %s: %v", fresh, err)
	}

	lines := func(s string) int { return strings.Count(s, "\n") }
	accepted := []struct {
		args  []string
		code  int
		check func(out, errOut string) bool
	}{
		{[]string{"lance", "cat", db, "--limit", "0"}, 0, func(o, _ string) bool { return o == "" }},
		{[]string{"lance", "cat", db, "--limit", "1"}, 0, func(o, _ string) bool { return lines(o) == 1 }},
		{[]string{"lance", "cat", db, "--version", "3"}, 0, func(o, _ string) bool { return lines(o) == 2 }}, // the first put and a writer mark
		{[]string{"kv", "scan", db, "--limit", "0"}, 0, func(o, _ string) bool { return lines(o) == 3 }},
		{[]string{"kv", "get", db, "a", "--version", "3"}, 0, func(o, _ string) bool { return o == "v\n" }},
		{[]string{"metrics", repo, "resnet-cifar10-1", "lr", "--max-points", "0"}, 0, func(o, _ string) bool { return lines(o) == 2 }},
		{[]string{"lance", "compact", db, "--target-rows", "4294967295"}, 0, func(o, _ string) bool { return strings.HasPrefix(o, "version ") }},
		{[]string{"lance", "compact", db, "--target-rows", "0"}, 0, func(o, _ string) bool { return strings.HasPrefix(o, "version ") }},
		{[]string{"kv", "cleanup", db, "--older-than", "2w"}, 0, func(o, _ string) bool { return strings.HasPrefix(o, "removed 0 versions") }},
		{[]string{"kv", "cleanup", db, "--older-than", "1d12h"}, 0, func(o, _ string) bool { return strings.HasPrefix(o, "removed 0 versions") }},
		{[]string{"lance", "cleanup", db, "--older-than", "0d", "--retain-versions", "0"}, 0, func(o, _ string) bool { return strings.HasPrefix(o, "removed ") }},
		// The expiry is accepted: the server gets as far as the token file.
		{append(s3, "--expiry", "1s"), 1, func(_, e string) bool { return strings.Contains(e, "token file") }},
		{append(s3, "--expiry", "7d"), 1, func(_, e string) bool { return strings.Contains(e, "token file") }},
		{append(s3, "--expiry", "1w"), 1, func(_, e string) bool { return strings.Contains(e, "token file") }},
	}
	for _, c := range accepted {
		code, out, e := runCLI(c.args...)
		if code != c.code || !c.check(out, e) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", strings.Join(c.args, " "), code, out, e)
		}
	}
}

// FuzzParseDuration: the duration flags' parser never panics, never
// yields a negative duration, and reads back what formatDuration prints.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "0s", "0d", "14d", "2w", "1d12h", "90m", "1.5h", "-1h", "1d-2h", "15250w", "106752d", "w", "3d2w", " 7d ", "1w1d1h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("%q: negative %v", s, d)
		}
		back, err := parseDuration(formatDuration(d))
		if err != nil || back != d {
			t.Fatalf("%q: %v prints as %q, which reads as %v, %v", s, d, formatDuration(d), back, err)
		}
	})
}
