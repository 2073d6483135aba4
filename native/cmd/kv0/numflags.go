package main

// Numeric and duration flags check their range while they are parsed, so a
// value out of range is a usage error (exit status 2) naming the flag:
//
//	kv0: invalid value "-5" for flag -limit: must be at least 0
//
// Ranges of every such flag:
//
//	lance info/cat --version N       1 ..              (default: latest)
//	lance cat --limit N              0 ..              (0 prints no row; default: all)
//	lance write --max-rows-per-file  0 .. 2^32-1       (0: the default, 1Mi)
//	lance compact --target-rows      0 .. 2^32-1       (0: the default, 1Mi)
//	lance tag create --version N     1 ..              (default: latest)
//	lance restore --version N        1 ..              (required)
//	lance cleanup --older-than D     0 ..              (required; 0: every version but the latest)
//	lance cleanup --retain-versions  0 .. 2^31-1
//	kv get/scan/tag --version N      1 ..              (default: latest)
//	kv scan --limit N                0 ..              (0: every key)
//	kv cleanup --older-than D        0 ..              (default 7d)
//	metrics --max-points N           0 ..              (0: every point)
//	demo --runs N                    1 .. 1000
//	demo --steps N                   1 .. 10^7
//	sign-server --expiry D           1s .. 7d          (default 5m)
//
// Durations are Go durations ("36h", "90m") or whole days and weeks ("14d",
// "2w", "1d12h"): parseDuration is the one parser of every duration flag.
// The --format of lance write, kv put/delete, track and demo takes 2.1 or
// 2.2 (formatVar).

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kv0/kv0/core/lance"
)

// intValue is a flag.Value holding an int in [min, max].
type intValue struct {
	p        *int
	min, max int
}

// intFlag defines an int flag accepting [min, max] with default def.
func intFlag(fs *flag.FlagSet, name string, def, min, max int, usage string) *int {
	p := new(int)
	*p = def
	intVar(fs, p, name, min, max, usage)
	return p
}

// intVar defines an int flag stored in p (its default) accepting [min, max].
func intVar(fs *flag.FlagSet, p *int, name string, min, max int, usage string) {
	fs.Var(&intValue{p: p, min: min, max: max}, name, usage)
}

func (v *intValue) String() string {
	if v == nil || v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v *intValue) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	if n < int64(v.min) {
		return fmt.Errorf("must be at least %d", v.min)
	}
	if n > int64(v.max) {
		return fmt.Errorf("must be at most %d", v.max)
	}
	*v.p = int(n)
	return nil
}

// limitValue is a flag.Value holding a count of at least 0, or -1 while
// the flag is not given (String shows nothing then).
type limitValue struct{ p *int64 }

// limitFlag defines a count flag (0 and up) that is -1 unless given.
func limitFlag(fs *flag.FlagSet, name, usage string) *int64 {
	p := new(int64)
	*p = -1
	fs.Var(limitValue{p}, name, usage)
	return p
}

func (v limitValue) String() string {
	if v.p == nil || *v.p < 0 {
		return ""
	}
	return strconv.FormatInt(*v.p, 10)
}

func (v limitValue) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	if n < 0 {
		return errors.New("must be at least 0")
	}
	*v.p = n
	return nil
}

// versionValue is a flag.Value holding a dataset version: 1 and up, 0
// while the flag is not given (the latest version).
type versionValue struct{ p *uint64 }

// versionVar defines a version flag stored in p (0 unless given).
func versionVar(fs *flag.FlagSet, p *uint64, name, usage string) {
	fs.Var(versionValue{p}, name, usage)
}

func (v versionValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.FormatUint(*v.p, 10)
}

func (v versionValue) Set(s string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return errors.New("not a version number (1 and up)")
	}
	if n == 0 {
		return errors.New("versions start at 1")
	}
	*v.p = n
	return nil
}

// durationValue is a flag.Value holding a duration in [min, max] parsed
// by parseDuration; max 0 means no upper bound.
type durationValue struct {
	p        *time.Duration
	min, max time.Duration
}

// durationFlag defines a duration flag accepting [min, max] (max 0: no
// upper bound) with default def.
func durationFlag(fs *flag.FlagSet, name string, def, min, max time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	*p = def
	durationVar(fs, p, name, min, max, usage)
	return p
}

// durationVar defines a duration flag stored in p (its default) accepting
// [min, max] (max 0: no upper bound).
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, min, max time.Duration, usage string) {
	fs.Var(&durationValue{p: p, min: min, max: max}, name, usage)
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

func (v *durationValue) String() string {
	if v == nil || v.p == nil || *v.p == 0 {
		return "" // no default shown
	}
	return formatDuration(*v.p)
}

func (v *durationValue) Set(s string) error {
	d, err := parseDuration(s)
	if err != nil {
		return err
	}
	if d < v.min {
		return fmt.Errorf("must be at least %s", formatDuration(v.min))
	}
	if v.max > 0 && d > v.max {
		return fmt.Errorf("must be at most %s", formatDuration(v.max))
	}
	*v.p = d
	return nil
}

// parseDuration parses a duration flag: a Go duration or whole days and
// weeks (lance.ParseDuration). Negative durations are refused.
func parseDuration(s string) (time.Duration, error) {
	if strings.Contains(s, "-") {
		return 0, errors.New("must not be negative")
	}
	d, err := lance.ParseDuration(s)
	if err != nil {
		return 0, errors.New(strings.TrimPrefix(err.Error(), "lance: "))
	}
	return d, nil
}

// formatDuration prints d in whole days when it is some, else as Go does.
func formatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d > 0 && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}

// maxRowCount bounds row-count flags: a row's offset in its fragment is 32 bits.
const maxRowCount = math.MaxUint32

// formatValue is a flag.Value holding a data file format kv0 writes
// ("2.1" or "2.2"), "" while the flag is not given.
type formatValue struct{ p *string }

// formatVar defines the --format flag of commands that create datasets.
func formatVar(fs *flag.FlagSet, p *string, usage string) {
	fs.Var(formatValue{p}, "format", usage)
}

func (v formatValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v formatValue) Set(s string) error {
	s = strings.TrimSpace(s)
	if s != lance.DataFormat21 && s != lance.DataFormat22 {
		return fmt.Errorf("want %s or %s (lance 8 and older read only %s)", lance.DataFormat21, lance.DataFormat22, lance.DataFormat21)
	}
	*v.p = s
	return nil
}
