package s3

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/tracking"
)

// The tracking repository of the latency benchmark: trackRuns runs with
// trackSeries series each of trackPoints points (10M points by default;
// KV0_BENCH_POINTS overrides the points per series for quick runs).
const (
	trackRuns   = 10
	trackSeries = 10
)

var trackPoints = func() int {
	if n, err := strconv.Atoi(os.Getenv("KV0_BENCH_POINTS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}()

var (
	trackOnce   sync.Once
	trackMem    *store.Memory
	trackSID    tracking.SeriesID
	trackDataSz int64 // bytes of the metrics data files
	trackErr    error
)

// trackRepo builds the repository in memory: every series tracked, then
// Optimize, so metrics are sorted by series in large fragments.
func trackRepo(b *testing.B) *store.Memory {
	trackOnce.Do(func() {
		ctx := context.Background()
		mem := store.NewMemory()
		r, err := tracking.OpenRepo(ctx, mem, "repo", tracking.RepoOptions{FlushInterval: -1, FlushRows: 1 << 20, MaxFragments: -1})
		if err != nil {
			trackErr = err
			return
		}
		t0 := time.Unix(1_700_000_000, 0)
		for i := range trackRuns {
			run, err := r.StartRun(ctx, tracking.RunSpec{Name: "run" + strconv.Itoa(i), Experiment: "bench"})
			if err != nil {
				trackErr = err
				return
			}
			if err := run.SetParams(map[string]any{"lr": 0.001 * float64(i+1), "seed": i}); err != nil {
				trackErr = err
				return
			}
			for s := range trackSeries {
				name := "metric" + strconv.Itoa(s)
				if i == trackRuns/2 && s == trackSeries/2 {
					trackSID, _ = tracking.NewSeriesID(run.ID(), name, nil)
				}
				for p := range trackPoints {
					step := int64(p)
					v := float64(p%1000)/1000 + float64(s)
					if err := run.Track(v, name, tracking.TrackOptions{Step: &step, Time: t0.Add(time.Duration(p) * time.Millisecond)}); err != nil {
						trackErr = err
						return
					}
				}
			}
			if err := run.Finish(ctx, tracking.StatusFinished); err != nil {
				trackErr = err
				return
			}
		}
		if _, err := r.Optimize(ctx); err != nil {
			trackErr = err
			return
		}
		if err := r.Close(); err != nil {
			trackErr = err
			return
		}
		objs, err := mem.List(ctx, store.ListOptions{Prefix: "repo/" + tracking.MetricsTable + "/data/"})
		if err != nil {
			trackErr = err
			return
		}
		for _, o := range objs {
			trackDataSz += o.Size
		}
		trackMem = mem
	})
	if trackErr != nil {
		b.Fatal(trackErr)
	}
	return trackMem
}

// BenchmarkTrackingLatency measures, with 50 ms injected into every read
// of a repository holding 10 runs × 10 series × 100k points (10M points,
// optimized), from a cold start (a new read-only handle):
//
//   - series: OpenRepo + ReadMany of one 100k-point series;
//   - runs: OpenRepo + Runs.
//
// roundtrips/op is elapsed / 50 ms, waves/op the request waves (requests
// issued while none was in flight), series-bytes the share of the metrics
// data files one series takes (the target is bytes/op ≤ 2 × series-bytes
// plus metadata).
func BenchmarkTrackingLatency(b *testing.B) {
	mem := trackRepo(b)
	total := int64(trackRuns * trackSeries * trackPoints)
	seriesBytes := float64(trackDataSz) * float64(trackPoints) / float64(total)
	for _, w := range []struct {
		name string
		fn   func(ctx context.Context, r *tracking.Repo) error
	}{
		{"series", func(ctx context.Context, r *tracking.Repo) error {
			d, err := r.ReadMany(ctx, []tracking.SeriesID{trackSID}, tracking.ReadOptions{})
			if err == nil && d[0].Len() != trackPoints {
				b.Fatalf("read %d points, want %d", d[0].Len(), trackPoints)
			}
			return err
		}},
		{"runs", func(ctx context.Context, r *tracking.Repo) error {
			runs, err := r.Runs(ctx, tracking.RunFilter{})
			if err == nil && len(runs) != trackRuns {
				b.Fatalf("%d runs, want %d", len(runs), trackRuns)
			}
			return err
		}},
	} {
		for _, noList := range []bool{false, true} {
			name := w.name + "/list"
			if noList {
				name = w.name + "/nolist"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				var requests, bytes, waves, late int64
				var elapsed time.Duration
				for b.Loop() {
					s := &slowStore{Store: mem, noList: noList, tracing: testing.Verbose()}
					start := time.Now()
					r, err := tracking.OpenRepo(ctx, s, "repo", tracking.RepoOptions{ReadOnly: true})
					if err != nil {
						b.Fatal(err)
					}
					if err := w.fn(ctx, r); err != nil {
						b.Fatal(err)
					}
					elapsed += time.Since(start)
					// What the caller waited for; prefetches the scanner
					// started in the background are counted apart.
					n, by, wv := s.requests.Load(), s.bytes.Load(), s.sequential()
					r.Close()
					time.Sleep(4 * latency)
					requests += n
					bytes += by
					waves += int64(wv)
					late += s.bytes.Load() - by
					if testing.Verbose() && requests == n {
						b.Logf("%s: %d requests, %d bytes in %d waves (+%d bytes in the background):\n%s",
							name, n, by, wv, s.bytes.Load()-by, strings.Join(s.trace, "\n"))
					}
				}
				report(b, elapsed, requests, bytes)
				b.ReportMetric(float64(waves)/float64(b.N), "waves/op")
				b.ReportMetric(float64(late)/float64(b.N), "bg-bytes/op")
				if w.name == "series" {
					b.ReportMetric(seriesBytes, "series-bytes")
				}
			})
		}
	}
}

// keyKind shortens a key for request traces.
func keyKind(key string) string {
	if i := strings.Index(key, ".lance/"); i >= 0 {
		rest := key[i+len(".lance/"):]
		if j := strings.IndexByte(rest, '/'); j >= 0 {
			rest = rest[:j]
		}
		return key[:i+len(".lance")] + "/" + rest
	}
	return key
}
