package tracking

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
)

// fakeClock is a settable wall clock shared by the handles of a test.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestHeartbeatCrashed checks the heartbeat of a writing handle and the
// crashed status reads derive from it: a run whose writer stopped
// heartbeating reads as crashed (in Run and in Runs, whose status filter
// sees the reported status), a live writer's heartbeats keep it running,
// finished runs never crash, a resume without writes leaves no heartbeat,
// and Optimize keeps heartbeat and updated_at apart.
func TestHeartbeatCrashed(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	opts := RepoOptions{FlushInterval: -1, Now: clk.Now, CrashedAfter: time.Minute, HeartbeatInterval: 10 * time.Second}
	var beats []time.Time
	wopts := opts
	wopts.OnHeartbeat = func(at time.Time) { beats = append(beats, at) }
	w := openTest(t, st, wopts)
	run, err := w.StartRun(ctx, RunSpec{ID: "r1", Name: "one"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := w.StartRun(ctx, RunSpec{ID: "r2", Name: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if err := done.Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ro := opts
	ro.ReadOnly = true
	reader := openTest(t, st, ro)
	status := func(id string) (string, time.Time) {
		t.Helper()
		in, err := reader.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return in.Status, in.HeartbeatAt
	}
	start := clk.Now()
	if s, hb := status("r1"); s != StatusRunning || !hb.Equal(start) {
		t.Fatalf("fresh run: %s, heartbeat %v, want running at %v", s, hb, start)
	}
	// The writer keeps beating: flushes record a heartbeat once one is due.
	for i := 0; i < 12; i++ {
		clk.add(5 * time.Second)
		if err := run.Track(float64(i), "loss"); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if s, hb := status("r1"); s != StatusRunning || clk.Now().Sub(hb) > 10*time.Second {
		t.Fatalf("live writer: %s, heartbeat %v at %v", s, hb, clk.Now())
	}
	if len(beats) < 6 || len(beats) > 8 {
		t.Fatalf("%d heartbeats in 60 s at a 10 s interval (plus the creation): %v", len(beats), beats)
	}
	// The writer goes away without finishing (its background goroutine
	// would otherwise keep beating): after CrashedAfter the run reads as
	// crashed.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	last := beats[len(beats)-1]
	clk.add(time.Minute + time.Second)
	if s, hb := status("r1"); s != StatusCrashed || !hb.Equal(last) {
		t.Fatalf("silent writer: %s, heartbeat %v, want crashed at %v", s, hb, last)
	}
	if s, _ := status("r2"); s != StatusFinished {
		t.Fatalf("finished run: %s", s)
	}
	for _, c := range []struct {
		status string
		want   int
	}{{StatusCrashed, 1}, {StatusRunning, 0}, {StatusFinished, 1}, {"", 2}} {
		runs, err := reader.Runs(ctx, RunFilter{Status: c.status})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != c.want {
			t.Fatalf("Runs(status %q): %d runs, want %d", c.status, len(runs), c.want)
		}
		for _, in := range runs {
			if in.ID == "r1" && in.Status != StatusCrashed {
				t.Fatalf("Runs reports r1 as %s", in.Status)
			}
		}
	}
	// A resume that writes nothing records no heartbeat; the first write
	// does, and the run reads as running again.
	w2 := openTest(t, st, opts)
	again, err := w2.ResumeRun(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	clk.add(time.Minute)
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s, _ := status("r1"); s != StatusCrashed {
		t.Fatalf("resumed without writes: %s, want still crashed", s)
	}
	if err := again.Track(1, "loss"); err != nil {
		t.Fatal(err)
	}
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if s, hb := status("r1"); s != StatusRunning || !hb.Equal(clk.Now()) {
		t.Fatalf("resumed and written: %s at %v", s, hb)
	}
	// Optimize folds the rows but keeps the heartbeat and updated_at apart.
	before, _ := reader.Run(ctx, "r1")
	if before.UpdatedAt.Equal(before.HeartbeatAt) {
		t.Fatalf("test needs a heartbeat newer than the last update: %v", before.UpdatedAt)
	}
	if _, err := w2.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	after, _ := reader.Run(ctx, "r1")
	if !after.HeartbeatAt.Equal(before.HeartbeatAt) || !after.UpdatedAt.Equal(before.UpdatedAt) || after.Status != before.Status {
		t.Fatalf("Optimize changed the run: %+v, was %+v", after, before)
	}
}

// TestHeartbeatWhenIdle checks that a handle that writes nothing (and
// never flushes on time) still records heartbeats of its active runs, and
// stops once the run is finished.
func TestHeartbeatWhenIdle(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	w := openTest(t, st, RepoOptions{FlushInterval: -1, HeartbeatInterval: 5 * time.Millisecond})
	run, err := w.StartRun(ctx, RunSpec{ID: "idle"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	reader := openTest(t, st, RepoOptions{ReadOnly: true})
	first, err := reader.Run(ctx, "idle")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := reader.Run(ctx, "idle")
		if err != nil {
			t.Fatal(err)
		}
		if in.HeartbeatAt.After(first.HeartbeatAt) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no heartbeat from an idle writer")
		}
		time.Sleep(time.Millisecond) // polling the table, not waiting for a fixed time
	}
	if err := run.Finish(ctx, ""); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	due := w.heartbeatDueLocked(time.Now().Add(time.Hour))
	w.mu.Unlock()
	if due {
		t.Fatal("a finished run still gets heartbeats")
	}
}

// TestNoHeartbeatStaysRunning checks runs written before heartbeats
// existed (a creation row with a null fields column, or one with every
// field but the heartbeat): they have no heartbeat and never read as
// crashed, however old.
func TestNoHeartbeatStaysRunning(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	clk := &fakeClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	w := openTest(t, st, RepoOptions{FlushInterval: -1, Now: clk.Now})
	w.mu.Lock()
	for i, rw := range []runRow{
		{seq: 1, info: RunInfo{ID: "legacy-null", Status: StatusRunning, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}},
		{seq: 2, info: RunInfo{ID: "legacy-all", Status: StatusRunning, CreatedAt: clk.Now(), UpdatedAt: clk.Now()}, fields: FieldsAll, hasMsk: true},
	} {
		if err := w.addRunRow(rw); err != nil {
			t.Fatal(i, err)
		}
	}
	w.mu.Unlock()
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	clk.add(365 * 24 * time.Hour)
	r := openTest(t, st, RepoOptions{ReadOnly: true, Now: clk.Now, CrashedAfter: time.Second})
	for _, id := range []string{"legacy-null", "legacy-all"} {
		in, err := r.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if in.Status != StatusRunning || !in.HeartbeatAt.IsZero() {
			t.Errorf("%s: %s, heartbeat %v", id, in.Status, in.HeartbeatAt)
		}
	}
}
