package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/kv0/kv0/core/tracking"
)

// cliEnv makes the test binary run kv0's main instead of the tests, so
// that process tests start the real command (its signal handling, exit
// codes and output) without a separate build.
const cliEnv = "KV0_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(cliEnv) == "1" {
		setResumeGate()
		main()
		return
	}
	os.Exit(m.Run())
}

// lines collects a stream's lines and signals each new one.
type lines struct {
	mu     sync.Mutex
	all    []string
	notify chan struct{}
	closed bool
}

func newLines() *lines { return &lines{notify: make(chan struct{}, 1)} }

func (l *lines) feed(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.all = append(l.all, sc.Text())
		l.mu.Unlock()
		l.poke()
	}
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.poke()
}

func (l *lines) poke() {
	select {
	case l.notify <- struct{}{}:
	default:
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.all, "\n")
}

// waitFor waits until some line satisfies ok and returns it.
func (l *lines) waitFor(t *testing.T, what string, ok func(string) bool) string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		l.mu.Lock()
		for _, s := range l.all {
			if ok(s) {
				l.mu.Unlock()
				return s
			}
		}
		closed := l.closed
		l.mu.Unlock()
		if closed {
			t.Fatalf("stream ended without %s:\n%s", what, l.text())
		}
		select {
		case <-l.notify:
		case <-deadline:
			t.Fatalf("timed out waiting for %s:\n%s", what, l.text())
		}
	}
}

// kv0Proc is a running kv0 command.
type kv0Proc struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *lines
	done           chan struct{}
	err            error
}

func kv0Command(dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), cliEnv+"=1"), env...)
	return cmd
}

func startKV0(t *testing.T, dir string, env []string, args ...string) *kv0Proc {
	t.Helper()
	return startProc(t, kv0Command(dir, env, args...))
}

// startProc starts cmd, collecting its output lines, and kills it at the
// end of the test if it still runs.
func startProc(t *testing.T, cmd *exec.Cmd) *kv0Proc {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	so, _ := cmd.StdoutPipe()
	se, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &kv0Proc{cmd: cmd, stdin: stdin, stdout: newLines(), stderr: newLines(), done: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.stdout.feed(so) }()
	go func() { defer wg.Done(); p.stderr.feed(se) }()
	go func() {
		wg.Wait()
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *kv0Proc) send(t *testing.T, text string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, text); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *kv0Proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("kv0 did not exit; stderr:\n%s", p.stderr.text())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// runID waits for the "run ID" line kv0 track prints on stderr.
func (p *kv0Proc) runID(t *testing.T) string {
	t.Helper()
	l := p.stderr.waitFor(t, "the run id", func(s string) bool { return strings.HasPrefix(s, "run ") })
	return strings.TrimPrefix(l, "run ")
}

// runKV0 runs one kv0 command to its end.
func runKV0(t *testing.T, dir string, env []string, input string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := kv0Command(dir, env, args...)
	cmd.Stdin = strings.NewReader(input)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// waitWAL waits until a file under walDir holds needle: the record of a
// line kv0 track has handed to its write-ahead log (segments are mapped
// shared, so their bytes are visible as soon as they are copied in).
func waitWAL(t *testing.T, walDir, needle string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		found := false
		_ = filepath.WalkDir(walDir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || found || !strings.HasSuffix(path, ".seg") {
				return nil
			}
			if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(needle)) {
				found = true
			}
			return nil
		})
		if found {
			return
		}
		<-tick.C
	}
	t.Fatalf("no WAL segment under %s holds %q", walDir, needle)
}

// fakeS3Env starts an in-process S3 server and returns the environment that
// points kv0 at it.
func fakeS3Env(t *testing.T) []string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket("kv0-test"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return []string{"AWS_ENDPOINT_URL=" + srv.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test-access",
		"AWS_SECRET_ACCESS_KEY=test-secret", "KV0_S3_PATH_STYLE=1", "KV0_S3_ALLOW_HTTP=1"}
}

// runJSON reads one run with kv0 run --json.
func runJSON(t *testing.T, dir string, env []string, repo, id string) tracking.RunInfo {
	t.Helper()
	out, errOut, code := runKV0(t, dir, env, "", "run", repo, id, "--json")
	if code != 0 {
		t.Fatalf("kv0 run: exit %d: %s", code, errOut)
	}
	var in tracking.RunInfo
	if err := json.Unmarshal([]byte(out), &in); err != nil {
		t.Fatalf("kv0 run --json: %v: %s", err, out)
	}
	return in
}

// metricValues reads a series with kv0 metrics --csv and returns its rows
// after the header.
func metricValues(t *testing.T, dir string, env []string, repo, id, name string) []string {
	t.Helper()
	out, errOut, code := runKV0(t, dir, env, "", "metrics", repo, id, name, "--csv")
	if code != 0 {
		t.Fatalf("kv0 metrics: exit %d: %s", code, errOut)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	return rows[1:]
}

// TestTrackReplayFromAnotherFolder kills a kv0 track (SIGKILL) whose
// points are only in its write-ahead log, in folder A, and continues from
// folder B: the next writer must replay them, for an s3:// repository and
// for local ones spelled relatively and absolutely. (Keying the WAL by the
// working directory plus the location made s3:// runs lose their points.)
func TestTrackReplayFromAnotherFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	os.MkdirAll(a, 0o755)
	os.MkdirAll(b, 0o755)
	s3env := fakeS3Env(t)
	abs := filepath.Join(base, "repo")
	for _, c := range []struct {
		name         string
		env          []string
		inA, inB     string
		readFrom     string
		readLocation string
	}{
		{"s3", s3env, "s3://kv0-test/team/repo", "s3://kv0-test/team/repo/", b, "s3://kv0-test/team/repo"},
		{"relative-then-absolute", nil, "../repo", abs + "/", b, abs},
		{"absolute-then-relative", nil, filepath.Join(base, "repo2"), "../repo2", b, filepath.Join(base, "repo2")},
	} {
		t.Run(c.name, func(t *testing.T) {
			walDir := t.TempDir()
			env := append([]string{"KV0_WAL_DIR=" + walDir}, c.env...)
			p := startKV0(t, a, env, "track", c.inA, "--run", "killed", "--flush-interval", "1h")
			id := p.runID(t)
			for s := range 20 {
				p.send(t, fmt.Sprintf(`{"name": "m", "value": %d, "step": %d}`+"\n", s*10, s))
			}
			p.send(t, `{"params": {"marker_`+c.name+`": 1}}`+"\n")
			waitWAL(t, walDir, "marker_"+c.name)
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			p.wait(t)
			if _, errOut, code := runKV0(t, b, env, "", "track", c.inB, "--resume", id, "--finish"); code != 0 {
				t.Fatalf("resume from folder B: exit %d: %s", code, errOut)
			}
			got := metricValues(t, c.readFrom, env, c.readLocation, id, "m")
			if len(got) != 20 {
				t.Fatalf("%d points after the replay, want 20: %q", len(got), got)
			}
			if in := runJSON(t, c.readFrom, env, c.readLocation, id); in.Status != tracking.StatusFinished {
				t.Fatalf("status %s after --resume --finish", in.Status)
			}
		})
	}
}

// TestTrackSIGTERM sends SIGTERM to a kv0 track holding points it has
// not committed: it must commit them, mark the run aborted, acknowledge
// the last line and exit non-zero.
func TestTrackSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, walDir := t.TempDir(), t.TempDir()
	env := []string{"KV0_WAL_DIR=" + walDir}
	p := startKV0(t, dir, env, "track", "repo", "--run", "term", "--flush-interval", "1h", "--flush-rows", "5", "--ack")
	id := p.runID(t)
	for s := range 5 {
		p.send(t, fmt.Sprintf(`{"name": "m", "value": %d}`+"\n", s))
	}
	p.stdout.waitFor(t, "the ack of line 5", func(s string) bool { return s == "5" })
	for s := 5; s < 7; s++ {
		p.send(t, fmt.Sprintf(`{"name": "m", "value": %d}`+"\n", s))
	}
	p.send(t, `{"params": {"before_term": true}}`+"\n")
	waitWAL(t, walDir, "before_term")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code == 0 {
		t.Fatalf("exit 0 after SIGTERM; stderr:\n%s", p.stderr.text())
	}
	if got := p.stdout.text(); got != "5\n8" {
		t.Fatalf("acks %q, want 5 then 8", got)
	}
	if !strings.Contains(p.stderr.text(), "aborted") {
		t.Fatalf("stderr does not say the run was aborted:\n%s", p.stderr.text())
	}
	// Read without replaying: the points were committed by kv0 track itself.
	if got := metricValues(t, dir, env, "repo", id, "m"); len(got) != 7 {
		t.Fatalf("%d points committed, want 7: %q", len(got), got)
	}
	if in := runJSON(t, dir, env, "repo", id); in.Status != tracking.StatusAborted || in.EndedAt.IsZero() {
		t.Fatalf("run after SIGTERM: %+v", in)
	}
}

// TestTrackHeartbeatCrashedResume checks, with real processes, the
// heartbeat of a live kv0 track, the crashed status once it is killed,
// and who may --resume a run: not while a writer on this host holds it,
// nor from another host (another WAL root) while its heartbeat is fresh,
// but at once on the host whose writer died, and from anywhere once it is
// crashed. A resume with empty input leaves the run unfinished unless
// --finish.
//
// The writers beat every 400 ms (KV0_CRASHED_AFTER=2s), but what must read
// as alive is judged with a threshold of 10 minutes, which no load makes a
// heartbeat miss, and what must read as crashed with one of 2 s, waited for
// with a deadline: no step depends on a process starting or a commit
// landing within a window.
func TestTrackHeartbeatCrashedResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	walHere, walThere := t.TempDir(), t.TempDir()
	writer := []string{"KV0_WAL_DIR=" + walHere, "KV0_CRASHED_AFTER=2s"}
	here := []string{"KV0_WAL_DIR=" + walHere, "KV0_CRASHED_AFTER=10m"}
	there := []string{"KV0_WAL_DIR=" + walThere, "KV0_CRASHED_AFTER=10m"}
	thereSoon := []string{"KV0_WAL_DIR=" + walThere, "KV0_CRASHED_AFTER=2s"}
	start := func() (*kv0Proc, string) {
		p := startKV0(t, dir, writer, "track", "repo", "--run", "hb", "--flush-interval", "50ms", "--ack")
		id := p.runID(t)
		p.send(t, `{"name": "m", "value": 1}`+"\n")
		p.stdout.waitFor(t, "the first ack", func(s string) bool { return s == "1" })
		return p, id
	}
	resume := func(env []string, id string, extra ...string) (string, int) {
		_, errOut, code := runKV0(t, dir, env, "", append([]string{"track", "repo", "--resume", id}, extra...)...)
		return errOut, code
	}
	p, id := start()
	// Alive for longer than the threshold: heartbeats keep it running.
	first := runJSON(t, dir, here, "repo", id).HeartbeatAt
	deadline := time.Now().Add(2 * time.Minute)
	for {
		in := runJSON(t, dir, here, "repo", id)
		if in.Status != tracking.StatusRunning {
			t.Fatalf("live writer's run reads as %s (heartbeat %v)", in.Status, in.HeartbeatAt)
		}
		if in.HeartbeatAt.Sub(first) > 2*time.Second {
			break // a heartbeat newer than a whole writer's threshold after the first
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat did not advance: %v then %v", first, in.HeartbeatAt)
		}
	}
	if errOut, code := resume(here, id); code == 0 || !strings.Contains(errOut, "is written by another process of this host") {
		t.Fatalf("second resume on this host: exit %d: %s", code, errOut)
	}
	if errOut, code := resume(there, id); code == 0 || !strings.Contains(errOut, "live writer on another host") {
		t.Fatalf("resume from another host: exit %d: %s", code, errOut)
	}
	// Killed: the host it ran on may resume at once (its heartbeat is its
	// own), with empty input the run stays unfinished.
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	if errOut, code := resume(here, id); code != 0 {
		t.Fatalf("resume on the crashed writer's host: exit %d: %s", code, errOut)
	}
	if in := runJSON(t, dir, here, "repo", id); in.Status != tracking.StatusRunning && in.Status != tracking.StatusCrashed {
		t.Fatalf("resume with empty input ended the run: %s", in.Status)
	}
	// The run is still running, with a fresh heartbeat, but the empty
	// resume let it go (a free claim): this host and any other may resume
	// it at once.
	if errOut, code := resume(here, id); code != 0 {
		t.Fatalf("second empty resume on the same host: exit %d: %s", code, errOut)
	}
	if errOut, code := resume(there, id); code != 0 {
		t.Fatalf("empty resume from another host of a run let go: exit %d: %s", code, errOut)
	}
	// Another host sees the dead writer's run as crashed once its heartbeat
	// is older than the threshold, and may then resume it.
	p, id = start()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t)
	if errOut, code := resume(there, id); code == 0 {
		t.Fatalf("resume from another host with a fresh heartbeat: exit 0: %s", errOut)
	}
	there = thereSoon
	deadline = time.Now().Add(2 * time.Minute)
	for {
		in := runJSON(t, dir, there, "repo", id)
		if in.Status == tracking.StatusCrashed {
			break
		}
		if in.Status != tracking.StatusRunning || time.Now().After(deadline) {
			t.Fatalf("killed writer's run reads as %s (heartbeat %v)", in.Status, in.HeartbeatAt)
		}
	}
	out, _, _ := runKV0(t, dir, there, "", "runs", "repo", "--status", "crashed", "--json")
	if !strings.Contains(out, id) {
		t.Fatalf("kv0 runs --status crashed does not list %s: %s", id, out)
	}
	if errOut, code := resume(there, id, "--finish"); code != 0 {
		t.Fatalf("resume --finish of a crashed run: exit %d: %s", code, errOut)
	}
	if in := runJSON(t, dir, there, "repo", id); in.Status != tracking.StatusFinished {
		t.Fatalf("after --resume --finish: %s", in.Status)
	}
}

// TestTrackFlushFlags checks that readers see points while kv0 track still
// runs, after --flush-interval, and that --flush-rows commits (and acks)
// at that many points.
func TestTrackFlushFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	env := []string{"KV0_WAL_DIR=" + t.TempDir()}
	p := startKV0(t, dir, env, "track", "repo", "--run", "fast", "--flush-interval", "100ms")
	id := p.runID(t)
	p.send(t, `{"name": "m", "value": 1}`+"\n")
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _, code := runKV0(t, dir, env, "", "metrics", "repo", id, "m", "--csv")
		if code == 0 && strings.Count(out, "\n") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the point did not become visible while kv0 track runs")
		}
	}
	p.stdin.Close()
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr.text())
	}

	p = startKV0(t, dir, env, "track", "repo", "--run", "rows", "--flush-interval", "1h", "--flush-rows", "3", "--ack")
	p.runID(t)
	p.send(t, "{\"name\": \"m\", \"value\": 1}\n\n{\"name\": \"m\", \"value\": 2}\n{\"name\": \"m\", \"value\": 3}\n")
	p.stdout.waitFor(t, "the ack of line 4", func(s string) bool { return s == "4" })
	p.stdin.Close()
	if code := p.wait(t); code != 0 || p.stdout.text() != "4" {
		t.Fatalf("exit %d, acks %q", code, p.stdout.text())
	}
}
