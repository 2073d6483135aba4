package main

import (
	"io"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fsouza/fake-gcs-server/fakestorage"
)

var commitTime = regexp.MustCompile(`\d{4}-\d\d-\d\dT[0-9:.]+Z`)

// TestCommandsOnGCS runs the CLI's writing and reading commands on gs://
// (fake-gcs-server in process, reached through STORAGE_EMULATOR_HOST) and
// on a local folder, and checks that every read prints the same on both.
func TestCommandsOnGCS(t *testing.T) {
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, PublicHost: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: "kv0-cli"})
	hs := httptest.NewServer(fake.HTTPHandler())
	t.Cleanup(hs.Close)
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(hs.URL, "http://"))
	t.Setenv("KV0_WAL_DIR", t.TempDir())
	roots := []string{"gs://kv0-cli/some/prefix/", filepath.Join(t.TempDir(), "local") + "/"}
	const points = `{"name": "loss", "value": 2.5, "step": 0, "timestamp": 1767323045.5, "context": {"subset": "train"}}
{"name": "loss", "value": NaN, "step": 1, "timestamp": 1767323046}
{"name": "loss", "value": 1.25, "step": 2, "timestamp": "2026-01-02T03:04:07Z"}
{"params": {"optimizer": {"lr": 0.001}, "layers": 4}}
`
	for _, root := range roots {
		mustRun(t, "lance", "write", root+"t.lance", "--mode", "create", "--input", ipcFile(t, 0, 100))
		mustRun(t, "lance", "write", root+"t.lance", "--mode", "append", "--input", ipcFile(t, 100, 50))
		mustRun(t, "lance", "delete", root+"t.lance", "--where", "id < 10")
		mustRun(t, "lance", "tag", "create", root+"t.lance", "two", "--version", "2")
		for _, kv := range [][2]string{{"apple", "red"}, {"banana", "yellow"}, {"cherry", "dark red"}} {
			mustRun(t, "kv", "put", root+"db.lance", kv[0], kv[1])
		}
		mustRun(t, "kv", "delete", root+"db.lance", "banana")
		mustRun(t, "kv", "compact", root+"db.lance")
		old := stdin
		stdin = strings.NewReader(points)
		mustRun(t, "track", root+"runs", "--run", "r1", "--experiment", "e")
		stdin = old
		mustRun(t, "optimize", root+"runs")
	}
	for _, args := range [][]string{
		{"lance", "cat", "ROOT/t.lance"},
		{"lance", "cat", "ROOT/t.lance", "--tag", "two", "--columns", "name", "--where", "id >= 140"},
		{"lance", "log", "ROOT/t.lance"},
		{"kv", "get", "ROOT/db.lance", "cherry"},
		{"kv", "scan", "ROOT/db.lance"},
		{"params", "ROOT/runs", "r1"},
		{"metrics", "ROOT/runs", "r1", "loss", "--csv"},
	} {
		var outs []string
		for _, root := range roots {
			a := make([]string, len(args))
			for i, s := range args {
				a[i] = strings.Replace(s, "ROOT/", root, 1)
			}
			out := mustRun(t, a...)
			if args[1] == "log" {
				out = commitTime.ReplaceAllString(out, "TIME") // commit times differ
			}
			outs = append(outs, out)
		}
		if strings.TrimSpace(outs[0]) == "" || outs[0] != outs[1] {
			t.Errorf("kv0 %s: gs:// printed\n%s\nthe local folder\n%s", strings.Join(args, " "), outs[0], outs[1])
		}
	}
	// The datasets are in the bucket, under the prefix.
	objs, _, err := fake.ListObjectsWithOptions("kv0-cli", fakestorage.ListOptions{Prefix: "some/prefix/"})
	if err != nil || len(objs) < 10 {
		t.Fatalf("the bucket holds %d objects under the prefix (%v)", len(objs), err)
	}
	// Runs differ by id and creation time: check what is stable.
	out := mustRun(t, "runs", roots[0]+"runs", "--experiment", "e")
	if !strings.Contains(out, "r1") || !strings.Contains(out, "finished") {
		t.Errorf("kv0 runs on gs://: %s", out)
	}
}
