package apitest

// Benchmarks of `kv0 serve` (docs/benchmarks.md, `make bench-api`), each
// side by side with the same read in-process:
//
//   BenchmarkSeriesRead   one 1,000-point series out of 10 runs × 10 series ×
//                         100k points (after Optimize): warm and cold, through
//                         kv0 serve (a real process on loopback) and through
//                         the Go API (tracking.Repo.ReadMany) in this process,
//                         alternately in one loop
//   BenchmarkSeriesLoad   the same read from 32 concurrent clients for
//                         -apibench.load: requests/s and latency percentiles
//   BenchmarkRowsStream   a 1M-row metrics-shaped table: kv0 lance cat to a
//                         file against kv0 serve's JSON Lines and Arrow
//                         streams, and the server's peak memory (VmHWM) for
//                         100k, 1M and 2M rows
//
// They are not part of `make test` (the tests of this package run with
// -run filters that skip them).

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/httpstore/api"
	"github.com/kv0/kv0/native/fsstore"
)

var (
	benchKeep = flag.String("apibench.dir", "", "keep (and reuse) the benchmark repository and tables in `DIR`")
	benchLoad = flag.Duration("apibench.load", 5*time.Second, "duration of each 32-client load run")
	benchRows = flag.Int("apibench.rows", 1_000_000, "rows of the large streamed table")
	// -apibench.profile builds kv0 with -tags kv0_profile and has the warm
	// benchmarks' servers write their CPU, block, mutex and heap profiles
	// and an execution trace into DIR (native/cmd/kv0/serve_profile.go).
	benchProfile  = flag.String("apibench.profile", "", "profile the warm benchmarks' kv0 serve into `DIR` (cpu.pprof, trace.out, block.pprof, mutex.pprof, heap.pprof)")
	benchBaseline = flag.String("apibench.baseline", "", "also time the kv0 binary at `PATH` (another build, e.g. before a change) in warm-pair")
	// -apibench.baseline-uncached also times the baseline build with
	// --answer-cache 0 (builds from before that flag refuse it).
	benchBaselineUncached = flag.Bool("apibench.baseline-uncached", false, "with -apibench.baseline, also time the baseline with --answer-cache 0")
	benchEnvs             = flag.String("apibench.serve-env", "", "extra environment of every kv0 serve, `K=V,K=V` (e.g. GODEBUG=gctrace=1)")
	benchStderr           = flag.Bool("apibench.serve-stderr", false, "copy kv0 serve's standard error to this process' (with -apibench.serve-env GODEBUG=gctrace=1)")
)

const (
	benchRuns, benchSeries, benchSteps = 10, 10, 100_000
	benchClients                       = 32
	benchMaxPoints                     = 1000
)

type benchEnv struct {
	kv0   string // the built binary
	repo  string // the 10 × 10 × 100k repository
	ids   []tracking.SeriesID
	rows  string // folder holding tables of rows/10, rows and 2×rows rows
	large int
}

// benchTmp is the temporary folder of the fixtures, when -apibench.dir
// does not keep them.
var benchTmp string

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if benchTmp != "" {
		os.RemoveAll(benchTmp)
	}
	os.Exit(code)
}

var (
	benchOnce sync.Once
	benchVal  *benchEnv
	benchErr  error
)

func setupBench(b *testing.B) *benchEnv {
	b.Helper()
	benchOnce.Do(func() { benchVal, benchErr = buildBench() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchVal
}

func buildBench() (*benchEnv, error) {
	dir := *benchKeep
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "kv0-apibench-"); err != nil {
			return nil, err
		}
		benchTmp = dir // removed by TestMain
	}
	env := &benchEnv{kv0: filepath.Join(dir, "kv0"), repo: filepath.Join(dir, "repo"), rows: filepath.Join(dir, "rows"), large: *benchRows}
	build := exec.Command("go", "build", "-o", env.kv0, "./native/cmd/kv0")
	if *benchProfile != "" {
		env.kv0 += "-profile" // never mistaken for the release build
		build = exec.Command("go", "build", "-tags", "kv0_profile", "-o", env.kv0, "./native/cmd/kv0")
	}
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %v\n%s", err, out)
	}
	ctx := context.Background()
	for ri := 0; ri < benchRuns; ri++ {
		for m := 0; m < benchSeries; m++ {
			id, _ := tracking.NewSeriesID(benchRunID(ri), fmt.Sprintf("metric/%02d", m), nil)
			env.ids = append(env.ids, id)
		}
	}
	if _, err := os.Stat(filepath.Join(env.repo, "done")); err != nil {
		if err := writeBenchRepo(ctx, env.repo); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(env.rows, fmt.Sprintf("done-3-%d", env.large))); err != nil {
		os.RemoveAll(env.rows)
		st, err := fsstore.Open(env.rows)
		if err != nil {
			return nil, err
		}
		for _, t := range []struct {
			name string
			n    int
		}{{"small.lance", env.large / 10}, {"large.lance", env.large}, {"double.lance", 2 * env.large}} {
			if err := writeRowsTable(ctx, st, t.name, t.n); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(env.rows, fmt.Sprintf("done-3-%d", env.large)), nil, 0o644); err != nil {
			return nil, err
		}
	}
	return env, nil
}

func benchRunID(ri int) string { return fmt.Sprintf("%032x", ri+1) }

func writeBenchRepo(ctx context.Context, dir string) error {
	os.RemoveAll(dir)
	st, err := fsstore.Open(dir)
	if err != nil {
		return err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1})
	if err != nil {
		return err
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ri := 0; ri < benchRuns; ri++ {
		run, err := r.StartRun(ctx, tracking.RunSpec{ID: benchRunID(ri), Name: fmt.Sprint("run-", ri), Experiment: "bench"})
		if err != nil {
			return err
		}
		for s := 0; s < benchSteps; s++ {
			st := int64(s)
			ts := base.Add(time.Duration(s) * time.Millisecond)
			for m := 0; m < benchSeries; m++ {
				v := math.Sin(float64(s)/1000+float64(m)) + float64(ri)/10
				if err := run.Track(v, fmt.Sprintf("metric/%02d", m), tracking.TrackOptions{Step: &st, Time: ts}); err != nil {
					return err
				}
			}
		}
	}
	if err := r.Flush(ctx); err != nil {
		return err
	}
	if _, err := r.Optimize(ctx); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "done"), nil, 0o644)
}

// writeRowsTable writes a metrics-shaped table of n rows in 64Ki-row
// batches.
func writeRowsTable(ctx context.Context, st *fsstore.Store, name string, n int) error {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "series_id", Type: arrow.PrimitiveTypes.Uint64}, {Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "epoch", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "value", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	for from := 0; from < n; from += 1 << 16 {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		for i := from; i < min(n, from+1<<16); i++ {
			bld.Field(0).(*array.Uint64Builder).Append(uint64(i/100_000) + 1<<60)
			bld.Field(1).(*array.Int64Builder).Append(int64(i % 100_000))
			bld.Field(2).(*array.Int64Builder).Append(int64(i % 100_000 / 10_000))
			bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1767225600000000 + int64(i)*1000))
			bld.Field(4).(*array.Float64Builder).Append(math.Sin(float64(i) / 977))
		}
		recs = append(recs, bld.NewRecordBatch())
		bld.Release()
	}
	_, err := lance.Create(ctx, st, name, schema, lance.Batches(recs...), lance.WriteOptions{})
	return err
}

// server is a kv0 serve process.
type server struct {
	cmd *exec.Cmd
	url string
}

func startServer(b *testing.B, env *benchEnv, root string, extraEnv ...string) *server {
	return startServerArgs(b, env, root, nil, extraEnv...)
}

// startServerArgs starts kv0 serve with more arguments and environment.
func startServerArgs(b *testing.B, env *benchEnv, root string, args []string, extraEnv ...string) *server {
	b.Helper()
	cmd := exec.Command(env.kv0, append([]string{"serve", root, "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = os.Environ()
	if *benchEnvs != "" {
		cmd.Env = append(cmd.Env, strings.Split(*benchEnvs, ",")...)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	var stderr bytes.Buffer // kept out of the benchmark's output lines
	cmd.Stderr = &stderr
	if *benchStderr {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "http://"); i >= 0 {
			go io.Copy(io.Discard, out)
			return &server{cmd: cmd, url: strings.TrimSuffix(strings.Fields(sc.Text()[i:])[0], "/")}
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	b.Fatalf("kv0 serve printed no URL: %s", stderr.String())
	return nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
}

// profileEnv is the environment that has a warm benchmark's server profile
// itself into -apibench.profile's folder (none without the flag).
func profileEnv(b *testing.B) []string {
	if *benchProfile == "" {
		return nil
	}
	dir := filepath.Join(*benchProfile, strings.ReplaceAll(b.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return []string{"KV0_PROFILE_DIR=" + dir}
}

// peakRSS is the server's peak resident memory (Linux VmHWM), in MB.
func (s *server) peakRSS(b *testing.B) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		b.Fatalf("peak memory: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients * 2, MaxConnsPerHost: benchClients * 2}}
}

// getBody reads url's answer whole (so that the connection is reused) and
// returns its length.
func getBody(c *http.Client, url string) (int64, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return n, err
}

// reader is the client of the latency benchmarks: one keep-alive
// connection per server, requests built once per URL and the answer read
// whole into one buffer of its own (large enough for a 1,000-point series
// in one read when the bytes are there), so that it allocates and copies
// little beside net/http's own work.
type reader struct {
	c   *http.Client
	buf []byte
}

func newReader() *reader {
	return &reader{c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, ReadBufferSize: 64 << 10,
		DisableCompression: true}}, buf: make([]byte, 1<<20)}
}

func (rd *reader) get(req *http.Request) (int, error) {
	resp, err := rd.c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n := 0
	for {
		if n == len(rd.buf) {
			rd.buf = append(rd.buf, make([]byte, len(rd.buf))...)
		}
		k, err := resp.Body.Read(rd.buf[n:])
		n += k
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if resp.StatusCode != 200 {
		return n, fmt.Errorf("%s: status %d: %s", req.URL, resp.StatusCode, rd.buf[:min(n, 200)])
	}
	return n, nil
}

// pointsRequests are the requests of pointsURL for every id.
func pointsRequests(b *testing.B, base string, ids []tracking.SeriesID) []*http.Request {
	reqs := make([]*http.Request, len(ids))
	for i, id := range ids {
		req, err := http.NewRequest(http.MethodGet, pointsURL(base, id), nil)
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = req
	}
	return reqs
}

func pointsURL(base string, id tracking.SeriesID) string {
	return fmt.Sprintf("%s/api/v1/series/points?ids=%d&max_points=%d", base, id, benchMaxPoints)
}

// reportLatency reports percentiles of the durations.
func reportLatency(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	pct := func(p float64) float64 {
		return float64(ds[min(len(ds)-1, int(p*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkSeriesRead(b *testing.B) {
	env := setupBench(b)
	ctx := context.Background()
	st, err := fsstore.Open(env.repo)
	if err != nil {
		b.Fatal(err)
	}
	readGo := func(r *tracking.Repo, id tracking.SeriesID) error {
		data, err := r.ReadMany(ctx, []tracking.SeriesID{id}, tracking.ReadOptions{MaxPoints: benchMaxPoints})
		if err == nil && data[0].Len() != benchMaxPoints {
			err = fmt.Errorf("series %d: %d points", id, data[0].Len())
		}
		return err
	}
	// Warm: one handle and one server, both having read every series
	// once; each iteration reads one series through both, alternately,
	// so that the machine's load weighs on both alike.
	b.Run("warm", func(b *testing.B) {
		r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		// Every path reads the series (no answers kept).
		s := startServerArgs(b, env, env.repo, []string{"--answer-cache", "0"}, profileEnv(b)...)
		defer s.stop()
		// The same handler in this process, on loopback too (what the
		// handler adds without a second process to schedule) and called
		// directly (what it adds without HTTP).
		h := api.New(st, "", api.Options{AnswerCache: -1})
		defer h.Close()
		local := httptest.NewServer(h)
		defer local.Close()
		rd := newReader()
		srvReqs, localReqs := pointsRequests(b, s.url, env.ids), pointsRequests(b, local.URL, env.ids)
		for i, id := range env.ids {
			if err := readGo(r, id); err != nil {
				b.Fatal(err)
			}
			for _, req := range []*http.Request{srvReqs[i], localReqs[i]} {
				if _, err := rd.get(req); err != nil {
					b.Fatal(err)
				}
			}
		}
		goDs, srvDs, localDs, handlerDs := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := i % len(env.ids)
			id := env.ids[k]
			t0 := time.Now()
			if err := readGo(r, id); err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if _, err := rd.get(srvReqs[k]); err != nil {
				b.Fatal(err)
			}
			t2 := time.Now()
			if _, err := rd.get(localReqs[k]); err != nil {
				b.Fatal(err)
			}
			t3 := time.Now()
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, pointsURL("", id), nil))
			if w.Code != 200 {
				b.Fatalf("handler: %d %s", w.Code, w.Body)
			}
			goDs, srvDs, localDs = append(goDs, t1.Sub(t0)), append(srvDs, t2.Sub(t1)), append(localDs, t3.Sub(t2))
			handlerDs = append(handlerDs, time.Since(t3))
		}
		reportSideBySide(b, goDs, srvDs)
		b.ReportMetric(percentile(localDs, 0.5), "inproc-handler-p50-ms")
		b.ReportMetric(percentile(localDs, 0.5)-percentile(goDs, 0.5), "inproc-added-p50-ms")
		b.ReportMetric(percentile(handlerDs, 0.5)-percentile(goDs, 0.5), "handler-added-p50-ms")
	})
	// Warm, the pair alone: the Go API and kv0 serve, alternately,
	// this process collecting nothing while a server is timed, so that the
	// collection of the Go API's garbage (15 MB a read) never runs beside
	// the server's work (with this process otherwise idle while it waits
	// for the answer, the collector's idle workers would take both cores).
	// Forcing a collection before each read instead (runtime.GC) made the
	// Go API's reads slower than the server's: their fresh heap faults its
	// pages in again. kv0 serve runs twice: keeping no answers (--answer-cache 0,
	// every request reads its series as ReadMany does: what the server
	// adds to the same read) and as it ships (answers kept by version);
	// -apibench.baseline adds another build of kv0 serve (keeping no
	// answers), e.g. the one before a change, to the same loop.
	b.Run("warm-pair", func(b *testing.B) {
		r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		type path struct {
			name string
			reqs []*http.Request
			ds   []time.Duration
		}
		paths := []*path{{name: "go"}}
		serve := func(name string, bin string, args []string, extraEnv ...string) {
			e := *env
			e.kv0 = bin
			s := startServerArgs(b, &e, e.repo, args, extraEnv...)
			b.Cleanup(s.stop)
			paths = append(paths, &path{name: name, reqs: pointsRequests(b, s.url, e.ids)})
		}
		serve("serve-uncached", env.kv0, []string{"--answer-cache", "0"}, profileEnv(b)...)
		serve("serve", env.kv0, nil)
		if *benchBaseline != "" {
			serve("baseline", *benchBaseline, nil) // an older build: no answer cache, or --answer-cache 0 would be refused
			if *benchBaselineUncached {
				serve("baseline-uncached", *benchBaseline, []string{"--answer-cache", "0"})
			}
		}
		rd := newReader()
		rng, order := rand.New(rand.NewPCG(1, 2)), slices.Clone(paths)
		read := func(p *path, k int) error {
			if p.reqs == nil {
				return readGo(r, env.ids[k])
			}
			_, err := rd.get(p.reqs[k])
			return err
		}
		for k := range env.ids {
			for _, p := range paths {
				if err := read(p, k); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			k := i % len(env.ids)
			// In a new order each time: a path timed right after the Go
			// API's read runs while this process still sweeps that
			// read's garbage, so none may always follow it.
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			for _, p := range order {
				// While a server is timed this process collects nothing:
				// SetGCPercent(-1) first waits for a collection under way
				// to finish (untimed). The Go API's reads collect as any
				// program's do, in their own time.
				gcPercent := 100
				if p.reqs != nil {
					gcPercent = debug.SetGCPercent(-1)
				}
				var err error
				t0 := time.Now()
				// A region per read, so that an execution trace of this
				// process (-test.trace) tells the paths apart.
				trace.WithRegion(ctx, p.name, func() { err = read(p, k) })
				p.ds = append(p.ds, time.Since(t0))
				if p.reqs != nil {
					debug.SetGCPercent(gcPercent)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		goP50 := percentile(paths[0].ds, 0.5)
		for _, p := range paths {
			b.ReportMetric(percentile(p.ds, 0.5), p.name+"-p50-ms")
			b.ReportMetric(percentile(p.ds, 0.99), p.name+"-p99-ms")
			if p != paths[0] {
				b.ReportMetric(percentile(p.ds, 0.5)-goP50, p.name+"-added-p50-ms")
			}
		}
		b.ReportMetric(0, "ns/op")
	})
	// Warm, each path in a loop of its own (the machine's load may drift
	// between them; the alternating loop above trades that for the
	// interference of one path's garbage with the next).
	b.Run("warm-blocks", func(b *testing.B) {
		r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		s := startServerArgs(b, env, env.repo, []string{"--answer-cache", "0"})
		defer s.stop()
		h := api.New(st, "", api.Options{AnswerCache: -1})
		defer h.Close()
		local := httptest.NewServer(h)
		defer local.Close()
		c := newClient()
		paths := []struct {
			name string
			read func(id tracking.SeriesID) error
		}{
			{"go", func(id tracking.SeriesID) error { return readGo(r, id) }},
			{"inproc", func(id tracking.SeriesID) error { _, err := getBody(c, pointsURL(local.URL, id)); return err }},
			{"serve", func(id tracking.SeriesID) error { _, err := getBody(c, pointsURL(s.url, id)); return err }},
		}
		p50 := map[string]float64{}
		b.ResetTimer()
		for _, p := range paths {
			for _, id := range env.ids {
				if err := p.read(id); err != nil {
					b.Fatal(err)
				}
			}
			ds := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if err := p.read(env.ids[i%len(env.ids)]); err != nil {
					b.Fatal(err)
				}
				ds = append(ds, time.Since(t0))
			}
			p50[p.name] = percentile(ds, 0.5)
			b.ReportMetric(p50[p.name], p.name+"-p50-ms")
		}
		b.ReportMetric(p50["inproc"]-p50["go"], "inproc-added-p50-ms")
		b.ReportMetric(p50["serve"]-p50["go"], "added-p50-ms")
		b.ReportMetric(0, "ns/op")
	})
	// Cold: a new handle (in-process) and a new server process for every
	// read (the file system's page cache stays warm).
	b.Run("cold", func(b *testing.B) {
		goDs, srvDs := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			id := env.ids[(i*37)%len(env.ids)]
			t0 := time.Now()
			r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
			if err != nil {
				b.Fatal(err)
			}
			if err := readGo(r, id); err != nil {
				b.Fatal(err)
			}
			goDs = append(goDs, time.Since(t0))
			r.Close()
			b.StopTimer()
			s := startServer(b, env, env.repo)
			c := newClient()
			b.StartTimer()
			t1 := time.Now()
			if _, err := getBody(c, pointsURL(s.url, id)); err != nil {
				b.Fatal(err)
			}
			srvDs = append(srvDs, time.Since(t1))
			b.StopTimer()
			s.stop()
			b.StartTimer()
		}
		reportSideBySide(b, goDs, srvDs)
	})
}

// reportSideBySide reports the latency percentiles of the in-process reads
// and of the server's, and what the server adds at the median.
func reportSideBySide(b *testing.B, goDs, srvDs []time.Duration) {
	b.ReportMetric(percentile(goDs, 0.5), "go-p50-ms")
	b.ReportMetric(percentile(goDs, 0.99), "go-p99-ms")
	b.ReportMetric(percentile(srvDs, 0.5), "serve-p50-ms")
	b.ReportMetric(percentile(srvDs, 0.99), "serve-p99-ms")
	b.ReportMetric(percentile(srvDs, 0.5)-percentile(goDs, 0.5), "added-p50-ms")
	b.ReportMetric(0, "ns/op")
}

// percentile is the q-quantile of the durations, in milliseconds.
func percentile(ds []time.Duration, q float64) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
}

// load runs op from benchClients goroutines for -apibench.load and reports
// requests/s and latency percentiles.
func load(b *testing.B, op func(i int) error) {
	var (
		mu    sync.Mutex
		ds    []time.Duration
		count atomic.Int64
		fail  atomic.Pointer[error]
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(*benchLoad)
	start := time.Now()
	for c := 0; c < benchClients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for i := c; time.Now().Before(deadline); i += benchClients {
				t0 := time.Now()
				if err := op(i); err != nil {
					fail.Store(&err)
					return
				}
				mine = append(mine, time.Since(t0))
				count.Add(1)
			}
			mu.Lock()
			ds = append(ds, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := fail.Load(); err != nil {
		b.Fatal(*err)
	}
	b.ReportMetric(float64(count.Load())/time.Since(start).Seconds(), "req/s")
	reportLatency(b, ds)
}

func BenchmarkSeriesLoad(b *testing.B) {
	env := setupBench(b)
	ctx := context.Background()
	st, err := fsstore.Open(env.repo)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("go-api", func(b *testing.B) {
		r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{ReadOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		load(b, func(i int) error {
			_, err := r.ReadMany(ctx, []tracking.SeriesID{env.ids[i%len(env.ids)]}, tracking.ReadOptions{MaxPoints: benchMaxPoints})
			return err
		})
	})
	// As kv0 serve ships (most answers kept after the first round), and
	// with no answers kept (every request reads its series).
	for _, v := range []struct {
		name string
		args []string
	}{{"serve", nil}, {"serve-uncached", []string{"--answer-cache", "0"}}} {
		b.Run(v.name, func(b *testing.B) {
			s := startServerArgs(b, env, env.repo, v.args)
			defer s.stop()
			c := newClient()
			load(b, func(i int) error {
				_, err := getBody(c, pointsURL(s.url, env.ids[i%len(env.ids)]))
				return err
			})
		})
	}
}

func BenchmarkRowsStream(b *testing.B) {
	env := setupBench(b)
	large := filepath.Join(env.rows, "large.lance")
	b.Run(fmt.Sprintf("cat-to-file/%d", env.large), func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "rows.jsonl")
		for i := 0; i < b.N; i++ {
			f, err := os.Create(out)
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command(env.kv0, "lance", "cat", large)
			cmd.Stdout = f
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
		b.ReportMetric(float64(env.large)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	})
	for _, format := range []string{"jsonl", "arrow"} {
		for _, t := range []struct {
			name string
			rows int
		}{{"small.lance", env.large / 10}, {"large.lance", env.large}, {"double.lance", 2 * env.large}} {
			b.Run(fmt.Sprintf("serve-%s/%d", format, t.rows), func(b *testing.B) {
				b.StopTimer()
				s := startServer(b, env, env.rows)
				defer s.stop()
				c := newClient()
				b.StartTimer()
				var bytes int64
				for i := 0; i < b.N; i++ {
					n, err := getBody(c, fmt.Sprintf("%s/api/v1/datasets/%s/rows?format=%s", s.url, t.name, format))
					if err != nil {
						b.Fatal(err)
					}
					bytes = n
				}
				b.ReportMetric(float64(t.rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				b.ReportMetric(float64(bytes)/1e6, "MB/answer")
				b.ReportMetric(s.peakRSS(b), "peak-RSS-MB")
			})
		}
	}
}
