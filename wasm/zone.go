//go:build js && wasm

package main

import (
	"fmt"
	"strconv"
	"sync"
	"syscall/js"
	"time"

	"github.com/kv0/kv0/core/expr"
)

// The module carries no zoneinfo (time/tzdata would add ~450 KB), so a
// filter's literal without an offset, on a timestamp column of a named
// zone, takes the zone's offset from JavaScript's Intl, which every
// browser and Node holds.
func init() { expr.ZoneOffset = intlZoneOffset }

var zoneFormats sync.Map // zone name -> js.Value, an Intl.DateTimeFormat

// intlZoneOffset implements expr.ZoneOffset: it reads the wall time in
// UTC, asks Intl for the zone's offset there, and corrects once with the
// offset at the instant found, as time.Date does at a change of offset.
func intlZoneOffset(tz string, wall time.Time) (off int, err error) {
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
