package main

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kv0/kv0/core/tracking"
)

// metricsRepo writes a repository with one run "r1": loss in two contexts
// (train: steps 0..2 with a NaN at 1, val: step 2) and lr without one.
func metricsRepo(t *testing.T) (dir, runID string) {
	t.Helper()
	ctx := context.Background()
	dir = filepath.Join(t.TempDir(), "repo")
	r, err := openRepoWith(ctx, dir, repoOpen{writable: true, create: true})
	if err != nil {
		t.Fatal(err)
	}
	run, err := r.StartRun(ctx, tracking.RunSpec{Name: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	train := map[string]any{"subset": "train"}
	for s, v := range []float64{2.5, math.NaN(), 1.5} {
		step := int64(s)
		if err := run.Track(v, "loss", tracking.TrackOptions{Step: &step, Context: train, Time: at.Add(time.Duration(s) * time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := run.Track(0.1/float64(s+1), "lr", tracking.TrackOptions{Step: &step, Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	two, epoch := int64(2), int64(1)
	if err := run.Track(1.75, "loss", tracking.TrackOptions{Step: &two, Epoch: &epoch, Context: map[string]any{"subset": "val"}, Time: at}); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, run.ID()
}

func TestMetricsContexts(t *testing.T) {
	dir, runID := metricsRepo(t)
	// Without --context: every context of the name, with a context column.
	code, out, errOut := runCLI("metrics", dir, "r1", "loss")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "CONTEXT") ||
		strings.Count(out, `{"subset":"train"}`) != 3 || strings.Count(out, `{"subset":"val"}`) != 1 {
		t.Errorf("metrics without --context:\n%s", out)
	}
	// With --context: that series only.
	code, out, _ = runCLI("metrics", dir, "r1", "loss", "--context", `{"subset":"val"}`, "--csv")
	if want := "name,context,step,epoch,timestamp,value\nloss,\"{\"\"subset\"\":\"\"val\"\"}\",2,1,2026-01-02T03:04:05Z,1.75\n"; code != 0 || out != want {
		t.Errorf("--context val --csv: exit %d\n%q\nwant\n%q", code, out, want)
	}
	// A context that does not exist lists those that do.
	code, _, errOut = runCLI("metrics", dir, "r1", "loss", "--context", `{"subset":"test"}`)
	if code != 1 || !strings.Contains(errOut, `{"subset":"train"}`) || !strings.Contains(errOut, `{"subset":"val"}`) {
		t.Errorf("unknown context: exit %d, %q", code, errOut)
	}
	// An unknown name lists the names.
	code, _, errOut = runCLI("metrics", dir, runID, "acc")
	if code != 1 || !strings.Contains(errOut, "loss, lr") {
		t.Errorf("unknown name: exit %d, %q", code, errOut)
	}
}

func TestMetricsJSON(t *testing.T) {
	dir, runID := metricsRepo(t)
	code, out, errOut := runCLI("metrics", dir, "r1", "lr", "loss", "lr", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []struct {
		Name       string            `json:"name"`
		Context    map[string]any    `json:"context"`
		SeriesID   *uint64           `json:"series_id"`
		RunID      string            `json:"run_id"`
		Steps      []int64           `json:"steps"`
		Epochs     []*int64          `json:"epochs"`
		Timestamps []time.Time       `json:"timestamps"`
		Values     []json.RawMessage `json:"values"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got) != 3 || got[0].Name != "lr" || got[1].Name != "loss" || got[2].Name != "loss" {
		t.Fatalf("series: %+v", got)
	}
	for _, g := range got {
		want, _ := tracking.NewSeriesID(runID, g.Name, g.Context)
		if g.SeriesID == nil || tracking.SeriesID(*g.SeriesID) != want || g.RunID != runID {
			t.Errorf("%s %v: series_id %v run %q, want %d %q", g.Name, g.Context, g.SeriesID, g.RunID, want, runID)
		}
		if len(g.Steps) != len(g.Values) || len(g.Steps) != len(g.Epochs) || len(g.Steps) != len(g.Timestamps) {
			t.Errorf("%s: ragged arrays", g.Name)
		}
	}
	if len(got[0].Context) != 0 || len(got[0].Steps) != 3 || got[0].Epochs[0] != nil {
		t.Errorf("lr: %+v", got[0])
	}
	train := got[1]
	if train.Context["subset"] != "train" || string(train.Values[1]) != `"NaN"` || string(train.Values[2]) != "1.5" ||
		!train.Timestamps[2].Equal(time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC)) {
		t.Errorf("loss/train: %+v %s", train, train.Values)
	}
	if val := got[2]; val.Context["subset"] != "val" || val.Epochs[0] == nil || *val.Epochs[0] != 1 {
		t.Errorf("loss/val: %+v", val)
	}
	if code, _, _ := runCLI("metrics", dir, "r1", "lr", "--json", "--csv"); code != 2 {
		t.Errorf("--json --csv: exit %d, want 2", code)
	}
}
