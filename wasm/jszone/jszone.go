//go:build js && wasm

// Package jszone gives Go programs on js/wasm the offsets of IANA time
// zones from JavaScript's Intl, which browsers, Node and workerd hold: such
// a program carries no zoneinfo (embedding time/tzdata would add about
// 450 KB). The wasm module and the edge worker set core/expr's ZoneOffset
// to Offset, so a filter's literal without an offset, on a timestamp
// column of a named zone, is read in that zone as it is natively.
package jszone

import (
	"fmt"
	"strconv"
	"sync"
	"syscall/js"
	"time"
)

var zoneFormats sync.Map // zone name -> js.Value, an Intl.DateTimeFormat

// Offset implements core/expr's ZoneOffset: the offset east of UTC, in
// seconds, that the IANA zone tz has at the wall-clock time wall (its
// fields read in UTC). It reads the wall time as UTC, asks Intl for the
// zone's offset there, and corrects once with the offset at the instant
// found, as time.Date does at a change of offset. An unknown zone is an
// error.
func Offset(tz string, wall time.Time) (off int, err error) {
	defer func() {
		if p := recover(); p != nil { // Intl throws a RangeError for an unknown zone
			err = fmt.Errorf("unknown time zone: %v", p)
		}
	}()
	f, ok := zoneFormats.Load(tz)
	if !ok {
		opts := js.ValueOf(map[string]any{"timeZone": tz, "hourCycle": "h23", "era": "short",
			"year": "numeric", "month": "numeric", "day": "numeric", "hour": "numeric", "minute": "numeric", "second": "numeric"})
		f = js.Global().Get("Intl").Get("DateTimeFormat").New("en-US", opts)
		zoneFormats.Store(tz, f)
	}
	format := f.(js.Value)
	local := wall.Unix()
	off1, err := offsetAt(format, local)
	if err != nil {
		return 0, err
	}
	off2, err := offsetAt(format, local-int64(off1))
	if err != nil || off2 == off1 {
		return off1, err
	}
	return off2, nil
}

// offsetAt is the zone's offset east of UTC, in seconds, at Unix second
// sec: the zone's wall clock there, read from Intl's parts, minus sec.
func offsetAt(format js.Value, sec int64) (int, error) {
	parts := format.Call("formatToParts", js.Global().Get("Date").New(float64(sec)*1000))
	var y, mo, d, h, mi, s int
	bc := false
	for i, n := 0, parts.Length(); i < n; i++ {
		p := parts.Index(i)
		v := p.Get("value").String()
		if p.Get("type").String() == "era" {
			bc = v == "B" || v == "BC"
			continue
		}
		x, err := strconv.Atoi(v)
		switch p.Get("type").String() {
		case "year":
			y = x
		case "month":
			mo = x
		case "day":
			d = x
		case "hour":
			h = x
		case "minute":
			mi = x
		case "second":
			s = x
		default:
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("Intl gave %q", v)
		}
	}
	if bc {
		y = 1 - y
	}
	wall := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC).Unix()
	return int(wall - sec), nil
}
