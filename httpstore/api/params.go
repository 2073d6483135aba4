package api

import (
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/tracking"
)

// query is a request's parameters, checked against the names a route
// takes: an unknown name, a malformed query or a single-valued parameter
// given twice is a 400 naming it.
type query struct {
	v url.Values
}

func parseQuery(rawQuery string, single []string, multi []string) (query, error) {
	v, err := url.ParseQuery(rawQuery)
	if err != nil {
		return query{}, argErr("query", "malformed query string: %v", err)
	}
	names := make([]string, 0, len(v))
	for k := range v {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		switch {
		case slices.Contains(single, k):
			if len(v[k]) > 1 {
				return query{}, argErr(k, "given %d times; it takes one value", len(v[k]))
			}
		case slices.Contains(multi, k):
		default:
			known := append(append([]string(nil), single...), multi...)
			if len(known) == 0 {
				return query{}, argErr(k, "unknown parameter (this route takes none)")
			}
			return query{}, argErr(k, "unknown parameter (this route takes %s)", strings.Join(known, ", "))
		}
	}
	return query{v: v}, nil
}

func (q query) has(k string) bool { _, ok := q.v[k]; return ok }

func (q query) str(k string) string { return q.v.Get(k) }

// nonEmpty returns the value of k, refusing an empty one when given.
func (q query) nonEmpty(k string) (string, error) {
	s := q.v.Get(k)
	if q.has(k) && s == "" {
		return "", argErr(k, "empty value")
	}
	return s, nil
}

// int64In parses k as a decimal integer in [lo, hi]; def when absent.
func (q query) int64In(k string, def, lo, hi int64) (int64, error) {
	if !q.has(k) {
		return def, nil
	}
	s := q.v.Get(k)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return 0, argErr(k, "%q is out of range", s)
		}
		return 0, argErr(k, "%q is not a decimal integer", s)
	}
	if n < lo || n > hi {
		if hi == math.MaxInt64 {
			return 0, argErr(k, "%d is out of range (want at least %d)", n, lo)
		}
		return 0, argErr(k, "%d is out of range (want %d to %d)", n, lo, hi)
	}
	return n, nil
}

// openOptions reads version= and tag=.
func (q query) openOptions() (lance.OpenOptions, error) {
	var o lance.OpenOptions
	if q.has("version") {
		s := q.v.Get("version")
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return o, argErr("version", "%q is not a version number", s)
		}
		if n == 0 {
			return o, argErr("version", "versions start at 1")
		}
		o.Version = n
	}
	tag, err := q.nonEmpty("tag")
	if err != nil {
		return o, err
	}
	if o.Version != 0 && tag != "" {
		return o, argErr("version", "version and tag exclude each other")
	}
	o.Tag = tag
	return o, nil
}

// maxIDs is the most series ids one request may name.
const maxIDs = 1000

// seriesIDs reads ids=ID,ID,... (decimal series ids).
func (q query) seriesIDs() ([]tracking.SeriesID, error) {
	if !q.has("ids") {
		return nil, argErr("ids", "missing (give ids=ID,ID,...: decimal series ids)")
	}
	s := q.v.Get("ids")
	if s == "" {
		return nil, argErr("ids", "empty list")
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxIDs {
		return nil, argErr("ids", "%d ids; at most %d per request", len(parts), maxIDs)
	}
	ids := make([]tracking.SeriesID, len(parts))
	for i, p := range parts {
		if p == "" || p[0] < '0' || p[0] > '9' {
			return nil, argErr("ids", "%q is not a decimal series id", p)
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, argErr("ids", "%q is not a decimal series id (0 to 18446744073709551615)", p)
		}
		if n == 0 {
			return nil, argErr("ids", "0 is not a series id")
		}
		ids[i] = tracking.SeriesID(n)
	}
	return ids, nil
}

// timeParam parses k as an RFC 3339 time.
func (q query) timeParam(k string) (time.Time, bool, error) {
	if !q.has(k) {
		return time.Time{}, false, nil
	}
	s := q.v.Get(k)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false, argErr(k, "%q is not an RFC 3339 time (e.g. 2026-01-02T15:04:05Z)", s)
	}
	return t, true, nil
}

// The bounds of an open time range: microseconds (what the metrics table
// stores) of the earliest and latest int64 values.
var (
	minTime = time.UnixMicro(-1 << 63)
	maxTime = time.UnixMicro(1<<63 - 1)
)
