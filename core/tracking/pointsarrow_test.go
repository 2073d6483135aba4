package tracking

import (
	"math"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// TestPointsRecord checks that the batch sharing the buffer's columns
// equals the one the Arrow builders make.
func TestPointsRecord(t *testing.T) {
	var p points
	for i := 0; i < 1000; i++ {
		p.sid = append(p.sid, uint64(i%7+1))
		p.step = append(p.step, int64(i))
		p.epoch = append(p.epoch, int64(i/10))
		p.hasEpoch = append(p.hasEpoch, i%3 != 0)
		p.ts = append(p.ts, int64(i)*1000)
		v := float64(i) / 3
		if i == 5 {
			v = math.NaN()
		}
		p.val = append(p.val, v)
	}
	want := buildMetrics(&p, nil, nil, time.Now())
	defer want.Release()
	got := pointsRecord(&p)
	defer got.Release()
	if !array.RecordApproxEqual(got, want, array.WithNaNsEqual(true)) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
	if pointsRecord(&points{}) != nil {
		t.Fatal("a batch for no points")
	}
}
