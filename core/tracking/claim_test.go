package tracking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/core/store"
)

// listGate holds the listings of claims until n of them wait, then lets
// them all go at once: racers that pass it have all read the same newest
// claim, so they race for the same next one.
type listGate struct {
	store.Store
	mu      sync.Mutex
	n       int
	waiting int
	release chan struct{}
}

func (g *listGate) arm(n int) {
	g.mu.Lock()
	g.n, g.waiting, g.release = n, 0, make(chan struct{})
	g.mu.Unlock()
}

func (g *listGate) List(ctx context.Context, opts store.ListOptions) ([]store.ObjectInfo, error) {
	if strings.Contains(opts.Prefix, "/"+ClaimsDir+"/") {
		g.mu.Lock()
		rel := g.release
		if g.n > 0 {
			g.waiting++
			if g.waiting == g.n {
				close(rel)
				g.n = 0
			}
		}
		g.mu.Unlock()
		if rel != nil {
			select {
			case <-rel:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return g.Store.List(ctx, opts)
}

// crashedRun writes run id with points 0..4 (values 100+step) at a clock an
// hour behind now and leaves it running: it reads as crashed.
func crashedRun(t *testing.T, st store.Store, id string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	old := now.Add(-time.Hour)
	w := openTest(t, st, RepoOptions{FlushInterval: -1, Now: func() time.Time { return old }})
	run, err := w.StartRun(ctx, RunSpec{ID: id})
	if err != nil {
		t.Fatal(err)
	}
	for s := range 5 {
		if err := run.Track(100+float64(s), "m"); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkRunPoints checks the status and the points of series m of run id.
func checkRunPoints(t *testing.T, r *Repo, id, status string, want map[int64]float64) {
	t.Helper()
	ctx := context.Background()
	in, err := r.Run(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Status != status {
		t.Fatalf("run %s: status %s, want %s", id, in.Status, status)
	}
	sid, _ := NewSeriesID(id, "m", nil)
	data, err := r.ReadMany(ctx, []SeriesID{sid}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]float64{}
	for i, s := range data[0].Steps {
		got[s] = data[0].Values[i]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("run %s: points %v, want %v", id, got, want)
	}
	stats, err := r.SeriesStats(ctx, []SeriesID{sid})
	if err != nil {
		t.Fatal(err)
	}
	if st := stats[sid]; st.Count != uint64(len(want)) {
		t.Fatalf("run %s: statistics count %d points, want %d", id, st.Count, len(want))
	}
}

// TestResumeRaceOneWins resumes a crashed run from many handles at once,
// 50 times: exactly one gets it, the others fail with ErrHeld, and the
// run ends with the winner's status and points (written once all racers
// have their answer). In half the rounds every
// racer has read the same newest claim before any of them claims (the
// create-only write alone decides); in the others they run freely (a late
// racer sees the winner's fresh claim).
func TestResumeRaceOneWins(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	statuses := []string{StatusFinished, StatusFailed, StatusAborted}
	const racers = 6
	for round := range 50 {
		gate := &listGate{Store: store.NewMemory()} // a small repository per round
		id := fmt.Sprintf("run%02d", round)
		crashedRun(t, gate, id, now)
		handles := make([]*Repo, racers)
		for i := range handles {
			handles[i] = openTest(t, gate, RepoOptions{FlushInterval: -1})
		}
		if round%2 == 0 {
			gate.arm(racers)
		}
		start := make(chan struct{})
		errs := make([]error, racers)
		var wg, decided sync.WaitGroup
		decided.Add(racers)
		for i, h := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				run, err := h.ResumeRun(ctx, id, ResumeOptions{OnlyAbandoned: true})
				decided.Done()
				if err != nil {
					errs[i] = err
					return
				}
				// The winner ends the run once every racer has its answer
				// (a racer coming after the end would resume it rightly).
				decided.Wait()
				for s := range 5 {
					if err := run.Track(float64(1000*(i+1)+s), "m"); err != nil {
						errs[i] = err
						return
					}
				}
				errs[i] = run.Finish(ctx, statuses[i%len(statuses)])
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			var he *HeldError
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: racers %d and %d both resumed the run", round, winner, i)
				}
				winner = i
			case errors.As(err, &he) && errors.Is(err, ErrHeld) && he.RunID == id:
			default:
				t.Fatalf("round %d: racer %d: %v, want ErrHeld", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no racer resumed the run: %v", round, errs)
		}
		want := map[int64]float64{}
		for s := range int64(5) {
			want[s] = 100 + float64(s)
			want[5+s] = float64(1000*(winner+1)) + float64(s)
		}
		checkRunPoints(t, handles[0], id, statuses[winner%len(statuses)], want)
		for _, h := range handles {
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestClaimFencesSupersededWriter lets a second handle take a run over from
// a live first one (whose last sign of life is old by the second's clock):
// the first handle's points committed before stay, its next flush reports
// ErrHeld and drops what it had not committed, and it can neither write
// nor finish the run any more; the run ends with the new holder's points
// and status.
func TestClaimFencesSupersededWriter(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	now := time.Now()
	crashedRun(t, st, "r", now)
	clkA := &fakeClock{t: now}
	a := openTest(t, st, RepoOptions{FlushInterval: -1, Now: clkA.Now})
	ra, err := a.ResumeRun(ctx, "r", ResumeOptions{OnlyAbandoned: true})
	if err != nil {
		t.Fatal(err)
	}
	// Another run of the same handle, which nobody takes over.
	other, err := a.StartRun(ctx, RunSpec{ID: "other"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]float64{}
	for s := range int64(5) {
		want[s] = 100 + float64(s)
	}
	for s := int64(5); s < 10; s++ {
		if err := ra.Track(float64(200+s), "m"); err != nil {
			t.Fatal(err)
		}
		want[s] = float64(200 + s)
	}
	if err := a.Flush(ctx); err != nil { // acknowledged: committed
		t.Fatal(err)
	}
	for s := int64(10); s < 13; s++ {
		if err := ra.Track(float64(300+s), "m"); err != nil { // never committed
			t.Fatal(err)
		}
		if err := other.Track(float64(s), "m"); err != nil {
			t.Fatal(err)
		}
	}
	// B's clock is an hour ahead: A's claim and heartbeat are stale to it.
	b := openTest(t, st, RepoOptions{FlushInterval: -1, Now: func() time.Time { return now.Add(time.Hour) }})
	rb, err := b.ResumeRun(ctx, "r", ResumeOptions{OnlyAbandoned: true})
	if err != nil {
		t.Fatal(err)
	}
	for s := int64(10); s < 15; s++ { // continues after A's committed steps
		if err := rb.Track(float64(400+s), "m"); err != nil {
			t.Fatal(err)
		}
		want[s] = float64(400 + s)
	}
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	err = a.Flush(ctx)
	var he *HeldError
	if !errors.As(err, &he) || he.RunID != "r" || he.Gen != 2 || !strings.Contains(err.Error(), "held by another writer") {
		t.Fatalf("flush of the superseded writer: %v, want the ErrHeld of run r (claim 2)", err)
	}
	if err := ra.Track(1, "m"); !errors.Is(err, ErrHeld) {
		t.Fatalf("Track after the loss: %v", err)
	}
	if err := ra.SetParams(map[string]any{"x": 1}); !errors.Is(err, ErrHeld) {
		t.Fatalf("SetParams after the loss: %v", err)
	}
	if err := a.UpdateRun(ctx, "r", RunPatch{Name: new("late")}); !errors.Is(err, ErrHeld) {
		t.Fatalf("UpdateRun after the loss: %v", err)
	}
	if err := ra.Finish(ctx, StatusAborted); !errors.Is(err, ErrHeld) {
		t.Fatalf("Finish after the loss: %v", err)
	}
	// The other run of the handle is not affected.
	if err := other.Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	checkRunPoints(t, b, "r", StatusRunning, want)
	if err := rb.Finish(ctx, StatusFailed); err != nil {
		t.Fatal(err)
	}
	checkRunPoints(t, b, "r", StatusFailed, want)
	in, _ := b.Run(ctx, "r")
	if in.Name == "late" {
		t.Fatal("a write of the superseded handle landed")
	}
	checkRunPoints(t, b, "other", StatusFinished, map[int64]float64{0: 10, 1: 11, 2: 12})
}

// TestReplayDropsTakenOverRuns crashes a writer with points only in its
// WAL in two runs; another writer takes one of them over and ends it.
// Replaying the log then restores the other run's points but none of the
// taken-over run's: its new holder resumed from what was committed.
func TestReplayDropsTakenOverRuns(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	now := time.Now()
	wals := kvtest.NewMemWALRoot()
	wa := wals.Open()
	a := openTest(t, st, RepoOptions{FlushInterval: -1, HeartbeatInterval: -1, WAL: wa, Now: func() time.Time { return now }})
	taken, err := a.StartRun(ctx, RunSpec{ID: "taken"})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := a.StartRun(ctx, RunSpec{ID: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	wantTaken, wantKept := map[int64]float64{}, map[int64]float64{}
	track := func(run *Run, want map[int64]float64, from, to int64, base float64, record bool) {
		t.Helper()
		for s := from; s < to; s++ {
			if err := run.Track(base+float64(s), "m"); err != nil {
				t.Fatal(err)
			}
			if record {
				want[s] = base + float64(s)
			}
		}
	}
	track(taken, wantTaken, 0, 3, 10, true)
	track(kept, wantKept, 0, 3, 10, true)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	track(taken, wantTaken, 3, 6, 20, false) // in the WAL only; dropped by the replay
	track(kept, wantKept, 3, 6, 20, true)    // in the WAL only; replayed
	if err := taken.SetParams(map[string]any{"lost": true}); err != nil {
		t.Fatal(err)
	}
	wa.Kill()
	b := openTest(t, st, RepoOptions{FlushInterval: -1, Now: func() time.Time { return now.Add(time.Hour) }})
	rb, err := b.ResumeRun(ctx, "taken", ResumeOptions{OnlyAbandoned: true})
	if err != nil {
		t.Fatal(err)
	}
	track(rb, wantTaken, 3, 5, 30, true)
	if err := rb.Finish(ctx, StatusFailed); err != nil {
		t.Fatal(err)
	}
	c := openTest(t, st, RepoOptions{FlushInterval: -1, WAL: wals.Open()})
	checkRunPoints(t, c, "taken", StatusFailed, wantTaken)
	checkRunPoints(t, c, "kept", StatusRunning, wantKept)
	ps, err := c.AllParams(ctx, "taken")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 0 {
		t.Fatalf("parameters of the taken-over run replayed: %v", ps)
	}
	// A writer that dies after the flush of its run's end created the
	// free claim but before it committed: the replay commits the end.
	wd := wals.Open()
	d := openTest(t, st, RepoOptions{FlushInterval: -1, HeartbeatInterval: -1, WAL: wd})
	ended, err := d.StartRun(ctx, RunSpec{ID: "ended"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ended.Track(5, "m"); err != nil {
		t.Fatal(err)
	}
	if err := ended.Update(RunPatch{Status: new(StatusFailed)}); err != nil {
		t.Fatal(err)
	}
	if err := d.putClaim(ctx, "ended", 1, claimFree, d.HolderID(), ""); err != nil { // the flush's first step
		t.Fatal(err)
	}
	wd.Kill()
	e := openTest(t, st, RepoOptions{FlushInterval: -1, WAL: wals.Open()})
	checkRunPoints(t, e, "ended", StatusFailed, map[int64]float64{0: 5})
	// Its run is free: anyone may resume it at once.
	if _, err := e.ResumeRun(ctx, "ended", ResumeOptions{OnlyAbandoned: true}); err != nil {
		t.Fatal(err)
	}
}

// TestClaimFreeAndDeadHolder checks who may resume a run with
// OnlyAbandoned: not while its holder is alive (a claim or heartbeat
// younger than CrashedAfter), at once once its holder ended or released
// it, and at once when the holder is named dead (DeadHolder, or for a run
// without claims DeadHeartbeat), as the run lock of its host tells.
func TestClaimFreeAndDeadHolder(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	open := func() *Repo { return openTest(t, st, RepoOptions{FlushInterval: -1}) }
	only := ResumeOptions{OnlyAbandoned: true}
	a := open()
	run, err := a.StartRun(ctx, RunSpec{ID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := open().ResumeRun(ctx, "r", only); !errors.Is(err, ErrHeld) {
		t.Fatalf("resume of a live run without claims: %v", err)
	}
	var beat time.Time
	a2 := openTest(t, st, RepoOptions{FlushInterval: -1, OnHeartbeat: func(at time.Time) { beat = at }})
	r2, err := a2.StartRun(ctx, RunSpec{ID: "r2"})
	if err != nil {
		t.Fatal(err)
	}
	_ = r2
	if err := a2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := open().ResumeRun(ctx, "r2", ResumeOptions{OnlyAbandoned: true, DeadHeartbeat: beat}); err != nil {
		t.Fatalf("resume of a run whose dead writer's heartbeat is the newest: %v", err)
	}
	if err := run.Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	b := open()
	if _, err := b.ResumeRun(ctx, "r", only); err != nil {
		t.Fatalf("resume of a finished run: %v", err)
	}
	if err := b.Close(); err != nil { // b leaves the run held (claim 2)
		t.Fatal(err)
	}
	c := open()
	if _, err := c.ResumeRun(ctx, "r", only); !errors.Is(err, ErrHeld) {
		t.Fatalf("resume of a run whose holder claimed it just now: %v", err)
	}
	rc, err := c.ResumeRun(ctx, "r", ResumeOptions{OnlyAbandoned: true, DeadHolder: b.HolderID()})
	if err != nil {
		t.Fatalf("resume of a run whose holder is dead: %v", err)
	}
	if err := rc.Release(ctx); err != nil {
		t.Fatal(err)
	}
	d := open()
	if _, err := d.ResumeRun(ctx, "r", only); err != nil {
		t.Fatalf("resume of a released run: %v", err)
	}
	// The claims: 1 free (finish), 2 hold (b), 3 hold (c), 4 free
	// (release), 5 hold (d).
	var kinds []string
	for g := uint64(1); g <= 6; g++ {
		body, err := store.ReadAll(ctx, st, a.claimKey("r", g))
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, strings.Split(strings.Split(string(body), `"kind":"`)[1], `"`)[0])
	}
	if want := []string{"free", "hold", "hold", "free", "hold"}; !slices.Equal(kinds, want) {
		t.Fatalf("claims %v, want %v", kinds, want)
	}
	// A handle that holds the run gets its handle back without a claim.
	rd, err := d.ResumeRun(ctx, "r", only)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := d.ResumeRun(ctx, "r", only); err != nil || again != rd {
		t.Fatalf("resume by the holder: %v (same handle: %v)", err, again == rd)
	}
	// Without OnlyAbandoned a resume takes any run over; the handle that
	// held it finds out at its next resume (or flush) of it.
	if _, err := open().ResumeRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ResumeRun(ctx, "r", only); !errors.Is(err, ErrHeld) {
		t.Fatalf("resume by a handle that lost the run: %v", err)
	}
	if err := rd.Track(1, "m"); !errors.Is(err, ErrHeld) {
		t.Fatalf("Track by a handle that lost the run: %v", err)
	}
}

// TestFinishRacesTakeover races a holder's Finish against a takeover, 50
// times: either the finish wins (its free claim first; the status is
// committed) or the takeover does, and then the holder's status is never
// committed and Finish fails with ErrHeld.
func TestFinishRacesTakeover(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	rng := rand.New(rand.NewPCG(3, 4))
	wins := map[bool]int{}
	for round := range 50 {
		id := fmt.Sprintf("r%02d", round)
		a := openTest(t, st, RepoOptions{FlushInterval: -1})
		run, err := a.StartRun(ctx, RunSpec{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		b := openTest(t, st, RepoOptions{FlushInterval: -1})
		var wg sync.WaitGroup
		var ferr, rerr error
		// One side starts a few reads' worth later.
		late, delay := rng.IntN(2), rng.IntN(4)
		wait := func(side int, h *Repo) {
			if side == late {
				for range delay {
					_, _ = h.Runs(ctx, RunFilter{})
				}
			}
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			wait(0, a)
			ferr = run.Finish(ctx, StatusAborted)
		}()
		go func() {
			defer wg.Done()
			wait(1, b)
			_, rerr = b.ResumeRun(ctx, id)
		}()
		wg.Wait()
		in, err := b.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		// The takeover may also lose: to the free claim of the finish
		// (it read the claims before that was made).
		switch {
		case ferr == nil && (rerr == nil || errors.Is(rerr, ErrHeld)):
			if in.Status != StatusAborted {
				t.Fatalf("round %d: finish succeeded but the run reads %s", round, in.Status)
			}
		case errors.Is(ferr, ErrHeld) && rerr == nil:
			if in.Status == StatusAborted {
				t.Fatalf("round %d: the status of a writer that lost the run was committed", round)
			}
		default:
			t.Fatalf("round %d: finish: %v, takeover: %v", round, ferr, rerr)
		}
		wins[ferr == nil]++
		_ = a.Close()
		_ = b.Close()
	}
	t.Logf("finish won %d times, the takeover %d", wins[true], wins[false])
}

// TestClaimDir checks that run ids map one-to-one to valid claim folders.
func TestClaimDir(t *testing.T) {
	r := &Repo{root: "repo"}
	seen := map[string]string{}
	for _, id := range []string{"a", "A", "run-1_x.y", ".hidden", "a/b", "a~2fb", "a b", "ü", "..", strings.Repeat("x", 300),
		strings.Repeat("x", 301), "~h00"} {
		k := r.claimKey(id, 7)
		if err := store.ValidateKey(k); err != nil {
			t.Fatalf("id %q: key %q: %v", id, k, err)
		}
		if !strings.HasPrefix(k, "repo/"+ClaimsDir+"/") || strings.Count(k, "/") != 3 {
			t.Fatalf("id %q: key %q is not one folder below the claims", id, k)
		}
		if prev, ok := seen[k]; ok {
			t.Fatalf("ids %q and %q share the claim key %q", prev, id, k)
		}
		seen[k] = id
	}
}
