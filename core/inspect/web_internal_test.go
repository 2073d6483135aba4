package inspect

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

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

// referencePointsJSON is AppendJSON written plainly, every number
// formatted on its own: the bytes the copying encoder must reproduce.
func referencePointsJSON(dst []byte, p *Points) []byte {
	floats := func(dst []byte, fs []float64) []byte {
		dst = append(dst, '[')
		for i, f := range fs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendFloat(dst, f)
		}
		return append(dst, ']')
	}
	dst = append(dst, `{"series_id":"`...)
	dst = strconv.AppendUint(dst, uint64(p.SeriesID), 10)
	dst = append(dst, `","steps":[`...)
	for i, s := range p.Steps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, s, 10)
	}
	dst = floats(append(dst, `],"values":`...), p.Values)
	dst = append(dst, `,"timestamps":[`...)
	for i, ms := range p.Timestamps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendFloat(dst, ms) // appendMillis writes the same text
	}
	dst = append(dst, `],"epochs":[`...)
	for i, e := range p.Epochs {
		if i > 0 {
			dst = append(dst, ',')
		}
		if e == tracking.NoEpoch {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendInt(dst, e, 10)
		}
	}
	dst = append(dst, ']')
	if p.Mins != nil {
		dst = floats(append(dst, `,"mins":`...), p.Mins)
		dst = floats(append(dst, `,"maxs":`...), p.Maxs)
	}
	return append(dst, '}')
}

// randomPoints returns n points whose bands repeat values and each other
// as downsampled reads' do, drawn from a pool holding the floats whose
// texts are easiest to confuse (0 and -0, NaN, infinities, exponents).
func randomPoints(rng *rand.Rand, n int, bands bool) *Points {
	pool := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e21, 1e-7, 5e-324, 0.1, 1.0 / 3, -2.5e+300}
	val := func() float64 {
		switch rng.IntN(3) {
		case 0:
			return pool[rng.IntN(len(pool))]
		case 1:
			return math.Float64frombits(rng.Uint64())
		}
		return rng.NormFloat64()
	}
	p := &Points{SeriesID: StringID(rng.Uint64())}
	for i := 0; i < n; i++ {
		p.Steps = append(p.Steps, int64(i)*3)
		p.Values = append(p.Values, val())
		p.Timestamps = append(p.Timestamps, float64(1767225600000000+int64(i)*1500)/1000)
		e := int64(i / 7)
		if rng.IntN(4) == 0 {
			e = tracking.NoEpoch
		}
		p.Epochs = append(p.Epochs, e)
	}
	if bands {
		for i := 0; i < n; {
			// A bucket of 1–3 kept points sharing one band, which often
			// is (the bits of) one of their values.
			k := min(n, i+1+rng.IntN(3))
			lo, hi := val(), val()
			if rng.IntN(2) == 0 {
				lo = p.Values[i]
			}
			if rng.IntN(2) == 0 {
				hi = p.Values[k-1]
			}
			for j := i; j < k; j++ {
				p.Mins, p.Maxs = append(p.Mins, lo), append(p.Maxs, hi)
			}
			i = k
		}
	}
	return p
}

func TestPointsJSONMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for iter := 0; iter < 3000; iter++ {
		p := randomPoints(rng, rng.IntN(40), iter%3 != 0)
		got, want := p.AppendJSON([]byte("prefix")), referencePointsJSON([]byte("prefix"), p)
		if string(got) != string(want) {
			t.Fatalf("points %d:\n%s\nwant\n%s", iter, got, want)
		}
		if !json.Valid(got[len("prefix"):]) && !hasNonFinite(p) {
			t.Fatalf("points %d: not JSON: %s", iter, got)
		}
	}
}

func hasNonFinite(p *Points) bool {
	for _, fs := range [][]float64{p.Values, p.Mins, p.Maxs} {
		for _, f := range fs {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return true
			}
		}
	}
	return false
}

// TestPointsJSONAllocs checks that encoding 1,000 points with bands into
// a buffer JSONSize sized allocates nothing.
func TestPointsJSONAllocs(t *testing.T) {
	p := randomPoints(rand.New(rand.NewPCG(9, 10)), 1000, true)
	for i := range p.Values { // finite numbers of every day lengths
		p.Values[i], p.Mins[i], p.Maxs[i] = math.Sin(float64(i)), math.Sin(float64(i))-1, math.Sin(float64(i))+1
	}
	buf := make([]byte, 0, p.JSONSize())
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendJSON(buf[:0]) }); n != 0 {
		t.Errorf("AppendJSON allocates %v times per call", n)
	}
}

func BenchmarkPointsJSON(b *testing.B) {
	m := tracking.MetricData{}
	for i := 0; i < 100_000; i++ {
		m.Steps = append(m.Steps, int64(i))
		m.Values = append(m.Values, math.Sin(float64(i)/1000)+float64(i%7)/10)
	}
	// A downsampled series as ReadMany returns it, with its bands.
	p := &Points{SeriesID: 1 << 60}
	step := len(m.Steps) / 500
	var bm tracking.MetricData
	for from := 0; from < len(m.Steps); from += step {
		seg := m.Values[from:min(from+step, len(m.Values))]
		lo, hi := slices.Index(seg, slices.Min(seg)), slices.Index(seg, slices.Max(seg))
		for _, k := range []int{min(lo, hi), max(lo, hi)} {
			bm.Steps, bm.Values = append(bm.Steps, m.Steps[from+k]), append(bm.Values, seg[k])
			bm.Epochs, bm.Timestamps = append(bm.Epochs, 0), append(bm.Timestamps, time.UnixMicro(1767225600000000+int64(from+k)*1000))
		}
		bm.Buckets = append(bm.Buckets, tracking.Bucket{FirstStep: m.Steps[from], LastStep: m.Steps[min(from+step, len(m.Steps))-1], Points: len(seg)})
	}
	p.Steps, p.Values, p.Epochs = bm.Steps, bm.Values, bm.Epochs
	for _, ts := range bm.Timestamps {
		p.Timestamps = append(p.Timestamps, float64(ts.UnixMicro())/1000)
	}
	p.Mins, p.Maxs = Bands(bm)
	buf := make([]byte, 0, p.JSONSize())
	b.Run("copying", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = p.AppendJSON(buf[:0])
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = referencePointsJSON(buf[:0], p)
		}
		b.SetBytes(int64(len(buf)))
	})
}

// PointColumns lays out steps, values, timestamps in ms and epochs (NaN
// for none) one column after another.
func TestPointColumns(t *testing.T) {
	m := tracking.MetricData{Steps: []int64{3, 9}, Values: []float64{0.5, math.Inf(-1)},
		Timestamps: []time.Time{time.UnixMicro(1_500), time.UnixMicro(2_000_250)}, Epochs: []int64{tracking.NoEpoch, 4}}
	got := make([]float64, 8)
	PointColumns(got, m)
	want := []float64{3, 9, 0.5, math.Inf(-1), 1.5, 2000.25, math.NaN(), 4}
	for i := range want {
		if got[i] != want[i] && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Fatalf("column value %d = %v, want %v (all %v)", i, got[i], want[i], got)
		}
	}
}
