package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// liveSeries reads, with a reader of its own (read-only, no WAL), the
// number of points and last step of each live run's train loss.
func liveSeries(t *testing.T, repo string) map[string][2]int64 {
	t.Helper()
	r, err := openRepo(context.Background(), repo, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, err := r.Runs(context.Background(), tracking.RunFilter{Experiment: liveExperiment})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]int64{}
	for _, in := range runs {
		sid, err := tracking.NewSeriesID(in.ID, "loss", map[string]any{"subset": "train"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := r.ReadMany(context.Background(), []tracking.SeriesID{sid}, tracking.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		last := int64(-1)
		if n := d[0].Len(); n > 0 {
			last = d[0].Steps[n-1]
		}
		out[in.Name] = [2]int64{int64(d[0].Len()), last}
	}
	return out
}

// walSegments returns the WAL segment files under dir that hold bytes.
func walSegments(t *testing.T, dir string) []string {
	t.Helper()
	var segs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".seg") {
			if fi, err := d.Info(); err == nil && fi.Size() > 0 {
				segs = append(segs, path)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return segs
}

var stoppedLine = regexp.MustCompile(`^demo: stopped after (\d+) steps`)

// checkStoppedCleanly checks what a live demo left after its stop: no WAL
// segment to replay, both live runs aborted, every step it reported
// committed (train loss and learning rate once per step).
func checkStoppedCleanly(t *testing.T, repo, walDir, stderr string) {
	t.Helper()
	if segs := walSegments(t, walDir); len(segs) > 0 {
		t.Errorf("WAL segments left after the stop: %v", segs)
	}
	var steps int64 = -1
	for _, l := range strings.Split(stderr, "\n") {
		if m := stoppedLine.FindStringSubmatch(l); m != nil {
			steps, _ = strconv.ParseInt(m[1], 10, 64)
		}
	}
	if steps <= 0 {
		t.Fatalf("no step count on stderr:\n%s", stderr)
	}
	r, err := openRepo(context.Background(), repo, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	runs, err := r.Runs(context.Background(), tracking.RunFilter{Experiment: liveExperiment})
	if err != nil || len(runs) != 2 {
		t.Fatalf("live runs: %d, %v", len(runs), err)
	}
	for _, in := range runs {
		if in.Status != tracking.StatusAborted || in.EndedAt.IsZero() {
			t.Errorf("%s: status %s, ended %v after the stop", in.Name, in.Status, in.EndedAt)
		}
		var ids []tracking.SeriesID
		for _, c := range []struct {
			name string
			ctx  map[string]any
		}{{"lr", nil}, {"loss", map[string]any{"subset": "train"}}} {
			id, err := tracking.NewSeriesID(in.ID, c.name, c.ctx)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		data, err := r.ReadMany(context.Background(), ids, tracking.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range data {
			if n := d.Len(); int64(n) != steps || d.Steps[0] != 0 || d.Steps[n-1] != steps-1 {
				t.Errorf("%s: series %d holds %d points, want the %d steps reported", in.Name, i, n, steps)
			}
		}
	}
}

// TestDemoLive runs kv0 demo --live as a process: another reader sees
// the two running runs grow, with heartbeats; SIGINT commits everything
// and leaves no WAL to replay.
func TestDemoLive(t *testing.T) {
	dir := t.TempDir()
	repo, walDir := filepath.Join(dir, "demo"), filepath.Join(dir, "wal")
	env := []string{"KV0_WAL_DIR=" + walDir}
	// On a fresh location the demo is written first.
	p := startKV0(t, dir, env, "demo", repo, "--runs", "1", "--steps", "300", "--live", "--interval", "10ms")
	p.stdout.waitFor(t, "the live runs' line", func(s string) bool { return strings.HasPrefix(s, "demo: the runs live-") })
	if !strings.Contains(p.stdout.text(), "resnet-cifar10-1 (resnet-cifar10, finished)") {
		t.Errorf("the demo's summary is missing:\n%s", p.stdout.text())
	}
	first := liveSeries(t, repo)
	if len(first) != 2 {
		t.Fatalf("live runs seen by another reader: %v", first)
	}
	// The points grow while it runs (commits about every second).
	deadline := time.Now().Add(20 * time.Second)
	for {
		now := liveSeries(t, repo)
		grown := 0
		for name, c := range now {
			if c[0] > first[name][0] && c[1] > first[name][1] {
				grown++
			}
		}
		if grown == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live runs did not grow: %v then %v", first, now)
		}
		time.Sleep(50 * time.Millisecond) // polling a file-backed repository; the assertion waits on data, not time
	}
	out, errOut, code := runKV0(t, dir, env, "", "runs", repo, "--experiment", liveExperiment, "--json")
	if code != 0 {
		t.Fatalf("kv0 runs: %s", errOut)
	}
	var runs []tracking.RunInfo
	if err := json.Unmarshal([]byte(out), &runs); err != nil {
		t.Fatal(err)
	}
	for _, in := range runs {
		if in.Status != tracking.StatusRunning || in.HeartbeatAt.IsZero() {
			t.Errorf("%s while live: status %s, heartbeat %v", in.Name, in.Status, in.HeartbeatAt)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGINT:\n%s", code, p.stderr.text())
	}
	checkStoppedCleanly(t, repo, walDir, p.stderr.text())
	// --live on a repository that holds one adds two more live runs only.
	_, errOut, code = runKV0(t, dir, env, "", "demo", repo, "--live", "--serve", "300.0.0.1:1")
	if code != 1 || !strings.Contains(errOut, "--listen 300.0.0.1:1") {
		t.Errorf("a bad --serve address: exit %d: %s", code, errOut)
	}
	if segs := walSegments(t, walDir); len(segs) > 0 {
		t.Errorf("WAL segments left after a failed start: %v", segs)
	}
	if n := len(liveSeries(t, repo)); n != 2 {
		t.Errorf("%d live runs after a failed start, want the 2 of before", n)
	}
}

// TestDemoLiveServeProcessGroup runs what make run's last line runs, in a
// process group of its own as a terminal would, reads the live runs
// through its HTTP API and stops it with SIGINT to the group: it exits 0,
// leaves no process and no WAL behind, and committed every step.
func TestDemoLiveServeProcessGroup(t *testing.T) {
	dir := t.TempDir()
	repo, walDir := filepath.Join(dir, "demo"), filepath.Join(dir, "wal")
	env := []string{"KV0_WAL_DIR=" + walDir}
	if _, errOut, code := runKV0(t, dir, env, "", "demo", repo, "--runs", "1", "--steps", "200"); code != 0 {
		t.Fatalf("kv0 demo: %s", errOut)
	}
	cmd := kv0Command(dir, env, "demo", repo, "--live", "--interval", "10ms", "--serve", "127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := startProc(t, cmd)
	urlLine := p.stdout.waitFor(t, "the URL", func(s string) bool { return strings.Contains(s, "http://127.0.0.1:") })
	base := strings.TrimSuffix(urlLine[strings.Index(urlLine, "http://"):], "/")
	p.stdout.waitFor(t, "the live runs' line", func(s string) bool { return strings.HasPrefix(s, "demo: the runs live-") })
	get := func(path string, v any) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v: %.200s", path, err, b)
		}
	}
	var runs []tracking.RunInfo
	get("/api/v1/runs?experiment="+liveExperiment, &runs)
	if len(runs) != 2 || runs[0].Status != tracking.StatusRunning || runs[1].Status != tracking.StatusRunning {
		t.Fatalf("live runs through the API: %+v", runs)
	}
	steps := func() int {
		var series []struct {
			Name    string `json:"name"`
			Context string `json:"context"`
			Stats   struct {
				Count int `json:"count"`
			} `json:"stats"`
		}
		get("/api/v1/runs/"+runs[0].ID+"/series", &series)
		for _, s := range series {
			if s.Name == "lr" {
				return s.Stats.Count
			}
		}
		return 0
	}
	before := steps()
	deadline := time.Now().Add(20 * time.Second)
	for steps() <= before {
		if time.Now().After(deadline) {
			t.Fatalf("the API shows no new points after %d", before)
		}
		time.Sleep(50 * time.Millisecond) // polling the server; the assertion waits on data, not time
	}
	pgid := cmd.Process.Pid
	if err := syscall.Kill(-pgid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d after SIGINT to the group:\n%s", code, p.stderr.text())
	}
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the process group still has members after the exit (kill -0: %v)", err)
	}
	if !strings.Contains(p.stderr.text(), "kv0 serve: stopped") {
		t.Errorf("the server did not report its stop:\n%s", p.stderr.text())
	}
	checkStoppedCleanly(t, repo, walDir, p.stderr.text())
}

// TestDemoRecords: the demo writes records tables that name its runs.
func TestDemoRecords(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "demo")
	if code, _, errOut := runCLI("demo", dir, "--runs", "2", "--steps", "100"); code != 0 {
		t.Fatalf("demo: %s", errOut)
	}
	r, err := openRepo(ctx, dir, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tables, err := r.RecordTables(ctx)
	if err != nil || !slices.Equal(tables, []string{"checkpoints", "eval_samples"}) {
		t.Fatalf("record tables %v, %v", tables, err)
	}
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range runs {
		samples, err := r.ListRecords(ctx, "eval_samples", tracking.RecordQuery{RunID: in.ID})
		if err != nil {
			t.Fatal(err)
		}
		ckpt, err := r.ListRecords(ctx, "checkpoints", tracking.RecordQuery{RunID: in.ID})
		if err != nil {
			t.Fatal(err)
		}
		wantSamples := 0
		if strings.HasSuffix(in.Name, "-1") {
			wantSamples = 4
		}
		wantCkpt := 0
		if in.Status == tracking.StatusFinished {
			wantCkpt = 1
		}
		if len(samples) != wantSamples || len(ckpt) != wantCkpt {
			t.Errorf("%s (%s): %d samples, %d checkpoints; want %d, %d", in.Name, in.Status, len(samples), len(ckpt), wantSamples, wantCkpt)
		}
		for _, rec := range ckpt {
			var d struct{ Path string }
			if err := json.Unmarshal(rec.Data, &d); err != nil || !strings.Contains(d.Path, in.Name) {
				t.Errorf("%s: checkpoint %s (%v)", in.Name, rec.Data, err)
			}
		}
	}
	if fmt.Sprint(len(runs)) != "8" {
		t.Errorf("%d runs, want 8", len(runs))
	}
}
