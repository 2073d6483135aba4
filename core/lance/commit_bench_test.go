package lance

import (
	"context"
	"testing"

	"github.com/kv0/kv0/native/fsstore"
)

// BenchmarkCommitAppend measures commits per second of one-row appends by
// one writer on local disk (fsstore, with fsync).
func BenchmarkCommitAppend(b *testing.B) {
	ctx := context.Background()
	st, err := fsstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	d, err := Create(ctx, st, "t.lance", wSchema, Batches(), WriteOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rec := idBatch(0, 1)
	defer rec.Release()
	for b.Loop() {
		if d, err = d.Append(ctx, Batches(rec), WriteOptions{}); err != nil {
			b.Fatal(err)
		}
		// Keep the manifest small, as a table under steady appends is
		// compacted now and then.
		if len(d.frags) >= 256 {
			if d, _, err = d.Compact(ctx, CompactOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
