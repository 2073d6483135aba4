package lancefile

import (
	"errors"
	"testing"
)

func TestCheckUTF8(t *testing.T) {
	for _, tc := range []struct {
		name string
		offs []int64
		data string
		ok   bool
	}{
		{"empty", []int64{0}, "", true},
		{"ascii", []int64{0, 1, 3, 3}, "abc", true},
		{"multibyte", []int64{0, 2, 5}, "é€", true},
		{"invalid byte", []int64{0, 1, 2}, "a\xff", false},
		// Valid as a whole, but the boundary splits "é" in two.
		{"split rune", []int64{0, 1, 2}, "\xc3\xa9", false},
		{"offsets backwards", []int64{0, 2, 1}, "a\xffb", false},
	} {
		err := checkUTF8(tc.offs, 0, []byte(tc.data))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v is not ErrCorrupt", tc.name, err)
		}
	}
	// A base: offsets relative to the start of a larger buffer.
	if err := checkUTF8([]uint64{10, 11, 13}, 10, []byte("aé")); err != nil {
		t.Fatal(err)
	}
}
