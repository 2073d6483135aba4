package expr

import (
	"time"
)

// instant is a point in time as seconds since the Unix epoch plus
// nanoseconds in [0, 1e9). Unlike an int64 of nanoseconds it covers every
// year from 0000 to 9999.
type instant struct {
	sec  int64
	nsec int64
}

// add returns t shifted by d seconds.
func (t instant) add(d int64) instant { return instant{t.sec + d, t.nsec} }

// floorTo returns t rounded down to a multiple of 10^(9-prec) nanoseconds.
func (t instant) floorTo(prec int) instant {
	if prec < 0 || prec >= 9 {
		return t
	}
	q := int64(1)
	for i := prec; i < 9; i++ {
		q *= 10
	}
	t.nsec -= t.nsec % q
	return t
}

func digitsAt(s string, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	v := 0
	for _, c := range []byte(s[i : i+n]) {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// parseDate reads YYYY-MM-DD at the start of s and returns its day number
// (days since 1970-01-01) and the length read.
func parseDate(s string) (day int64, n int, ok bool) {
	y, ok1 := digitsAt(s, 0, 4)
	m, ok2 := digitsAt(s, 5, 2)
	d, ok3 := digitsAt(s, 8, 2)
	if !ok1 || !ok2 || !ok3 || s[4] != '-' || s[7] != '-' || m < 1 || m > 12 || d < 1 {
		return 0, 0, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d { // 2023-02-30
		return 0, 0, false
	}
	return floorDiv(t.Unix(), 86400), 10, true
}

// parseTimestamp reads the timestamp forms lance and arrow accept:
//
//	YYYY-MM-DD
//	YYYY-MM-DD[T| ]HH:MM[:SS[.fraction]][Z | ±HH[:MM] | ±HHMM]
//
// The fraction has 1 to 9 digits. zoned reports whether an offset was given;
// without one the instant is the wall clock read as UTC.
func parseTimestamp(s string) (t instant, zoned bool, ok bool) {
	day, i, ok := parseDate(s)
	if !ok {
		return instant{}, false, false
	}
	t.sec = day * 86400
	if i == len(s) {
		return t, false, true
	}
	if s[i] != 'T' && s[i] != 't' && s[i] != ' ' {
		return instant{}, false, false
	}
	i++
	hh, ok1 := digitsAt(s, i, 2)
	mm, ok2 := digitsAt(s, i+3, 2)
	if !ok1 || !ok2 || s[i+2] != ':' || hh > 23 || mm > 59 {
		return instant{}, false, false
	}
	i += 5
	ss := 0
	if i < len(s) && s[i] == ':' {
		v, ok := digitsAt(s, i+1, 2)
		if !ok || v > 59 {
			return instant{}, false, false
		}
		ss = v
		i += 3
		if i < len(s) && s[i] == '.' {
			i++
			n := 0
			var frac int64
			for i < len(s) && isDigit(s[i]) {
				if n == 9 {
					return instant{}, false, false
				}
				frac = frac*10 + int64(s[i]-'0')
				n++
				i++
			}
			if n == 0 {
				return instant{}, false, false
			}
			for ; n < 9; n++ {
				frac *= 10
			}
			t.nsec = frac
		}
	}
	t.sec += int64(hh)*3600 + int64(mm)*60 + int64(ss)
	if i == len(s) {
		return t, false, true
	}
	switch s[i] {
	case 'Z', 'z':
		if i+1 != len(s) {
			return instant{}, false, false
		}
		return t, true, true
	case '+', '-':
		sign := int64(1)
		if s[i] == '-' {
			sign = -1
		}
		rest := s[i+1:]
		oh, ok := digitsAt(rest, 0, 2)
		if !ok {
			return instant{}, false, false
		}
		om := 0
		switch {
		case len(rest) == 2:
		case len(rest) == 5 && rest[2] == ':':
			om, ok = digitsAt(rest, 3, 2)
		case len(rest) == 4:
			om, ok = digitsAt(rest, 2, 2)
		default:
			ok = false
		}
		if !ok || oh > 23 || om > 59 {
			return instant{}, false, false
		}
		return t.add(-sign * int64(oh*3600+om*60)), true, true
	}
	return instant{}, false, false
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
