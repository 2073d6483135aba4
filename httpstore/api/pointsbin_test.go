package api

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/inspect"
	"github.com/kv0/kv0/core/tracking"
)

// decodePointsF64 reads a binary points answer (format=f64) into one map
// of arrays per series, checking its framing.
func decodePointsF64(t *testing.T, b []byte) ([]PointsF64Header, []map[string][]float64) {
	t.Helper()
	if len(b) < 4 {
		t.Fatalf("answer of %d bytes", len(b))
	}
	n := int(binary.LittleEndian.Uint32(b))
	if 4+n > len(b) {
		t.Fatalf("header of %d bytes in %d", n, len(b))
	}
	var heads []PointsF64Header
	if err := json.Unmarshal(b[4:4+n], &heads); err != nil {
		t.Fatalf("header: %v", err)
	}
	off := 4 + n
	for off%8 != 0 {
		if b[off] != 0 {
			t.Fatalf("padding byte %d is %d", off, b[off])
		}
		off++
	}
	out := make([]map[string][]float64, len(heads))
	for i, h := range heads {
		out[i] = map[string][]float64{}
		for _, f := range h.Fields {
			if off+8*h.N > len(b) {
				t.Fatalf("series %d's %s runs past the answer", i, f)
			}
			a := make([]float64, h.N)
			for k := range a {
				a[k] = math.Float64frombits(binary.LittleEndian.Uint64(b[off+8*k:]))
			}
			out[i][f] = a
			off += 8 * h.N
		}
	}
	if off != len(b) {
		t.Fatalf("%d bytes after the arrays", len(b)-off)
	}
	return heads, out
}

// jsonFloat is a JSON answer's number, null (NaN, for an epoch) or
// non-finite string as a float64.
func jsonFloat(t *testing.T, v any) float64 {
	switch x := v.(type) {
	case nil:
		return math.NaN()
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			t.Fatal(err)
		}
		return f
	case string:
		switch x {
		case "NaN":
			return math.NaN()
		case "Infinity":
			return math.Inf(1)
		case "-Infinity":
			return math.Inf(-1)
		}
	}
	t.Fatalf("not a number of a points answer: %#v", v)
	return 0
}

func sameFloat(a, b float64) bool {
	return a == b || math.IsNaN(a) && math.IsNaN(b)
}

// TestPointsF64 checks format=f64 against the JSON answer of the same
// query, array for array and value for value (NaN values, epochs without
// a value, bands of downsampled reads, fields), its Content-Type, its ETag
// (not the JSON answer's), the kept answer's type, and a bad format.
func TestPointsF64(t *testing.T) {
	f := newFixture(t)
	h := New(f.st, "", Options{})
	defer h.Close()
	var ids []string
	for _, k := range []string{"0/loss", "1/loss", "2/loss"} {
		ids = append(ids, strconv.FormatUint(uint64(f.series[k]), 10))
	}
	queries := []string{
		"ids=" + ids[0],
		"ids=" + strings.Join(ids, ",") + "&max_points=0",
		"ids=" + strings.Join(ids, ",") + "&max_points=7",
		"ids=" + ids[1] + "," + ids[0] + "&max_points=4&fields=steps,values,mins,maxs",
		"ids=" + ids[2] + "&max_points=5&fields=maxs,epochs",
		"ids=" + ids[0] + "&max_points=0&from_step=10&to_step=20&fields=timestamps",
		"ids=" + ids[0] + "&max_points=1",
	}
	for _, q := range queries {
		jw := get(t, h, "/api/v1/series/points?"+q)
		if jw.Code != 200 {
			t.Fatalf("%s: %d %s", q, jw.Code, jw.Body)
		}
		dec := json.NewDecoder(bytes.NewReader(jw.Body.Bytes()))
		dec.UseNumber()
		var want []map[string]any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ { // built, then kept
			bw := get(t, h, "/api/v1/series/points?"+q+"&format=f64")
			if bw.Code != 200 || bw.Header().Get("Content-Type") != PointsF64Type {
				t.Fatalf("%s (%d): %d %q %s", q, i, bw.Code, bw.Header().Get("Content-Type"), bw.Body)
			}
			if bw.Header().Get("ETag") == jw.Header().Get("ETag") {
				t.Errorf("%s: the binary answer has the JSON answer's ETag", q)
			}
			heads, got := decodePointsF64(t, bw.Body.Bytes())
			if len(heads) != len(want) {
				t.Fatalf("%s: %d series, want %d", q, len(heads), len(want))
			}
			for k, w := range want {
				if heads[k].SeriesID != w["series_id"] {
					t.Errorf("%s: series %d is %s, want %v", q, k, heads[k].SeriesID, w["series_id"])
				}
				names := []string{}
				for _, name := range pointArrays {
					if _, ok := w[name]; ok {
						names = append(names, name)
					}
				}
				if fmt.Sprint(names) != fmt.Sprint(heads[k].Fields) {
					t.Errorf("%s: series %d has %v, the JSON answer %v", q, k, heads[k].Fields, names)
				}
				for _, name := range names {
					arr := w[name].([]any)
					if len(arr) != heads[k].N {
						t.Fatalf("%s: %s has %d values, header says %d", q, name, len(arr), heads[k].N)
					}
					for j, v := range arr {
						if jf := jsonFloat(t, v); !sameFloat(jf, got[k][name][j]) {
							t.Fatalf("%s: series %d %s[%d] = %v, JSON %v", q, k, name, j, got[k][name][j], jf)
						}
					}
				}
			}
		}
	}
	// The answers carry NaN values and missing epochs, so the comparison
	// above covers both.
	all := get(t, h, "/api/v1/series/points?max_points=0&ids="+ids[0]).Body.String()
	if !strings.Contains(all, `"NaN"`) || !strings.Contains(all, "null") {
		t.Errorf("the fixture's series has no NaN value or no missing epoch: %.300s", all)
	}
	if w := get(t, h, "/api/v1/series/points?format=csv&ids="+ids[0]); w.Code != 400 || !strings.Contains(w.Body.String(), "format") {
		t.Errorf("format=csv: %d %s", w.Code, w.Body)
	}
}

// FuzzPointsF64 checks the binary form's framing on series of any length
// and values: the decoder reads back what was written.
func FuzzPointsF64(f *testing.F) {
	f.Add(uint16(3), uint64(7), true, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, n uint16, id uint64, bands bool, seed []byte) {
		n %= 300
		p := pointsOf(id, int(n), bands, seed)
		b, err := appendPointsF64(nil, p, pointsF64Heads(p, nil))
		if err != nil {
			t.Fatal(err)
		}
		heads, got := decodePointsF64(t, b)
		if len(heads) != 1 || heads[0].N != int(n) || heads[0].SeriesID != strconv.FormatUint(id, 10) {
			t.Fatalf("header %+v", heads)
		}
		for k := 0; k < int(n); k++ {
			if got[0]["steps"][k] != float64(p[0].Steps[k]) || !sameFloat(got[0]["values"][k], p[0].Values[k]) {
				t.Fatalf("point %d differs", k)
			}
		}
		if _, ok := got[0]["mins"]; ok != bands {
			t.Fatalf("bands %v, want %v", ok, bands)
		}
	})
}

// pointsOf makes one series of n points from seed's bytes (NaN and
// infinite values among them), with bands when bands is set.
func pointsOf(id uint64, n int, bands bool, seed []byte) []inspect.Points {
	p := inspect.Points{SeriesID: inspect.StringID(id), Steps: make([]int64, n), Values: make([]float64, n),
		Timestamps: make([]float64, n), Epochs: make([]int64, n)}
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -0.0, math.MaxFloat64}
	for k := 0; k < n; k++ {
		var s byte
		if len(seed) > 0 {
			s = seed[k%len(seed)]
		}
		p.Steps[k] = int64(k)*int64(s) - 5
		p.Values[k] = float64(s) / 3
		if s%7 == 0 {
			p.Values[k] = special[int(s)%len(special)]
		}
		p.Timestamps[k] = 1.7e12 + float64(k)*1.5
		p.Epochs[k] = int64(s % 3)
		if s%5 == 0 {
			p.Epochs[k] = tracking.NoEpoch
		}
	}
	if bands {
		p.Mins, p.Maxs = slices.Clone(p.Values), slices.Clone(p.Values)
	}
	return []inspect.Points{p}
}
