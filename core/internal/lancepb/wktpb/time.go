package wktpb

import "time"

// NewTimestamp returns t as a Timestamp: seconds since the Unix epoch and
// the nanoseconds within that second (0 to 999,999,999).
func NewTimestamp(t time.Time) *Timestamp {
	return &Timestamp{Seconds: t.Unix(), Nanos: int32(t.Nanosecond())}
}
