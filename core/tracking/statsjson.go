package tracking

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/kv0/kv0/core/jsonl"
)

// statsJSON is SeriesStats with its three values as raw JSON.
type statsJSON struct {
	SeriesID      SeriesID        `json:"series_id"`
	Count         uint64          `json:"count"`
	FirstStep     int64           `json:"first_step"`
	LastStep      int64           `json:"last_step"`
	LastValue     json.RawMessage `json:"last_value"`
	Min           json.RawMessage `json:"min"`
	MinStep       int64           `json:"min_step"`
	Max           json.RawMessage `json:"max"`
	MaxStep       int64           `json:"max_step"`
	NonFinite     uint64          `json:"non_finite"`
	LastTimestamp time.Time       `json:"last_timestamp"`
}

// MarshalJSON writes the statistics as encoding/json writes their fields,
// except that a value JSON cannot hold (a last value of NaN or ±Inf; Min
// and Max of a series without a finite value) is the string "NaN",
// "Infinity" or "-Infinity", as kv0's other JSON writes such values
// (core/jsonl): encoding/json refuses them, which failed every listing of
// a series whose last value was NaN.
func (s SeriesStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(statsJSON{s.SeriesID, s.Count, s.FirstStep, s.LastStep,
		jsonl.AppendFloat(nil, s.LastValue, 64), jsonl.AppendFloat(nil, s.Min, 64), s.MinStep,
		jsonl.AppendFloat(nil, s.Max, 64), s.MaxStep, s.NonFinite, s.LastTimestamp})
}

// UnmarshalJSON reads what MarshalJSON writes (a value as a number or as
// one of the three strings).
func (s *SeriesStats) UnmarshalJSON(b []byte) error {
	var j statsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var vals [3]float64
	for i, raw := range []json.RawMessage{j.LastValue, j.Min, j.Max} {
		v, err := statsValue(raw)
		if err != nil {
			return err
		}
		vals[i] = v
	}
	*s = SeriesStats{j.SeriesID, j.Count, j.FirstStep, j.LastStep, vals[0], vals[1], j.MinStep, vals[2], j.MaxStep,
		j.NonFinite, j.LastTimestamp}
	return nil
}

func statsValue(raw json.RawMessage) (float64, error) {
	switch string(bytes.TrimSpace(raw)) {
	case `"NaN"`:
		return math.NaN(), nil
	case `"Infinity"`:
		return math.Inf(1), nil
	case `"-Infinity"`:
		return math.Inf(-1), nil
	case "", "null":
		return 0, nil
	}
	v, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64)
	if err != nil {
		return 0, fmt.Errorf("tracking: statistics value %s: want a number, \"NaN\", \"Infinity\" or \"-Infinity\"", raw)
	}
	return v, nil
}
