package s3

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kv0/kv0/core/lance"
)

// BenchmarkCommit measures Lance appends (one 10-row fragment per commit)
// against versitygw on loopback: the latency of one commit and the commits
// per second of one writer and of 8 concurrent writers, each with its own
// handle on the same dataset (losers of a version race rebase and retry).
// BenchmarkCommitGCS and BenchmarkCommitAzure do the same on
// fake-gcs-server (in process) and Azurite, in the same run:
//
//	go test ./tests/s3 -run '^$' -bench BenchmarkCommit -benchtime 4x
func BenchmarkCommit(b *testing.B) { benchCommit(b, s3Backend()) }

// BenchmarkCommitGCS is BenchmarkCommit on fake-gcs-server.
func BenchmarkCommitGCS(b *testing.B) { benchCommit(b, gcsBackend()) }

// BenchmarkCommitAzure is BenchmarkCommit on Azurite.
func BenchmarkCommitAzure(b *testing.B) { benchCommit(b, azureBackend()) }

func benchCommit(b *testing.B, be backend) {
	be.need(b)
	for _, writers := range []int{1, 8} {
		b.Run("writers="+itoa(int64(writers)), func(b *testing.B) {
			ctx := context.Background()
			st := be.open(b, be.newURI(b.Name()))
			if _, err := lance.Create(ctx, st, "t.lance", idSchema, lance.Batches(idBatch(0, 10)), lance.WriteOptions{}); err != nil {
				b.Fatal(err)
			}
			// With 8 writers committing back to back, a writer can lose
			// more than the default 20 races in a row; the benchmark
			// measures throughput, so it retries until it wins.
			wo := lance.WriteOptions{Commit: lance.CommitOptions{MaxRetries: 10_000}}
			var mu sync.Mutex
			var lat []time.Duration
			commits := 0
			var elapsed time.Duration
			for b.Loop() {
				const perWriter = 25
				var wg sync.WaitGroup
				errs := make(chan error, writers)
				start := time.Now()
				for w := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
						if err != nil {
							errs <- err
							return
						}
						for i := range perWriter {
							id := int64(1000*w + i)
							t0 := time.Now()
							if d, err = d.Append(ctx, lance.Batches(idBatch(id*10, id*10+10)), wo); err != nil {
								errs <- err
								return
							}
							mu.Lock()
							lat = append(lat, time.Since(t0))
							commits++
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(commits)/elapsed.Seconds(), "commits/s")
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
			d, err := lance.Open(ctx, st, "t.lance", lance.OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if n, err := d.CountRows(ctx); err != nil || n != uint64(10*(commits+1)) {
				b.Fatalf("%d rows after %d commits, %v", n, commits, err)
			}
		})
	}
}
