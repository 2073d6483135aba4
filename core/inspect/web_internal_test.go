package inspect

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/kv0/kv0/core/jsonl"
	"github.com/kv0/kv0/core/tracking"
)

// TestAppendFloatMatchesJSONL checks the fast float path of the points
// against core/jsonl's encoding on random and edge values.
func TestAppendFloatMatchesJSONL(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 1e21, 1e20, 1e-7, 1e-6, 0.000001, 5e-324, math.MaxFloat64, 123456789012345678,
		1.5e-10, -2.5e+300, math.NaN(), math.Inf(1), math.Inf(-1), 0.1, 1.0 / 3}
	for i := 0; i < 100000; i++ {
		vals = append(vals, math.Float64frombits(rng.Uint64()), rng.NormFloat64()*math.Pow(10, float64(rng.IntN(60)-30)))
	}
	for _, v := range vals {
		if got, want := string(appendFloat(nil, v)), string(jsonl.AppendFloat(nil, v, 64)); got != want {
			t.Fatalf("%v (%#x): %s, jsonl writes %s", v, math.Float64bits(v), got, want)
		}
	}
}

// TestWebViewsMirrorTheCLI checks that the JavaScript views have the JSON
// fields of the CLI's, in the same order, so only the ids' type differs.
func TestWebViewsMirrorTheCLI(t *testing.T) {
	var names func(v any) []string
	names = func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			if f.Anonymous {
				out = append(out, names(reflect.New(f.Type).Elem().Interface())...)
				continue
			}
			out = append(out, f.Tag.Get("json"))
		}
		return out
	}
	for _, c := range []struct{ cli, web any }{{Series{}, WebSeries{}}, {tracking.SeriesStats{}, WebStats{}}} {
		if a, b := names(c.cli), names(c.web); !reflect.DeepEqual(a, b) {
			t.Errorf("%T has JSON fields %q, %T has %q", c.cli, a, c.web, b)
		}
	}
	var id StringID
	if b, _ := json.Marshal(StringID(math.MaxUint64)); string(b) != `"18446744073709551615"` {
		t.Errorf("StringID marshals to %s", b)
	}
	if err := json.Unmarshal([]byte(`"18446744073709551615"`), &id); err != nil || id != math.MaxUint64 {
		t.Errorf("StringID unmarshal: %v %d", err, id)
	}
	for _, bad := range []string{`18`, `"-1"`, `"x"`, `"18446744073709551616"`} {
		if err := json.Unmarshal([]byte(bad), &id); err == nil {
			t.Errorf("StringID accepts %s", bad)
		}
	}
}

// TestAppendMillis checks the timestamps' fast path against the float
// encoding, around its bound and on random times.
func TestAppendMillis(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	us := []int64{0, 1, 999, 1000, 1001, 1500, 1767225600000000, 1767225600000001, 1767225600123450, 1<<41*1000 - 1, 1 << 41 * 1000, -1, -1500}
	for i := 0; i < 200000; i++ {
		us = append(us, rng.Int64N(1<<44*1000), rng.Int64N(3e15))
	}
	for _, u := range us {
		ms := float64(u) / 1000
		if got, want := string(appendMillis(nil, ms)), string(appendFloat(nil, ms)); got != want {
			t.Fatalf("%d µs: %s, want %s", u, got, want)
		}
	}
	for _, ms := range []float64{math.NaN(), math.Inf(1), 0.0001, 1.23456789, -0.5} {
		if got, want := string(appendMillis(nil, ms)), string(jsonl.AppendFloat(nil, ms, 64)); got != want {
			t.Fatalf("%v: %s, want %s", ms, got, want)
		}
	}
}
