package tracking

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// SeriesStats' JSON: finite values exactly as encoding/json writes them,
// NaN and ±Inf as strings, and read back to the same statistics.
func TestSeriesStatsJSON(t *testing.T) {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 500000000, time.UTC)
	type plain SeriesStats // encoding/json's own encoding, no methods
	for _, c := range []struct {
		s    SeriesStats
		want string // a fragment of the JSON; "" for finite values
	}{
		{SeriesStats{SeriesID: 1<<63 + 5, Count: 3, FirstStep: -2, LastStep: 9, LastValue: 0.1, Min: -1e-300, MinStep: 1, Max: 1e21, MaxStep: 4, LastTimestamp: ts}, ""},
		{SeriesStats{Count: 2, LastValue: math.NaN(), Min: 1.5, Max: 1.5, NonFinite: 1}, `"last_value":"NaN","min":1.5,`},
		{SeriesStats{Count: 1, LastValue: math.Inf(1), Min: math.Inf(1), Max: math.Inf(-1), NonFinite: 1}, `"last_value":"Infinity","min":"Infinity","min_step":0,"max":"-Infinity"`},
	} {
		b, err := json.Marshal(c.s)
		if err != nil {
			t.Fatalf("%+v: %v", c.s, err)
		}
		if c.want == "" {
			std, err := json.Marshal(plain(c.s))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != string(std) {
				t.Errorf("finite statistics:\n got %s\nwant %s", b, std)
			}
		} else if !strings.Contains(string(b), c.want) {
			t.Errorf("%s: want %s in it", b, c.want)
		}
		var back SeriesStats
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if back.SeriesID != c.s.SeriesID || back.Count != c.s.Count || !same(back.LastValue, c.s.LastValue) ||
			!same(back.Min, c.s.Min) || !same(back.Max, c.s.Max) || back.NonFinite != c.s.NonFinite || !back.LastTimestamp.Equal(c.s.LastTimestamp) {
			t.Errorf("%s read back as %+v, want %+v", b, back, c.s)
		}
	}
	var s SeriesStats
	if err := json.Unmarshal([]byte(`{"last_value":"nan"}`), &s); err == nil {
		t.Error(`"nan" read as a value`)
	}
}
