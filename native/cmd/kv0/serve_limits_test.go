//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/fsstore"
)

// lockedBuffer is a bytes.Buffer safe for a process's writes and a
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveProc is kv0 serve running as a process (TestHelperServe).
type serveProc struct {
	base   string // http://127.0.0.1:PORT
	pid    int
	stderr *lockedBuffer
	exited chan error
}

// startServeProc runs kv0 serve with args (ROOT and flags; --listen is
// added) as a process and returns once it printed its URL. A positive
// maxAS bounds the process's address space (prlimit --as, when the
// system has prlimit). The process is killed when the test ends.
func startServeProc(t *testing.T, args []string, maxAS int64) *serveProc {
	t.Helper()
	args = append([]string{"serve"}, append(args, "--listen", "127.0.0.1:0")...)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServe$")
	if maxAS > 0 {
		if prlimit, err := exec.LookPath("prlimit"); err == nil {
			cmd = exec.Command(prlimit, fmt.Sprintf("--as=%d", maxAS), "--", os.Args[0], "-test.run=^TestHelperServe$")
		} else {
			t.Logf("no prlimit: the address space is not bounded")
		}
	}
	cmd.Env = append(os.Environ(), serveHelperEnv+"="+strings.Join(args, "\x1f"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.pid = cmd.Process.Pid
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if i := strings.Index(sc.Text(), "http://"); i >= 0 {
				select {
				case urls <- strings.TrimSuffix(strings.Fields(sc.Text()[i:])[0], "/"):
				default:
				}
			}
		}
		close(urls)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case u, ok := <-urls:
		if !ok {
			t.Fatalf("kv0 serve printed no URL: %s", p.stderr.String())
		}
		p.base = u
	case <-time.After(60 * time.Second):
		t.Fatalf("kv0 serve printed no URL in 60s: %s", p.stderr.String())
	}
	return p
}

// alive fails the test when the process has exited.
func (p *serveProc) alive(t *testing.T, what string) {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("%s: kv0 serve exited (%v): %s", what, err, tail(p.stderr.String(), 2000))
	default:
	}
	resp, err := http.Get(p.base + "/healthz")
	if err != nil {
		t.Fatalf("%s: /healthz: %v: %s", what, err, tail(p.stderr.String(), 2000))
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: /healthz: %d", what, resp.StatusCode)
	}
}

// tail is the end of a process's stderr, after the line of a Go runtime
// failure when there is one (its goroutines' dump follows it).
func tail(s string, n int) string {
	if i := strings.Index(s, "fatal error:"); i >= 0 {
		line, _, _ := strings.Cut(s[i:], "\n")
		return line + " ..."
	}
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// peakRSS is the process's peak resident set (VmHWM), in bytes. It is
// read from the status of any of its threads: a process whose first
// thread has exited (a zombie leader, which some runtimes leave while the
// others serve) shows no memory in its own.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("the threads of process %d: %v (has it exited?)", pid, err)
	}
	for _, status := range append([]string{fmt.Sprintf("/proc/%d/status", pid)}, tasks...) {
		b, err := os.ReadFile(status)
		if err != nil {
			continue // a thread that ended meanwhile
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					t.Fatal(line, err)
				}
				return kb << 10
			}
		}
	}
	t.Fatalf("no VmHWM in the status of process %d or its threads", pid)
	return 0
}

// trackSeries writes a repository under dir with one run holding series
// named m0, m1, ... of n points each and returns their ids.
func trackSeries(t *testing.T, dir string, series, n int) []tracking.SeriesID {
	t.Helper()
	ctx := context.Background()
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.NoSync = true
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rn, err := r.StartRun(ctx, tracking.RunSpec{Name: "big"})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	var ids []tracking.SeriesID
	for k := range series {
		name := fmt.Sprintf("m%d", k)
		for s := range n {
			step := int64(s)
			v := math.Sin(float64(s)/97) * float64(k+1) / 3
			if err := rn.Track(v, name, tracking.TrackOptions{Step: &step, Time: base.Add(time.Duration(s) * time.Millisecond)}); err != nil {
				t.Fatal(err)
			}
		}
		id, err := tracking.NewSeriesID(rn.ID(), name, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rn.Finish(ctx, tracking.StatusFinished); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// outcome is one answer of the memory tests: its status, whether it was
// whole, streamed or cut, its body's length and error code.
type outcome struct {
	status   int
	streamed bool
	n        int64
	code     string // of an error body
	retry    string
	err      error // reading it
}

func getOutcome(client *http.Client, url string) outcome {
	resp, err := client.Get(url)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	o := outcome{status: resp.StatusCode, streamed: resp.ContentLength < 0, retry: resp.Header.Get("Retry-After")}
	if resp.StatusCode != 200 {
		var e api.ErrorBody
		b, _ := io.ReadAll(resp.Body)
		if json.Unmarshal(b, &e) == nil {
			o.code = e.Error.Code
		}
		return o
	}
	o.n, o.err = io.Copy(io.Discard, resp.Body)
	return o
}

// TestServeMemoryBound sends kv0 serve (a process, under an address-space
// limit of 3 GiB) the request that took 2.4 GB: 1,000 copies of the id of
// one series of 16,000 points with every point (the URL is 20 KB), then
// ten of them at once, and asserts the server answers each (one object:
// the id is answered once) and stays within a bound of peak RSS far below
// what the copies would take. Then, with small budgets, ten requests at
// once for every point of eight series of 100,000 points: each is answered
// (whole, streamed in parts, or refused with 413/503 and the JSON body) and
// the peak RSS stays within the server's budget's bound.
func TestServeMemoryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 800,000 points")
	}
	dir := t.TempDir()
	ids := trackSeries(t, dir, 1, 16000)
	one := strconv.FormatUint(uint64(ids[0]), 10)
	p := startServeProc(t, []string{dir}, 3<<30)
	client := &http.Client{Timeout: 2 * time.Minute}
	single := getOutcome(client, p.base+"/api/v1/series/points?max_points=0&ids="+one)
	if single.status != 200 || single.err != nil {
		t.Fatalf("one series: %+v", single)
	}
	idle := peakRSS(t, p.pid)
	url := p.base + "/api/v1/series/points?max_points=0&ids=" + strings.TrimSuffix(strings.Repeat(one+",", 1000), ",")
	got := getOutcome(client, url)
	p.alive(t, "the 1,000-id request")
	after1 := peakRSS(t, p.pid)
	t.Logf("peak RSS: %d MiB after one series (%d KB answer), %d MiB after the 1,000-id request (%+v)", idle>>20, single.n>>10, after1>>20, got)
	if got.status != 200 || got.err != nil || got.n != single.n {
		t.Fatalf("the 1,000-id request: %+v; want the one series' %d bytes", got, single.n)
	}
	// The bound: what the server held before, and 64 MiB for one read of
	// the series (a few MiB) with the collector's slack. Answering each
	// copy took 2.4 GB.
	bound := idle + 64<<20
	if after1 > bound {
		t.Fatalf("peak RSS %d MiB after the 1,000-id request, over the bound of %d MiB", after1>>20, bound>>20)
	}
	var wg sync.WaitGroup
	outs := make([]outcome, 10)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = getOutcome(client, url)
		}()
	}
	wg.Wait()
	p.alive(t, "ten 1,000-id requests")
	after10 := peakRSS(t, p.pid)
	t.Logf("peak RSS after ten 1,000-id requests at once: %d MiB", after10>>20)
	for i, o := range outs {
		if o.status != 200 || o.err != nil || o.n != single.n {
			t.Errorf("request %d of ten: %+v", i, o)
		}
	}
	if bound += 64 << 20; after10 > bound {
		t.Fatalf("peak RSS %d MiB after ten 1,000-id requests, over the bound of %d MiB", after10>>20, bound>>20)
	}

	// Eight series of 100,000 points, every point: about 130 MiB to
	// answer whole, a request may hold 32 MiB and the server 64.
	dir2 := t.TempDir()
	big := trackSeries(t, dir2, 8, 100_000)
	var list []string
	for _, id := range big {
		list = append(list, strconv.FormatUint(uint64(id), 10))
	}
	p2 := startServeProc(t, []string{dir2, "--request-memory", "32", "--server-memory", "64"}, 3<<30)
	idle2 := peakRSS(t, p2.pid)
	var mu sync.Mutex
	seen := map[string]int{}
	for _, format := range []string{"", "&format=f64"} {
		url := p2.base + "/api/v1/series/points?max_points=0&ids=" + strings.Join(list, ",") + format
		var want outcome
		for i := range outs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				o := getOutcome(client, url)
				outs[i] = o
				mu.Lock()
				defer mu.Unlock()
				switch {
				case o.status == 200 && o.err == nil && o.streamed:
					seen["streamed"+format]++
				case o.status == 200 && o.err == nil:
					seen["whole"+format]++
				case o.status == 413 && o.code == api.CodeTooLarge:
					seen["413"+format]++
				case o.status == 503 && o.code == api.CodeBusy && o.retry != "":
					seen["503"+format]++
				default:
					t.Errorf("%s: %+v", url, o)
				}
			}()
		}
		wg.Wait()
		for _, o := range outs {
			if o.status == 200 {
				if want.n == 0 {
					want = o
				} else if o.n != want.n {
					t.Errorf("answers of %d and %d bytes to the same request", want.n, o.n)
				}
			}
		}
		p2.alive(t, "ten requests for 800,000 points")
	}
	peak := peakRSS(t, p2.pid)
	t.Logf("budgets 32/64 MiB: peak RSS %d MiB (%d MiB before); answers %v", peak>>20, idle2>>20, seen)
	if seen["streamed"] == 0 {
		t.Errorf("no JSON answer was streamed: %v", seen)
	}
	// The collector's limit is twice the server's budget (128 MiB) above
	// what the server held before.
	if bound := idle2 + 192<<20; peak > bound {
		t.Fatalf("peak RSS %d MiB with budgets of 32/64 MiB, over the bound of %d MiB", peak>>20, bound>>20)
	}
}

// TestServeWriteTimeout: a client that stops reading a long answer is cut
// off once a piece of it has waited --write-timeout (the server logs the
// cut stream and the client gets less than the answer, then the end), while
// a client reading steadily gets the whole of an answer that takes longer
// than the timeout.
func TestServeWriteTimeout(t *testing.T) {
	dir := t.TempDir()
	const size = 64 << 20
	content := make([]byte, size)
	for i := range content {
		content[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), content, 0o644); err != nil {
		t.Fatal(err)
	}
	const steadySize = 24 << 20
	if err := os.WriteFile(filepath.Join(dir, "steady.bin"), content[:steadySize], 0o644); err != nil {
		t.Fatal(err)
	}
	// 4 s: a reader that a loaded machine leaves unscheduled for a
	// moment (seconds, at a load of 20 on two cores) is not taken for one
	// that stopped.
	const timeout = 4 * time.Second
	p := startServeProc(t, []string{dir, "--write-timeout", timeout.String()}, 0)
	addr := strings.TrimPrefix(p.base, "http://")
	dial := func(name string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(c, "GET /files/%s HTTP/1.1\r\nHost: x\r\n\r\n", name); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// The stalled client: the headers, then nothing read (64 MiB is more
	// than the sockets' buffers hold).
	c := dial("big.bin")
	defer c.Close()
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.ContentLength != size {
		t.Fatalf("%d, %d bytes", resp.StatusCode, resp.ContentLength)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stderr.String(), "/files/big.bin: stream cut") {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled answer was not cut within 30s (write timeout %v): %s", timeout, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.Copy(io.Discard, resp.Body)
	if n >= size {
		t.Fatalf("the cut answer still gave all %d bytes (%v)", n, err)
	}
	t.Logf("stalled client: cut after %d of %d bytes (%v)", n, size, err)
	p.alive(t, "a stalled client")

	// The steady client: 64 KiB every 20 ms (3.2 MB/s), whose answer
	// takes longer than the timeout.
	c2 := dial("steady.bin")
	defer c2.Close()
	br2 := bufio.NewReaderSize(c2, 4096)
	resp2, err := http.ReadResponse(br2, nil)
	if err != nil || resp2.StatusCode != 200 {
		t.Fatal(resp2, err)
	}
	start := time.Now()
	buf := make([]byte, 64<<10)
	var got []byte
	for {
		k, err := io.ReadFull(resp2.Body, buf)
		got = append(got, buf[:k]...)
		if err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start)
	if !bytes.Equal(got, content[:steadySize]) {
		t.Fatalf("the steady client got %d of %d bytes in %v: %s", len(got), steadySize, took, tail(p.stderr.String(), 500))
	}
	if took < timeout*3/2 {
		t.Errorf("the steady read took %v, not longer than the timeout: the test proves nothing", took)
	}
	t.Logf("steady client: all %d bytes in %v", steadySize, took)
}

// TestServeSpecialFiles: a FIFO, a Unix socket and a device (when the
// test may make one) inside ROOT or a static folder are never opened for
// reading: every route that can reach one answers at once (404 for the
// file itself), where a FIFO's open used to block each request for ever,
// holding an OS thread. And a symbolic link out of --web or --wasm is not
// followed: the file outside is never served.
func TestServeSpecialFiles(t *testing.T) {
	sr := newServeRoot(t)
	web, wasm := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(web, "app.js"), []byte("ok()"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wasm, "kv0.wasm"), []byte("\x00asm"), 0o644); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{web, wasm} {
		if err := os.Symlink(secret, filepath.Join(d, "p")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Dir(secret), filepath.Join(d, "up")); err != nil {
			t.Fatal(err)
		}
	}
	var ln []net.Listener
	defer func() {
		for _, l := range ln {
			l.Close()
		}
	}()
	// special makes a file of each kind at path+"-fifo", "-sock", "-dev"
	// and returns the names made.
	special := func(path string) []string {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		made := []string{path + "-fifo"}
		if err := syscall.Mkfifo(path+"-fifo", 0o644); err != nil {
			t.Fatal(err)
		}
		if l, err := net.Listen("unix", path+"-sock"); err == nil {
			ln = append(ln, l)
			made = append(made, path+"-sock")
		} else {
			t.Logf("no socket at %s: %v", path, err)
		}
		if err := syscall.Mknod(path+"-dev", syscall.S_IFCHR|0o644, 1<<8|3); err == nil {
			made = append(made, path+"-dev")
		}
		return made
	}
	var files []string
	for _, f := range special(filepath.Join(sr.dir, "x")) {
		files = append(files, "/files/"+filepath.Base(f), "/api/v1/datasets/"+filepath.Base(f)+"/info")
	}
	for _, f := range special(filepath.Join(web, "w")) {
		files = append(files, "/"+filepath.Base(f))
	}
	for _, f := range special(filepath.Join(wasm, "w")) {
		files = append(files, "/wasm/"+filepath.Base(f))
	}
	// A dataset's and the repository's latest-version hints, a folder
	// of the runs table and the records folder hold some too: the
	// routes reading them answer as if they were not there.
	hint := filepath.Join(sr.dir, sr.datasets[0], "_versions", "latest_version_hint.json")
	_ = os.Remove(hint)
	if err := syscall.Mkfifo(hint, 0o644); err != nil {
		t.Fatal(err)
	}
	special(filepath.Join(sr.dir, "runs.lance", "_versions", "z"))
	special(filepath.Join(sr.dir, "records", "r"))
	if err := syscall.Mkfifo(filepath.Join(web, "index.html"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServeProc(t, []string{sr.dir, "--web", web, "--wasm", wasm}, 0)
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(path string) (int, []byte) {
		t.Helper()
		resp, err := client.Get(p.base + path)
		if err != nil {
			t.Fatalf("%s: %v (kv0 serve: %s)", path, err, tail(p.stderr.String(), 500))
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, path := range append(files, "/", "/p", "/up/passwd", "/wasm/p", "/wasm/up/passwd") {
		code, b := do(path)
		var e api.ErrorBody
		if code != 404 || json.Unmarshal(b, &e) != nil || e.Error.Code != api.CodeNotFound || bytes.Contains(b, []byte("root:x")) {
			t.Errorf("%s: %d %q, want 404 with the JSON body", path, code, b)
		}
	}
	for _, path := range []string{"/app.js", "/wasm/kv0.wasm", "/api/v1/runs", "/api/v1/records", "/api/v1/datasets/" + sr.datasets[0] + "/info",
		"/api/v1/datasets/" + sr.datasets[0] + "/log", "/api/v1/datasets/" + sr.datasets[0] + "/rows?limit=3"} {
		if code, b := do(path); code != 200 {
			t.Errorf("%s: %d %s", path, code, b)
		}
	}
	p.alive(t, "special files")
}

// TestServeLimitFlags: the bounds' flags refuse what they cannot mean
// (usage errors, exit 2), and the runtime's memory limit follows
// --server-memory unless GOMEMLIMIT is set.
func TestServeLimitFlags(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"serve", dir, "--request-memory", "-1"},
		{"serve", dir, "--server-memory", "-64"},
		{"serve", dir, "--server-memory", "lots"},
		{"serve", dir, "--write-timeout", "-1s"},
		{"serve", dir, "--write-timeout", "10"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errOut.String())
		}
	}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		server int64
		want   int64
	}{{0, 2 * api.DefaultServerMemory}, {64 << 20, 128 << 20}, {-1, -1}} {
		got, ok := serveMemoryLimit(getenv, c.server)
		if c.want < 0 && ok || c.want >= 0 && (!ok || got != c.want) {
			t.Errorf("--server-memory %d: limit %d %v, want %d", c.server, got, ok, c.want)
		}
	}
	env["GOMEMLIMIT"] = "1GiB"
	if _, ok := serveMemoryLimit(getenv, 64<<20); ok {
		t.Error("GOMEMLIMIT was overridden")
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--help"}, &out, &errOut); code != 0 {
		t.Fatalf("serve --help: %d %s", code, errOut.String())
	}
	help := out.String() + errOut.String()
	for _, flag := range []string{"--request-memory", "--server-memory", "--write-timeout"} {
		if !strings.Contains(help, flag) {
			t.Errorf("kv0 serve --help does not name %s", flag)
		}
	}
}
