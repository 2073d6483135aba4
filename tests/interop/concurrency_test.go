package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kv0/kv0/core/lance"
)

// TestConcurrentAppendsLancedb runs the concurrency test of core/lance (8
// writers, half goroutines and half processes, appending 200 one-row
// commits each while a compactor runs; 20 each with -short), takes the
// copy of the dataset it leaves through KV0_LANCE_CONCURRENCY_OUT, and
// checks that each lancedb counts and scans every row exactly once, lists
// every version, and agrees with kv0's reader.
func TestConcurrentAppendsLancedb(t *testing.T) {
	out := t.TempDir() // the dataset, written once for every lancedb
	written := false
	forEachInstall(t, func(t *testing.T, in *lanceInstall) {
		if !written {
			written = true
			runConcurrency(t, out)
		}
		checkConcurrency(t, in, out)
	})
}

const (
	concurrencyWriters = 8
	concurrencyCommits = 200 // 20 with -short
)

// runConcurrency runs core/lance's TestConcurrentAppends, which leaves its
// dataset in out.
func runConcurrency(t *testing.T, out string) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if inCI() {
			t.Fatal("CI=true but the go command is missing")
		}
		t.Skip("go command not found")
	}
	args := []string{"test", "-count=1", "-run", "^TestConcurrentAppends$", "./core/lance/"}
	if testing.Short() {
		args = append(args, "-short")
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "KV0_LANCE_CONCURRENCY_OUT="+out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %v: %v\n%s", args, err, tail(string(b), 4000))
	}
}

func checkConcurrency(t *testing.T, in *lanceInstall, out string) {
	const writers = concurrencyWriters
	commits := concurrencyCommits
	if testing.Short() {
		commits = 20
	}
	ds := filepath.Join(out, "t.lance")
	if _, err := os.Stat(ds); err != nil {
		t.Fatalf("the concurrency test left no dataset in %s: %v", out, err)
	}

	// What lancedb reads.
	c := in.command("concurrency.mjs", out)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	b, err := c.Output()
	if err != nil {
		t.Fatalf("node concurrency.mjs: %v\n%s", err, tail(stderr.String(), 4000))
	}
	var got struct {
		Rows, Scanned, Distinct, Versions int
		Sum, Min, Max                     string
		FirstVersion                      uint64 `json:"first_version"`
		LatestVersion                     uint64 `json:"latest_version"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("lancedb output %q: %v", b, err)
	}

	// What every writer appended: ids w*100000+i.
	want := writers * commits
	var sum, maxID int64
	for w := 0; w < writers; w++ {
		for i := 0; i < commits; i++ {
			id := int64(w*100000 + i)
			sum += id
			maxID = max(maxID, id)
		}
	}
	if got.Rows != want || got.Scanned != want || got.Distinct != want {
		t.Fatalf("lancedb: countRows %d, scanned %d, distinct ids %d; want %d each", got.Rows, got.Scanned, got.Distinct, want)
	}
	if got.Sum != strconv.FormatInt(sum, 10) || got.Min != "0" || got.Max != strconv.FormatInt(maxID, 10) {
		t.Fatalf("lancedb: ids sum %s min %s max %s; want %d, 0, %d", got.Sum, got.Min, got.Max, sum, maxID)
	}

	// kv0's reader on the same copy agrees on the rows and the versions.
	ctx := context.Background()
	st := mustStore(t, ds)
	d, err := lance.Open(ctx, st, "", lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.CountRows(ctx)
	if err != nil || int(n) != got.Rows {
		t.Fatalf("kv0 counts %d rows (%v), lancedb %d", n, err, got.Rows)
	}
	refs, err := lance.ListVersions(ctx, st, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != got.Versions || got.FirstVersion != 1 || got.LatestVersion != d.Version() ||
		uint64(got.Versions) != d.Version() {
		t.Fatalf("versions: kv0 %d (latest %d), lancedb %d (%d..%d)", len(refs), d.Version(), got.Versions, got.FirstVersion, got.LatestVersion)
	}
	if d.Version() < uint64(want)+1 {
		t.Fatalf("latest version %d, want at least %d (create and one per append)", d.Version(), want+1)
	}
	t.Logf("lancedb %s agrees: %d rows in %d versions written by %d concurrent writers", in.lancedb, got.Rows, got.Versions, writers)
}
