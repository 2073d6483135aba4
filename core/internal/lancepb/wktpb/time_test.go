package wktpb

import (
	"testing"
	"time"
)

func TestNewTimestamp(t *testing.T) {
	for _, tm := range []time.Time{
		time.Unix(0, 0),
		time.Date(2026, 12, 1, 22, 5, 7, 123456789, time.UTC),
		time.Date(1969, 7, 20, 20, 17, 40, 5, time.FixedZone("x", 3600)), // before the epoch
	} {
		ts := NewTimestamp(tm)
		if got := time.Unix(ts.Seconds, int64(ts.Nanos)); !got.Equal(tm) || ts.Nanos < 0 || ts.Nanos > 999_999_999 {
			t.Errorf("%v: got %d s %d ns (%v)", tm, ts.Seconds, ts.Nanos, got)
		}
	}
}
