package api

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/tracking"
)

// PointsF64Type is the Content-Type of a points answer in the binary form
// (format=f64): what a client that turns the arrays into Float64Arrays
// reads without parsing numbers (docs/http-api.md, "Points").
const PointsF64Type = "application/vnd.kv0.points+f64"

// PointsF64Header is one series of a binary points answer's header.
type PointsF64Header struct {
	SeriesID string `json:"series_id"`
	// N is the length of each of the series' arrays.
	N int `json:"n"`
	// Fields names the series' arrays, in the order their values follow.
	Fields []string `json:"fields"`
}

// appendPointsF64 appends the binary form of a points answer: the byte
// length of a JSON header (uint32, little-endian), the header (one
// PointsF64Header per series, in the order of pts), zeros up to a multiple
// of 8 bytes from the start, then each series' arrays one after another,
// in its header's order, as little-endian float64s. The arrays are the
// JSON answer's with the same fields: steps and epochs as floats (an
// epoch without a value is NaN), non-finite values as themselves.
func appendPointsF64(dst []byte, pts []inspect.Points, fields pointFields) ([]byte, error) {
	want := func(name string) bool { return fields == nil || fields[name] }
	heads := make([]PointsF64Header, len(pts))
	total := 0
	for i := range pts {
		p := &pts[i]
		h := PointsF64Header{SeriesID: strconv.FormatUint(uint64(p.SeriesID), 10), N: len(p.Values)}
		for _, f := range pointArrays {
			switch {
			case !want(f):
				continue
			case (f == "mins" || f == "maxs") && p.Mins == nil:
				continue // not downsampled: no bands, as in the JSON answer
			}
			h.Fields = append(h.Fields, f)
		}
		if h.Fields == nil {
			h.Fields = []string{}
		}
		heads[i] = h
		total += h.N * len(h.Fields)
	}
	hj, err := json.Marshal(heads)
	if err != nil {
		return nil, err
	}
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(hj)))
	dst = append(dst, hj...)
	for (len(dst)-start)%8 != 0 {
		dst = append(dst, 0)
	}
	dst = slices.Grow(dst, 8*total)
	for i := range pts {
		p := &pts[i]
		for _, f := range heads[i].Fields {
			switch f {
			case "steps":
				for _, v := range p.Steps {
					dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(float64(v)))
				}
			case "values":
				dst = appendF64s(dst, p.Values)
			case "timestamps":
				dst = appendF64s(dst, p.Timestamps)
			case "epochs":
				for _, v := range p.Epochs {
					e := math.NaN()
					if v != tracking.NoEpoch {
						e = float64(v)
					}
					dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e))
				}
			case "mins":
				dst = appendF64s(dst, p.Mins)
			case "maxs":
				dst = appendF64s(dst, p.Maxs)
			}
		}
	}
	return dst, nil
}

func appendF64s(dst []byte, vs []float64) []byte {
	for _, v := range vs {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}
