package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/fsstore"
)

// resumeGateEnv names a file: a kv0 track started by a process test with
// it creates <file>.ready.<pid>, then waits for the file to exist before it
// claims the run it resumes (resumeGate), so that the test can release
// racing processes at once.
const resumeGateEnv = "KV0_TEST_RESUME_GATE"

// setResumeGate installs the gate of resumeGateEnv (TestMain, in the
// child process).
func setResumeGate() {
	gate := os.Getenv(resumeGateEnv)
	if gate == "" {
		return
	}
	resumeGate = func() {
		_ = os.WriteFile(fmt.Sprintf("%s.ready.%d", gate, os.Getpid()), nil, 0o644)
		deadline := time.Now().Add(60 * time.Second)
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for time.Now().Before(deadline) {
			if _, err := os.Stat(gate); err == nil {
				return
			}
			<-tick.C
		}
	}
}

// openRepoAt opens the repository in folder path: writable with the clock
// now, or read-only with the crashed threshold crashedAfter.
func openRepoAt(t *testing.T, path string, readOnly bool, now func() time.Time, crashedAfter time.Duration) *tracking.Repo {
	t.Helper()
	st, err := fsstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tracking.OpenRepo(context.Background(), st, "", tracking.RepoOptions{ReadOnly: readOnly, FlushInterval: -1,
		Now: now, CrashedAfter: crashedAfter})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// writeCrashedRuns writes the runs ids into the repository at path, each
// with points 0..4 of m (100+step), an hour ago, and leaves them running:
// they read as crashed.
func writeCrashedRuns(t *testing.T, path string, ids ...string) {
	t.Helper()
	ctx := context.Background()
	hourAgo := time.Now().Add(-time.Hour)
	r := openRepoAt(t, path, false, func() time.Time { return hourAgo }, 0)
	for _, id := range ids {
		run, err := r.StartRun(ctx, tracking.RunSpec{ID: id, Name: id})
		if err != nil {
			t.Fatal(err)
		}
		for s := range 5 {
			if err := run.Track(100+float64(s), "m"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkTrackedRun checks the status and the points of m of run id.
func checkTrackedRun(t *testing.T, r *tracking.Repo, id, status string, want map[int64]float64) {
	t.Helper()
	ctx := context.Background()
	in, err := r.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != status {
		t.Errorf("run %s: status %s, want %s", id, in.Status, status)
	}
	sid, _ := tracking.NewSeriesID(id, "m", nil)
	data, err := r.ReadMany(ctx, []tracking.SeriesID{sid}, tracking.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]float64{}
	for i, s := range data[0].Steps {
		got[s] = data[0].Values[i]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("run %s: points %v, want %v", id, got, want)
	}
}

// pointLines are kv0 track input lines: points of m with values base+i
// (default steps) and, when status is set, the final status.
func pointLines(base float64, n int, status string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"name": "m", "value": %v}`+"\n", base+float64(i))
	}
	if status != "" {
		fmt.Fprintf(&b, `{"status": %q}`+"\n", status)
	}
	return b.String()
}

// resumeOutcome waits until p either printed the "run ID" line of a
// resume that succeeded (true) or exited (false).
func resumeOutcome(t *testing.T, p *kv0Proc) bool {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if strings.Contains("\n"+p.stderr.text(), "\nrun ") {
			return true
		}
		select {
		case <-p.done:
			return strings.Contains("\n"+p.stderr.text(), "\nrun ")
		case <-p.stderr.notify:
		case <-deadline:
			t.Fatalf("kv0 track neither resumed nor exited; stderr:\n%s", p.stderr.text())
		}
	}
}

// waitCrashed waits until run id reads as crashed with the threshold d.
func waitCrashed(t *testing.T, path, id string, d time.Duration) {
	t.Helper()
	r := openRepoAt(t, path, true, nil, d)
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for ; ; <-tick.C {
		in, err := r.Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status == tracking.StatusCrashed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still reads %s (heartbeat %v)", id, in.Status, in.HeartbeatAt)
		}
	}
}

// TestTrackResumeRace resumes one crashed run from two kv0 track processes
// with their own write-ahead logs (two hosts), released together by a
// gate just before they claim the run, 50 times over: exactly one resumes
// it, the other exits with status 1 saying that the run is held by
// another writer, and the run ends with the winner's points and status.
func TestTrackResumeRace(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const rounds = 50
	dir, gates := t.TempDir(), t.TempDir()
	repo := filepath.Join(dir, "repo")
	ids := make([]string, rounds)
	for i := range ids {
		ids[i] = fmt.Sprintf("race-%02d", i)
	}
	writeCrashedRuns(t, repo, ids...)
	hosts := [2][]string{{"KV0_WAL_DIR=" + t.TempDir()}, {"KV0_WAL_DIR=" + t.TempDir()}}
	statuses := [2]string{tracking.StatusFailed, tracking.StatusAborted}
	winners := make([]int, rounds)
	sameMoment := 0
	for round, id := range ids {
		gate := filepath.Join(gates, fmt.Sprint(round))
		var procs [2]*kv0Proc
		for h := range procs {
			procs[h] = startKV0(t, dir, append(hosts[h], resumeGateEnv+"="+gate), "track", "repo", "--resume", id)
		}
		// Both wait at the gate: release them together.
		deadline := time.Now().Add(60 * time.Second)
		tick := time.NewTicker(time.Millisecond)
		for {
			ready, _ := filepath.Glob(gate + ".ready.*")
			if len(ready) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the racers did not reach the gate (%d did)", round, len(ready))
			}
			<-tick.C
		}
		tick.Stop()
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		won := [2]bool{resumeOutcome(t, procs[0]), resumeOutcome(t, procs[1])}
		if won[0] == won[1] {
			t.Fatalf("round %d: resumed by %v of the two writers\nA:\n%s\nB:\n%s", round, won, procs[0].stderr.text(), procs[1].stderr.text())
		}
		w := 0
		if won[1] {
			w = 1
		}
		winners[round] = w
		loser := procs[1-w]
		if code := loser.wait(t); code != 1 || !strings.Contains(loser.stderr.text(), "held by another writer") {
			t.Fatalf("round %d: the loser exited with %d:\n%s", round, code, loser.stderr.text())
		}
		if strings.Contains(loser.stderr.text(), "at the same time") {
			sameMoment++ // both read the same claims; the create-only write decided
		}
		// The winner writes once the race is decided.
		procs[w].send(t, pointLines(float64(1000*(w+1)), 5, statuses[w]))
		procs[w].stdin.Close()
		if code := procs[w].wait(t); code != 0 {
			t.Fatalf("round %d: the winner exited with %d:\n%s", round, code, procs[w].stderr.text())
		}
	}
	t.Logf("%d of %d races were decided by the claim's create-only write (the others by the winner's fresh claim)", sameMoment, rounds)
	r := openRepoAt(t, repo, true, nil, 0)
	for round, id := range ids {
		w := winners[round]
		want := map[int64]float64{}
		for s := range int64(5) {
			want[s] = 100 + float64(s)
			want[5+s] = float64(1000*(w+1)) + float64(s)
		}
		checkTrackedRun(t, r, id, statuses[w], want)
	}
}

// TestTrackSupersededWriter pauses (SIGSTOP) a kv0 track that resumed a
// run, so that its run reads as crashed, lets a kv0 track of another host
// take the run over and finish it, then lets the first go on (SIGCONT):
// at its next commit it finds that it lost the run, commits nothing more
// of it and exits with status 1. The lines it acknowledged before stay,
// the new holder's points follow them, and the status is the new holder's.
func TestTrackSupersededWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	writeCrashedRuns(t, repo, "zombie")
	hostA := []string{"KV0_WAL_DIR=" + t.TempDir(), "KV0_CRASHED_AFTER=2s"}
	hostB := []string{"KV0_WAL_DIR=" + t.TempDir(), "KV0_CRASHED_AFTER=2s"}
	a := startKV0(t, dir, hostA, "track", "repo", "--resume", "zombie", "--flush-interval", "50ms", "--ack")
	a.runID(t)
	a.send(t, pointLines(200, 5, ""))
	a.stdout.waitFor(t, "the ack of line 5", func(s string) bool { return s == "5" })
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitCrashed(t, repo, "zombie", 2*time.Second)
	if _, errOut, code := runKV0(t, dir, hostB, pointLines(300, 5, tracking.StatusFailed), "track", "repo", "--resume", "zombie"); code != 0 {
		t.Fatalf("takeover: exit %d: %s", code, errOut)
	}
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	a.send(t, pointLines(400, 3, ""))
	if code := a.wait(t); code != 1 || !strings.Contains(a.stderr.text(), "held by another writer") {
		t.Fatalf("the superseded writer exited with %d:\n%s", code, a.stderr.text())
	}
	if acks := a.stdout.text(); acks != "5" {
		t.Fatalf("the superseded writer acknowledged %q, want only 5", acks)
	}
	want := map[int64]float64{}
	for s := range int64(5) {
		want[s] = 100 + float64(s)   // the crashed writer's
		want[5+s] = 200 + float64(s) // acknowledged by the superseded writer
		want[10+s] = 300 + float64(s)
	}
	checkTrackedRun(t, openRepoAt(t, repo, true, nil, 0), "zombie", tracking.StatusFailed, want)
	// The superseded writer's host has nothing left to replay into the run.
	if _, errOut, code := runKV0(t, dir, hostA, "", "track", "repo", "--run", "probe"); code != 0 {
		t.Fatalf("a later writer on the superseded writer's host: exit %d: %s", code, errOut)
	}
	checkTrackedRun(t, openRepoAt(t, repo, true, nil, 0), "zombie", tracking.StatusFailed, want)
}

// TestTrackReplayAfterTakeover kills (SIGKILL) a kv0 track holding lines
// in its write-ahead log only; once its run reads as crashed a kv0 track of
// another host resumes and finishes it. The next kv0 track on the killed
// writer's host replays its log, but not into the run taken over: its
// new holder continued from what was committed. The acknowledged lines
// stay.
func TestTrackReplayAfterTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	walA := t.TempDir()
	hostA := []string{"KV0_WAL_DIR=" + walA, "KV0_CRASHED_AFTER=1h"} // no heartbeat commits meanwhile
	hostB := []string{"KV0_WAL_DIR=" + t.TempDir(), "KV0_CRASHED_AFTER=2s"}
	a := startKV0(t, dir, hostA, "track", "repo", "--run", "victim", "--flush-rows", "5", "--flush-interval", "1h", "--ack")
	id := a.runID(t)
	a.send(t, pointLines(100, 5, ""))
	a.stdout.waitFor(t, "the ack of line 5", func(s string) bool { return s == "5" })
	for s := 100; s < 103; s++ {
		a.send(t, fmt.Sprintf(`{"name": "m", "value": %d, "step": %d}`+"\n", 800+s, s))
	}
	a.send(t, `{"params": {"late_marker": 1}}`+"\n")
	waitWAL(t, walA, "late_marker")
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(t)
	waitCrashed(t, repo, id, 2*time.Second)
	if _, errOut, code := runKV0(t, dir, hostB, pointLines(300, 5, tracking.StatusFailed), "track", "repo", "--resume", id); code != 0 {
		t.Fatalf("takeover: exit %d: %s", code, errOut)
	}
	if _, errOut, code := runKV0(t, dir, hostA, "", "track", "repo", "--run", "probe"); code != 0 {
		t.Fatalf("a later writer on the killed writer's host: exit %d: %s", code, errOut)
	}
	// The log was replayed (and released): no segment holds its lines.
	found := false
	_ = filepath.WalkDir(walA, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".seg") {
			if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), "late_marker") {
				found = true
			}
		}
		return nil
	})
	if found {
		t.Fatal("the killed writer's log was not replayed")
	}
	r := openRepoAt(t, repo, true, nil, 0)
	want := map[int64]float64{}
	for s := range int64(5) {
		want[s] = 100 + float64(s)
		want[5+s] = 300 + float64(s)
	}
	checkTrackedRun(t, r, id, tracking.StatusFailed, want)
	ps, err := r.AllParams(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ps["late_marker"]; ok {
		t.Fatalf("the killed writer's parameter was replayed into the run taken over: %v", ps)
	}
}
