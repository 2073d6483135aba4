package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/fsstore"
	"github.com/kv0/kv0/native/wal"
)

var crashRounds = flag.Int("crash-rounds", 20, "rounds of TestTrackingCrash (a writer process killed at a random point each)")

const helperEnv = "KV0_TRACKING_HELPER"

// TestHelperProcess is the child of the process tests: it runs one role
// (KV0_TRACKING_HELPER) and prints an ack line on stdout after each call
// that returned. It is not a test on its own.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv(helperEnv)
	if role == "" {
		t.Skip("helper process only")
	}
	args := strings.Fields(os.Getenv(helperEnv + "_ARGS"))
	var err error
	switch role {
	case "writer":
		err = helperWriter(args)
		if errors.Is(err, tracking.ErrNotFound) {
			fmt.Println("D") // the run was deleted by another process
			err = nil
		}
	case "deleter":
		err = helperDeleter(args)
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// openWALRepo opens the repository in dir with a native/wal log under
// walDir (flushRows points per flush, a flush every interval).
func openWALRepo(dir, walDir string, flushRows int, interval time.Duration) (*tracking.Repo, error) {
	st, err := fsstore.Open(dir)
	if err != nil {
		return nil, err
	}
	l, err := wal.Open("repo:"+dir, wal.Options{Dir: walDir, Mode: wal.SyncNone})
	if err != nil {
		return nil, err
	}
	return tracking.OpenRepo(context.Background(), st, "", tracking.RepoOptions{WAL: l, FlushRows: flushRows, FlushInterval: interval})
}

// pointValue is the value of step s of metric k of a run: a checker can
// tell a point from any other.
func pointValue(run string, k int, s int64) float64 {
	h := 0
	for _, c := range run {
		h = h*31 + int(c)
	}
	return float64(h%1000) + float64(k)*1e6 + float64(s)/8
}

const crashMetrics = 3

// helperWriter: args run-id steps seed [dir walDir]. It starts (or resumes)
// the run, tracks crashMetrics metrics per step and acks "P <step>" once
// their Track calls returned (a returned Track is acknowledged: its point
// is in the WAL), now and then syncs the WAL, sets a
// parameter every 50 steps ("S <step>"), finishes ("F") and closes ("C").
// A run deleted by another process ends the writer with "D".
func helperWriter(args []string) error {
	if len(args) != 5 {
		return fmt.Errorf("writer: want run steps seed dir walDir, got %q", args)
	}
	id := args[0]
	steps, _ := strconv.ParseInt(args[1], 10, 64)
	seed, _ := strconv.ParseUint(args[2], 10, 64)
	rng := rand.New(rand.NewPCG(seed, 7))
	r, err := openWALRepo(args[3], args[4], 200+rng.IntN(2000), time.Duration(20+rng.IntN(80))*time.Millisecond)
	if err != nil {
		return err
	}
	ctx := context.Background()
	out := bufio.NewWriter(os.Stdout)
	ack := func(format string, a ...any) {
		fmt.Fprintf(out, format+"\n", a...)
		out.Flush()
	}
	run, err := r.ResumeRun(ctx, id)
	if errors.Is(err, tracking.ErrNotFound) {
		run, err = r.StartRun(ctx, tracking.RunSpec{ID: id, Name: id, Experiment: "crash"})
	}
	if err != nil {
		return err
	}
	ack("R")
	// Continue each metric after its last stored step (what survived of
	// the earlier writers is a prefix of what they logged).
	var start [crashMetrics]int64
	ss, err := r.AllSeries(ctx, id)
	if err != nil {
		return err
	}
	sids := make([]tracking.SeriesID, len(ss))
	for i, x := range ss {
		sids[i] = x.ID
	}
	stats, err := r.SeriesStats(ctx, sids)
	if err != nil {
		return err
	}
	for _, x := range ss {
		k, _ := strconv.Atoi(strings.TrimPrefix(x.Name, "m"))
		if st, ok := stats[x.ID]; ok && k < crashMetrics {
			start[k] = st.LastStep + 1
		}
	}
	from := min(start[0], start[1], start[2])
	batch := 1 + rng.IntN(60)
	var s int64
	for s = from; s < steps; s++ {
		for k := range crashMetrics {
			if s < start[k] {
				continue
			}
			st := s
			err := run.Track(pointValue(id, k, s), fmt.Sprint("m", k), tracking.TrackOptions{Step: &st})
			if errors.Is(err, tracking.ErrNotFound) {
				ack("D")
				return r.Close()
			}
			if err != nil {
				return err
			}
		}
		ack("P %d", s)
		if s%50 == 49 {
			if err := run.SetParams(map[string]any{"p": map[string]any{fmt.Sprint(s): s}}); err != nil {
				if errors.Is(err, tracking.ErrNotFound) {
					ack("D")
					return r.Close()
				}
				return err
			}
			ack("S %d", s)
		}
		if batch--; batch == 0 {
			// Now and then an explicit sync (a no-op for what Track already
			// logged; exercised all the same).
			if rng.IntN(4) == 0 {
				if err := r.SyncWAL(); err != nil {
					return err
				}
			}
			batch = 1 + rng.IntN(60)
			// Pace the writer (a training loop computes between steps), so
			// that kills land at every stage of its work.
			time.Sleep(time.Duration(rng.IntN(400)) * time.Microsecond)
		}
	}
	if err := run.Finish(ctx, ""); err != nil {
		if errors.Is(err, tracking.ErrNotFound) {
			ack("D")
			return r.Close()
		}
		return err
	}
	ack("F")
	if err := r.Close(); err != nil {
		return err
	}
	ack("C")
	return nil
}

// helperDeleter: args dir walDir rounds. It deletes every run whose name
// starts with "doomed" that it finds, rounds times, acking "X <id>".
func helperDeleter(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("deleter: want dir walDir rounds, got %q", args)
	}
	rounds, _ := strconv.Atoi(args[2])
	r, err := openWALRepo(args[0], args[1], 1000, 50*time.Millisecond)
	if err != nil {
		return err
	}
	ctx := context.Background()
	for range rounds {
		runs, err := r.Runs(ctx, tracking.RunFilter{})
		if err != nil {
			return err
		}
		var ids []string
		for _, in := range runs {
			if strings.HasPrefix(in.Name, "doomed") {
				ids = append(ids, in.ID)
			}
		}
		if len(ids) > 0 {
			if err := r.DeleteRuns(ctx, ids); err != nil {
				return err
			}
			for _, id := range ids {
				fmt.Printf("X %s\n", id)
			}
		}
		time.Sleep(30 * time.Millisecond)
	}
	return r.Close()
}

// child starts the test binary as a helper and collects its ack lines.
type child struct {
	cmd   *exec.Cmd
	lines []string
	mu    sync.Mutex
	done  chan struct{}
	err   error
}

func startChild(t *testing.T, role string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, helperEnv+"_ARGS="+strings.Join(args, " "))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
		}
		c.err = cmd.Wait()
		if c.err != nil && stderr.Len() > 0 {
			c.err = fmt.Errorf("%v: %s", c.err, stderr.String())
		}
		close(c.done)
	}()
	return c
}

// acks returns the ack lines (complete lines only: a kill can cut the
// last one, which the scanner then still returns without its newline, so
// only lines that parse are used).
func (c *child) acks() []string {
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lines
}

// acked is what a writer acknowledged for its run.
type acked struct {
	started, finished bool
	lastStep          int64 // every step <= lastStep of every metric; -1 none
	params            map[string]bool
	deleted           bool
}

func parseAcks(lines []string, a *acked) {
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "R":
			a.started = true
		case "P":
			if len(f) == 2 {
				if s, err := strconv.ParseInt(f[1], 10, 64); err == nil && s > a.lastStep {
					a.lastStep = s
				}
			}
		case "S":
			if len(f) == 2 {
				a.params["p."+f[1]] = true
			}
		case "F":
			a.finished = true
		case "D":
			a.deleted = true
		}
	}
}

// TestTrackingCrash kills a writer process (WAL always on) with SIGKILL at
// random points, round after round on one repository; each round a new
// process resumes the killed writer's run and continues it, so it also
// replays the previous writer's WAL. In the end a clean open replays the
// rest; every acknowledged point, parameter and finish must be there, no
// point, parameter or run change twice, and statistics exact.
func TestTrackingCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, walDir := t.TempDir(), t.TempDir()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KV0_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KV0_CRASH_SEED), %d rounds (-crash-rounds)", seed, *crashRounds)
	rng := rand.New(rand.NewPCG(seed, 1))
	runs := []string{"crash-a", "crash-b", "crash-c"}
	state := map[string]*acked{}
	for _, id := range runs {
		state[id] = &acked{lastStep: -1, params: map[string]bool{}}
	}
	steps := map[string]int{"crash-a": 3000, "crash-b": 1_000_000, "crash-c": 1_000_000} // a finishes, b and c do not
	killed := 0
	for round := range *crashRounds {
		id := runs[round%len(runs)]
		c := startChild(t, "writer", id, fmt.Sprint(steps[id]), fmt.Sprint(rng.Uint64()), dir, walDir)
		// Kill after a random number of acks plus a random delay; in the
		// second half, crash-a's writers are left to finish.
		target, delay := 1+rng.IntN(4000), time.Duration(rng.IntN(20_000))*time.Microsecond
		if id == "crash-a" && round >= *crashRounds/2 {
			target = math.MaxInt
		}
	wait:
		for {
			select {
			case <-c.done:
				break wait
			case <-time.After(time.Millisecond):
			}
			c.mu.Lock()
			n := len(c.lines)
			c.mu.Unlock()
			if n >= target {
				time.Sleep(delay)
				_ = c.cmd.Process.Signal(syscall.SIGKILL)
				killed++
				break
			}
		}
		lines := c.acks()
		if testing.Verbose() {
			t.Logf("round %d: %s, kill after %d acks: %d lines, last %q", round, id, target, len(lines), lines[max(0, len(lines)-1):])
		}
		if c.err != nil && !strings.Contains(c.err.Error(), "killed") {
			t.Fatalf("round %d: writer failed: %v", round, c.err)
		}
		parseAcks(lines, state[id])
	}
	t.Logf("%d of %d writers killed", killed, *crashRounds)
	for _, id := range runs {
		a := state[id]
		t.Logf("%s: started %v, steps 0..%d, %d parameters, finished %v acknowledged", id, a.started, a.lastStep, len(a.params), a.finished)
	}
	if *crashRounds >= 10 && (killed < *crashRounds*2/3 || !state["crash-a"].finished) {
		t.Fatalf("the rounds did not exercise crashes and a finish: %d killed", killed)
	}

	// A clean open replays whatever the last writers left.
	r, err := openWALRepo(dir, walDir, 50_000, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	checkCrashRepo(t, r, dir, state, "after replay")
	if _, err := r.Optimize(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkCrashRepo(t, r, dir, state, "after Optimize")
}

// checkCrashRepo checks the acknowledged writes of each run and that no
// row is stored twice.
func checkCrashRepo(t *testing.T, r *tracking.Repo, dir string, state map[string]*acked, stage string) {
	t.Helper()
	ctx := context.Background()
	names := map[tracking.SeriesID]string{}
	for id, a := range state {
		if !a.started {
			continue
		}
		in, err := r.Run(ctx, id)
		if err != nil {
			if a.deleted {
				continue
			}
			t.Fatalf("%s: run %s (acked): %v", stage, id, err)
		}
		if a.finished && in.Status != tracking.StatusFinished {
			t.Fatalf("%s: run %s finish acked, status %q", stage, id, in.Status)
		}
		ps, err := r.AllParams(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for k := range a.params {
			if _, ok := ps[k]; !ok {
				t.Fatalf("%s: run %s: acked parameter %s lost", stage, id, k)
			}
		}
		ss, err := r.AllSeries(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		ids := make([]tracking.SeriesID, len(ss))
		for i, s := range ss {
			ids[i] = s.ID
			names[s.ID] = id + "/" + s.Name
		}
		md, err := r.ReadMany(ctx, ids, tracking.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		stats, err := r.SeriesStats(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for i, s := range ss {
			k, _ := strconv.Atoi(strings.TrimPrefix(s.Name, "m"))
			m := md[i]
			for j := range m.Len() {
				if m.Steps[j] != int64(j) {
					t.Fatalf("%s: %s: point %d has step %d (a step before it is missing)", stage, names[s.ID], j, m.Steps[j])
				}
				if want := pointValue(id, k, int64(j)); m.Values[j] != want {
					t.Fatalf("%s: %s step %d: value %v, want %v", stage, names[s.ID], j, m.Values[j], want)
				}
			}
			if int64(m.Len()) <= a.lastStep {
				t.Fatalf("%s: %s: %d points, step %d was acked", stage, names[s.ID], m.Len(), a.lastStep)
			}
			if st := stats[s.ID]; st.Count != uint64(m.Len()) || st.LastStep != int64(m.Len()-1) {
				t.Fatalf("%s: %s: stats %+v for %d points", stage, names[s.ID], st, m.Len())
			}
			found++
		}
		if a.lastStep >= 0 && found != crashMetrics {
			t.Fatalf("%s: run %s: %d series", stage, id, found)
		}
	}
	// Nothing twice: raw rows per (series, step), per (run, key) and per
	// (run, seq).
	st, err := fsstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	scan := func(table string, cols []string, fn func(rec []any)) {
		d, err := lance.Open(ctx, st, table, lance.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.Scan(ctx, lance.ScanOptions{Columns: cols})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for s.Next() {
			rec := s.Record()
			for i := 0; i < int(rec.NumRows()); i++ {
				row := make([]any, rec.NumCols())
				for c := range row {
					switch a := rec.Column(c).(type) {
					case *array.Uint64:
						row[c] = a.Value(i)
					case *array.Int64:
						row[c] = a.Value(i)
					case *array.String:
						row[c] = a.Value(i)
					}
				}
				fn(row)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	twice := func(what string, key ...any) {
		k := fmt.Sprint(key...)
		if seen[k] {
			t.Fatalf("%s: %s stored twice: %v", stage, what, key)
		}
		seen[k] = true
	}
	scan(tracking.MetricsTable, []string{"series_id", "step"}, func(row []any) {
		if sid := row[0].(uint64); sid != 0 {
			twice("point", "m", names[tracking.SeriesID(sid)], sid, row[1])
		}
	})
	scan(tracking.ParamsTable, []string{"run_id", "key"}, func(row []any) {
		if !strings.HasPrefix(row[0].(string), "__kv0") {
			twice("parameter", "p", row[0], row[1])
		}
	})
	scan(tracking.RunsTable, []string{"run_id", "seq"}, func(row []any) {
		if !strings.HasPrefix(row[0].(string), "__kv0") {
			twice("run change", "r", row[0], row[1])
		}
	})
}

// TestTrackingConcurrentProcesses runs several writer processes on one
// repository, each with its own runs, while another process deletes the
// runs named doomed-*. Kept runs must be complete and exact; deleted runs
// must be gone, and after Optimize their points too.
func TestTrackingConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, walDir := t.TempDir(), t.TempDir()
	const writers, steps = 4, 1500
	del := startChild(t, "deleter", dir, walDir, "40")
	var kids []*child
	var ids []string
	for w := range writers {
		for _, kind := range []string{"kept", "doomed"} {
			id := fmt.Sprintf("%s-%d", kind, w)
			ids = append(ids, id)
			kids = append(kids, startChild(t, "writer", id, fmt.Sprint(steps), fmt.Sprint(w+1), dir, walDir))
		}
	}
	state := map[string]*acked{}
	for i, c := range kids {
		lines := c.acks()
		if c.err != nil {
			t.Fatalf("writer %s: %v", ids[i], c.err)
		}
		a := &acked{lastStep: -1, params: map[string]bool{}}
		parseAcks(lines, a)
		state[ids[i]] = a
	}
	del.acks()
	if del.err != nil {
		t.Fatalf("deleter: %v", del.err)
	}
	r, err := openWALRepo(dir, walDir, 50_000, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	// Delete the doomed runs the deleter may have missed (a writer that
	// started late), then check.
	var doomed []string
	for _, id := range ids {
		if strings.HasPrefix(id, "doomed") {
			doomed = append(doomed, id)
		}
	}
	for _, id := range doomed {
		if err := r.DeleteRuns(ctx, []string{id}); err != nil && !errors.Is(err, tracking.ErrNotFound) {
			t.Fatal(err)
		}
	}
	deletedEarly := 0
	for _, id := range doomed {
		if state[id].deleted {
			deletedEarly++
		}
		state[id] = &acked{lastStep: -1, params: map[string]bool{}}
	}
	t.Logf("%d of %d doomed writers saw their run deleted while writing", deletedEarly, len(doomed))
	for _, stage := range []string{"after writers", "after Optimize"} {
		if stage == "after Optimize" {
			if _, err := r.Optimize(ctx); err != nil {
				t.Fatal(err)
			}
		}
		runs, err := r.Runs(ctx, tracking.RunFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != writers {
			t.Fatalf("%s: %d runs, want the %d kept ones", stage, len(runs), writers)
		}
		for _, in := range runs {
			a := state[in.ID]
			if a == nil || !strings.HasPrefix(in.ID, "kept") || !a.finished || a.lastStep != steps-1 {
				t.Fatalf("%s: run %s: %+v", stage, in.ID, a)
			}
		}
		checkCrashRepo(t, r, dir, state, stage)
	}
	// After Optimize no point of a deleted run is left.
	live := map[tracking.SeriesID]bool{}
	runs, _ := r.Runs(ctx, tracking.RunFilter{})
	for _, in := range runs {
		ss, _ := r.AllSeries(ctx, in.ID)
		for _, s := range ss {
			live[s.ID] = true
		}
	}
	st, _ := fsstore.Open(dir)
	d, err := lance.Open(ctx, st, tracking.MetricsTable, lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Scan(ctx, lance.ScanOptions{Columns: []string{"series_id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	points := 0
	for s.Next() {
		for _, sid := range s.Record().Column(0).(*array.Uint64).Uint64Values() {
			if sid != 0 && !live[tracking.SeriesID(sid)] {
				t.Fatalf("a point of deleted series %d survived Optimize", sid)
			}
			if sid != 0 {
				points++
			}
		}
	}
	if want := writers * steps * crashMetrics; points != want {
		t.Fatalf("%d points after Optimize, want %d", points, want)
	}
}
