package expr

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Timestamp columns with a named zone: a literal without an offset is read
// in the column's zone; a literal with one, and a date, need no zone, so
// they work where the zone cannot be resolved (js/wasm has no zoneinfo).
func TestTimestampZones(t *testing.T) {
	ny := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}
	mars := &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "Mars/Olympus_Mons"}
	schema := arrow.NewSchema([]arrow.Field{{Name: "ny", Type: ny}, {Name: "mars", Type: mars}}, nil)
	at := []string{"2024-07-01T16:00:00Z", "2024-01-15T17:00:00Z", "2024-01-01T00:00:00Z"}
	nb, mb := array.NewTimestampBuilder(memory.DefaultAllocator, ny), array.NewTimestampBuilder(memory.DefaultAllocator, mars)
	for _, s := range at {
		ts, _ := time.Parse(time.RFC3339, s)
		nb.Append(arrow.Timestamp(ts.UnixMicro()))
		mb.Append(arrow.Timestamp(ts.UnixMicro()))
	}
	cols := []arrow.Array{nb.NewArray(), mb.NewArray()}
	rec := array.NewRecordBatch(schema, cols, int64(len(at)))
	defer rec.Release()
	rows := func(src string) (string, error) {
		e, err := Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		b, err := e.Bind(schema)
		if err != nil {
			return "", err
		}
		got, err := b.Filter(rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, ok := range got {
			if ok {
				out = append(out, fmt.Sprint(i))
			}
		}
		return strings.Join(out, ","), nil
	}
	for src, want := range map[string]string{
		"ny = '2024-07-01 12:00:00'":           "0", // EDT, UTC-4
		"ny = '2024-01-15 12:00:00'":           "1", // EST, UTC-5
		"ny = TIMESTAMP '2024-01-15 12:00:00'": "1",
		"ny = '2024-07-01T16:00:00Z'":          "0",
		"mars > '2024-01-10T00:00:00Z'":        "0,1",
		"mars >= DATE '2024-01-01'":            "0,1,2",
		"mars = '2024-01-01T01:00:00+01:00'":   "2",
	} {
		if got, err := rows(src); err != nil || got != want {
			t.Errorf("%s: rows %q %v, want %q", src, got, err, want)
		}
	}
	_, err := rows("mars = '2024-01-01 01:00:00'")
	var be *BindError
	if !errors.As(err, &be) || !errors.Is(err, ErrUnsupportedType) || be.Column != "mars" || !strings.Contains(be.Msg, `time zone "Mars/Olympus_Mons"`) {
		t.Fatalf("a literal without an offset on an unknown zone: %v", err)
	}

	// ZoneOffset stands in for a zone time.LoadLocation cannot resolve.
	defer func(f func(string, time.Time) (int, error)) { ZoneOffset = f }(ZoneOffset)
	var asked []string
	ZoneOffset = func(tz string, wall time.Time) (int, error) {
		asked = append(asked, tz+" "+wall.Format(time.DateTime))
		if tz == "Mars/Olympus_Mons" {
			return 3600, nil
		}
		return 0, errors.New("unknown zone")
	}
	if got, err := rows("mars = '2024-01-01 01:00:00'"); err != nil || got != "2" {
		t.Errorf("through ZoneOffset: rows %q %v, want 2", got, err)
	}
	if got, err := rows("ny = '2024-07-01 12:00:00'"); err != nil || got != "0" {
		t.Errorf("a zone the system knows: rows %q %v", got, err)
	}
	if len(asked) != 1 || asked[0] != "Mars/Olympus_Mons 2024-01-01 01:00:00" {
		t.Errorf("ZoneOffset asked %q, want only the Mars wall time", asked)
	}
}
