package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/inspect"
)

// fixture returns the kv.lance dataset of a lance-samples variant.
func fixture(t *testing.T, variant string) string {
	t.Helper()
	return filepath.Join(fixturesDir(t), variant, "kv.lance")
}

// TestErrorsNameTheLocation: a missing version or tag of a dataset at the
// root of its store names the location given, never `dataset ""`.
func TestErrorsNameTheLocation(t *testing.T) {
	ds := fixture(t, "default")
	for _, args := range [][]string{
		{"lance", "cat", ds, "--version", "7777"},
		{"lance", "info", ds, "--tag", "nope"},
	} {
		code, _, errOut := runCLI(args...)
		if code != 1 || !strings.Contains(errOut, ds+": ") || strings.Contains(errOut, `""`) {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}

// TestLegacyFormatName: info and cat name the legacy format as lance does
// (0.1).
func TestLegacyFormatName(t *testing.T) {
	ds := fixture(t, "legacy")
	code, out, errOut := runCLI("lance", "info", ds, "--json")
	if code != 0 {
		t.Fatalf("info: %d %s", code, errOut)
	}
	var info inspect.Info
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatal(err)
	}
	if info.DataFormat != "0.1" || len(info.Fragments) == 0 || info.Fragments[0].Files[0].Version != "0.1" {
		t.Errorf("info: data format %q, file %+v", info.DataFormat, info.Fragments)
	}
	code, _, errOut = runCLI("lance", "cat", ds)
	if code != 1 || !strings.Contains(errOut, "format 0.1 (legacy") {
		t.Errorf("cat: exit %d, %q", code, errOut)
	}
}

func TestColumnsTwice(t *testing.T) {
	ds := fixture(t, "default")
	if code, out, errOut := runCLI("lance", "cat", ds, "--columns", "seq,op,seq", "--limit", "1"); code != 2 || out != "" || !strings.Contains(errOut, `"seq"`) {
		t.Errorf("--columns seq,op,seq: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestDeleteRunsByNameOnce(t *testing.T) {
	dir, runID := metricsRepo(t)
	code, out, errOut := runCLI("delete-runs", dir, runID, "r1", runID)
	if code != 0 || out != "deleted 1 runs\n" {
		t.Fatalf("delete-runs ID NAME ID: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ := runCLI("runs", dir, "--json"); code != 0 || strings.Contains(out, runID) {
		t.Errorf("run still listed: %s", out)
	}
	if code, _, errOut := runCLI("delete-runs", dir, "nope"); code != 1 || !strings.Contains(errOut, `"nope"`) {
		t.Errorf("delete-runs of an unknown name: exit %d, %q", code, errOut)
	}
}

func TestKVCompactAndVersionTags(t *testing.T) {
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	db := filepath.Join(t.TempDir(), "db.lance")
	for _, c := range [][]string{
		{"kv", "put", db, "a", "1"}, {"kv", "put", db, "a", "2"}, {"kv", "put", db, "b", "3"},
		{"kv", "tag", db, "before-compaction"},
	} {
		if code, _, errOut := runCLI(c...); code != 0 {
			t.Fatalf("%v: %s", c, errOut)
		}
	}
	code, out, errOut := runCLI("kv", "compact", db)
	if code != 0 || !regexp.MustCompile(`^version \d+: 3 fragments \(\d+ rows\) compacted into 1 fragment \(\d+ rows\) at version \d+\n$`).MatchString(out) {
		t.Errorf("compact: exit %d, %q %q", code, out, errOut)
	}
	code, out, _ = runCLI("kv", "versions", db)
	if code != 0 || !strings.Contains(strings.SplitN(out, "\n", 2)[0], "TAGS") || strings.Count(out, "before-compaction") != 1 {
		t.Errorf("versions: %q", out)
	}
	code, out, _ = runCLI("kv", "versions", db, "--json")
	tagged := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var v struct {
			Version uint64   `json:"version"`
			Tags    []string `json:"tags"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil || v.Tags == nil {
			t.Fatalf("versions --json line %q: %v", line, err)
		}
		tagged += len(v.Tags)
	}
	if code != 0 || tagged != 1 {
		t.Errorf("versions --json: %d tags in %q", tagged, out)
	}
}
