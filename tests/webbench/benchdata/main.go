// Command benchdata writes the repositories of the dashboard benchmarks
// (tests/webbench/bench.mjs runs it; the data is cached under out/webbench):
//
//	benchdata DIR RUNS METRICS STEPS
//
// writes RUNS runs (run-000, run-001, ..., created a minute apart) of
// METRICS series each (train/loss, train/accuracy, val/loss, optim/lr,
// then metric-4, ...) with STEPS points per series, then optimizes the
// repository (one sorted metrics file per flush group, statistics
// rewritten) and prints the run ids, one a line, in creation order.
// The curves are noisy decays with rare spikes, so that downsampling has
// extremes to keep.
package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/fsstore"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: benchdata DIR RUNS METRICS STEPS")
		os.Exit(2)
	}
	var n [3]int
	for i, a := range os.Args[2:] {
		v, err := strconv.Atoi(a)
		if err != nil || v < 1 {
			fmt.Fprintf(os.Stderr, "benchdata: %q: want a positive number\n", a)
			os.Exit(2)
		}
		n[i] = v
	}
	if err := write(context.Background(), os.Args[1], n[0], n[1], n[2]); err != nil {
		fmt.Fprintln(os.Stderr, "benchdata:", err)
		os.Exit(1)
	}
}

var names = []string{"train/loss", "train/accuracy", "val/loss", "optim/lr"}

func metricName(m int) string {
	if m < len(names) {
		return names[m]
	}
	return "metric-" + strconv.Itoa(m)
}

func write(ctx context.Context, dir string, runs, metrics, steps int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	st, err := fsstore.Open(dir)
	if err != nil {
		return err
	}
	r, err := tracking.OpenRepo(ctx, st, "", tracking.RepoOptions{FlushInterval: -1, FlushRows: 1 << 21, MaxFragments: -1})
	if err != nil {
		return err
	}
	created := time.Now().Add(-time.Duration(runs) * time.Minute).Truncate(time.Second)
	var ids []string
	for i := range runs {
		start := created.Add(time.Duration(i) * time.Minute)
		run, err := r.StartRun(ctx, tracking.RunSpec{CreatedAt: start, Name: fmt.Sprintf("run-%03d", i), Experiment: "bench"})
		if err != nil {
			return err
		}
		if err := run.SetParams(map[string]any{"lr": 1e-3 * float64(1+i%5), "seed": i}); err != nil {
			return err
		}
		rng := rand.New(rand.NewPCG(uint64(i), 1))
		for m := range metrics {
			name := metricName(m)
			scale := 1 + float64(m)
			for p := range steps {
				step := int64(p)
				v := scale * (0.2 + 2*math.Exp(-float64(p)/float64(steps)*5)) * (1 + 0.05*rng.NormFloat64())
				if rng.IntN(20000) == 0 {
					v *= 4 // a spike
				}
				at := start.Add(time.Duration(p) * 10 * time.Millisecond)
				if err := run.Track(v, name, tracking.TrackOptions{Step: &step, Time: at}); err != nil {
					return err
				}
			}
		}
		if err := run.FinishAt(ctx, tracking.StatusFinished, start.Add(time.Duration(steps)*10*time.Millisecond)); err != nil {
			return err
		}
		ids = append(ids, run.ID())
	}
	if _, err := r.Optimize(ctx); err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Println(id)
	}
	return nil
}
