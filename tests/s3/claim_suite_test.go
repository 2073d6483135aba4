package s3

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// TestTrackingClaimRaceOnS3 (and OnGCS, OnAzure) resumes a crashed run
// from several handles at once, released together, over a real object
// store: its create-only write alone must let exactly one take the run
// (the others get ErrHeld), and the run ends with the winner's points and
// status. Then a forced takeover fences the winner: its next flush reports
// ErrHeld and commits nothing more of the run.
func TestTrackingClaimRaceOnS3(t *testing.T)    { claimRaceSuite(t, s3Backend()) }
func TestTrackingClaimRaceOnGCS(t *testing.T)   { claimRaceSuite(t, gcsBackend()) }
func TestTrackingClaimRaceOnAzure(t *testing.T) { claimRaceSuite(t, azureBackend()) }

func claimRaceSuite(t *testing.T, b backend) {
	b.need(t)
	ctx := context.Background()
	st := b.open(t, b.newURI(t.Name()))
	open := func(now func() time.Time) *tracking.Repo {
		t.Helper()
		r, err := tracking.OpenRepo(ctx, st, "repo", tracking.RepoOptions{FlushInterval: -1, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Close() })
		return r
	}
	const rounds, racers = 5, 4
	hourAgo := time.Now().Add(-time.Hour)
	for round := range rounds {
		id := "race-" + itoa(int64(round))
		old := open(func() time.Time { return hourAgo })
		run, err := old.StartRun(ctx, tracking.RunSpec{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := run.Track(1, "m"); err != nil {
			t.Fatal(err)
		}
		if err := old.Close(); err != nil { // left running: it reads as crashed
			t.Fatal(err)
		}
		handles := make([]*tracking.Repo, racers)
		for i := range handles {
			handles[i] = open(nil)
		}
		start := make(chan struct{})
		runs := make([]*tracking.Run, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i, h := range handles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				runs[i], errs[i] = h.ResumeRun(ctx, id, tracking.ResumeOptions{OnlyAbandoned: true})
			}()
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Fatalf("round %d: handles %d and %d both resumed the run", round, winner, i)
			case !errors.Is(err, tracking.ErrHeld):
				t.Fatalf("round %d: handle %d: %v, want ErrHeld", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no handle resumed the run: %v", round, errs)
		}
		w := runs[winner]
		if err := w.Track(float64(10+winner), "m"); err != nil {
			t.Fatal(err)
		}
		if err := handles[winner].Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// A forced takeover: the winner's next flush finds it.
		thief := open(nil)
		stolen, err := thief.ResumeRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Track(99, "m"); err != nil { // buffered before the winner knows
			t.Fatal(err)
		}
		if err := handles[winner].Flush(ctx); !errors.Is(err, tracking.ErrHeld) {
			t.Fatalf("round %d: flush after the takeover: %v, want ErrHeld", round, err)
		}
		if err := w.Finish(ctx, tracking.StatusAborted); !errors.Is(err, tracking.ErrHeld) {
			t.Fatalf("round %d: finish after the takeover: %v, want ErrHeld", round, err)
		}
		if err := stolen.Finish(ctx, tracking.StatusFailed); err != nil {
			t.Fatal(err)
		}
		check := open(nil)
		in, err := check.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		sid, _ := tracking.NewSeriesID(id, "m", nil)
		data, err := check.ReadMany(ctx, []tracking.SeriesID{sid}, tracking.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if in.Status != tracking.StatusFailed || len(data[0].Values) != 2 || data[0].Values[0] != 1 || data[0].Values[1] != float64(10+winner) {
			t.Fatalf("round %d: run %s with values %v, want failed with [1 %d]", round, in.Status, data[0].Values, 10+winner)
		}
	}
}
