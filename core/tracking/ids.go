package tracking

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/zeebo/xxh3"
)

// SeriesID identifies a metric series: the xxh3-64 hash of its run id, name
// and canonical context (see NewSeriesID). 0 is reserved.
type SeriesID uint64

// NewSeriesID returns the id of the series name of run runID with the given
// context. The hash covers runID, a NUL, name, a NUL and the context as JSON
// with sorted keys ("{}" when empty); a hash of 0 becomes 1.
func NewSeriesID(runID, name string, context map[string]any) (SeriesID, error) {
	c, err := CanonicalContext(context)
	if err != nil {
		return 0, err
	}
	return seriesID(runID, name, c), nil
}

func seriesID(runID, name, ctxJSON string) SeriesID {
	h := xxh3.New()
	h.WriteString(runID)
	h.Write([]byte{0})
	h.WriteString(name)
	h.Write([]byte{0})
	h.WriteString(ctxJSON)
	id := h.Sum64()
	if id == 0 {
		id = 1
	}
	return SeriesID(id)
}

// CanonicalContext returns context as JSON with sorted keys at every
// level, "{}" when it is empty.
func CanonicalContext(context map[string]any) (string, error) {
	if len(context) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(context) // encoding/json sorts map keys
	if err != nil {
		return "", fmt.Errorf("%w: context: %v", ErrInvalid, err)
	}
	return string(b), nil
}

// NewRunID returns a fresh run id: a UUIDv7 (48-bit millisecond time,
// random bits) as 32 lowercase hex digits, so ids sort by creation time.
func NewRunID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	ms := uint64(time.Now().UnixMilli())
	for i := 0; i < 6; i++ {
		u[i] = byte(ms >> (40 - 8*i))
	}
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	return hex.EncodeToString(u[:])
}

// flatten appends the leaves of v under prefix to out: nested objects
// become dotted keys; arrays and scalars are leaves.
func flatten(prefix string, v any, out map[string]any) {
	m, ok := v.(map[string]any)
	if !ok || (len(m) == 0 && prefix != "") {
		out[prefix] = v
		return
	}
	for k, sub := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		flatten(key, sub, out)
	}
}

// ParamValue is one parameter as stored: the JSON of the value and its
// scalar repeated by type (at most one of Num, Text, Flag is set).
type ParamValue struct {
	Value json.RawMessage `json:"value"`
	Num   *float64        `json:"num,omitempty"`
	Text  *string         `json:"text,omitempty"`
	Flag  *bool           `json:"flag,omitempty"`
}

// Any decodes the JSON value (numbers as float64).
func (p ParamValue) Any() any {
	var v any
	_ = json.Unmarshal(p.Value, &v)
	return v
}

func makeParam(v any) (ParamValue, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return ParamValue{}, fmt.Errorf("%w: parameter value: %v", ErrInvalid, err)
	}
	p := ParamValue{Value: b}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return ParamValue{}, fmt.Errorf("%w: parameter value: %v", ErrInvalid, err)
	}
	switch t := x.(type) {
	case float64:
		p.Num = &t
	case string:
		p.Text = &t
	case bool:
		p.Flag = &t
	}
	// Non-finite floats cannot be JSON; json.Marshal already refused them.
	_ = math.NaN
	return p, nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func isMarkRun(id string) bool { return strings.HasPrefix(id, walPrefix) }

// Params is a parameters object as SetParams and RunSpec take it. Read
// from JSON (its UnmarshalJSON) it keeps each number exactly as written,
// as a json.Number, instead of rounding it to a float64 as a plain
// map[string]any would: an integer above 2^53 (a seed, a hash) is stored
// as given. The num column still holds the number's float64 for filters.
type Params map[string]any

// UnmarshalJSON implements json.Unmarshaler.
func (p *Params) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return err
	}
	*p = m
	return nil
}
