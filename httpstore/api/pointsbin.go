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
// PointsF64Header per series, in the order of pts: heads, from
// pointsF64Heads), zeros up to a multiple of 8 bytes from the start, then
// each series' arrays one after another, in its header's order, as
// little-endian float64s. The arrays are the JSON answer's with the same
// fields: steps and epochs as floats (an epoch without a value is NaN),
// non-finite values as themselves.
func appendPointsF64(dst []byte, pts []inspect.Points, heads []PointsF64Header) ([]byte, error) {
	start, err := pointsF64Start(heads)
	if err != nil {
		return nil, err
	}
	dst = append(slices.Grow(dst, pointsF64Size(heads)), start...)
	for i := range pts {
		for _, f := range heads[i].Fields {
			dst = appendF64Field(dst, &pts[i], f, 0, heads[i].N)
		}
	}
	return dst, nil
}

// pointsF64Heads is the header of the binary answer of pts with fields.
func pointsF64Heads(pts []inspect.Points, fields pointFields) []PointsF64Header {
	heads := make([]PointsF64Header, len(pts))
	for i := range pts {
		heads[i] = pointsF64Head(&pts[i], fields)
	}
	return heads
}

// pointsF64Head is one series' element of the header: the arrays of its
// JSON object with the same fields.
func pointsF64Head(p *inspect.Points, fields pointFields) PointsF64Header {
	h := PointsF64Header{SeriesID: strconv.FormatUint(uint64(p.SeriesID), 10), N: len(p.Values), Fields: []string{}}
	for _, f := range pointArrays {
		switch {
		case fields != nil && !fields[f]:
			continue
		case (f == "mins" || f == "maxs") && p.Mins == nil:
			continue // not downsampled: no bands, as in the JSON answer
		}
		h.Fields = append(h.Fields, f)
	}
	return h
}

// pointsF64Start is the start of a binary answer: the header's length,
// the header and the zeros after it.
func pointsF64Start(heads []PointsF64Header) ([]byte, error) {
	hj, err := json.Marshal(heads)
	if err != nil {
		return nil, err
	}
	b := binary.LittleEndian.AppendUint32(make([]byte, 0, 4+len(hj)+7), uint32(len(hj)))
	b = append(b, hj...)
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	return b, nil
}

// pointsF64Size is about the size of a binary answer with heads: its
// arrays and a header of at most 128 bytes per series.
func pointsF64Size(heads []PointsF64Header) int {
	n := 8
	for _, h := range heads {
		n += 128 + 8*h.N*len(h.Fields)
	}
	return n
}

// appendF64Field appends the values [from, to) of p's array f, as the
// binary answer holds them.
func appendF64Field(dst []byte, p *inspect.Points, f string, from, to int) []byte {
	switch f {
	case "steps":
		for _, v := range p.Steps[from:to] {
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(float64(v)))
		}
	case "values":
		dst = appendF64s(dst, p.Values[from:to])
	case "timestamps":
		dst = appendF64s(dst, p.Timestamps[from:to])
	case "epochs":
		for _, v := range p.Epochs[from:to] {
			e := math.NaN()
			if v != tracking.NoEpoch {
				e = float64(v)
			}
			dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e))
		}
	case "mins":
		dst = appendF64s(dst, p.Mins[from:to])
	case "maxs":
		dst = appendF64s(dst, p.Maxs[from:to])
	}
	return dst
}

// keepF64Arrays lets go of p's arrays that fields (a header's) leaves out.
func keepF64Arrays(p *inspect.Points, fields []string) {
	if !slices.Contains(fields, "steps") {
		p.Steps = nil
	}
	if !slices.Contains(fields, "values") {
		p.Values = nil
	}
	if !slices.Contains(fields, "timestamps") {
		p.Timestamps = nil
	}
	if !slices.Contains(fields, "epochs") {
		p.Epochs = nil
	}
	if !slices.Contains(fields, "mins") {
		p.Mins = nil
	}
	if !slices.Contains(fields, "maxs") {
		p.Maxs = nil
	}
}

// f64Piece is the most bytes of arrays a streamed binary answer writes at
// once.
const f64Piece = 64 << 10

func appendF64s(dst []byte, vs []float64) []byte {
	for _, v := range vs {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return dst
}
