package lance

import (
	"errors"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

func TestTake(t *testing.T) {
	st := loadFixture(t, "default")
	// Version 4: fragment 0 holds seq 0..99 (10..19 deleted), fragment 1
	// holds 100..199 (150 deleted).
	d, err := Open(t.Context(), st, "kv.lance", OpenOptions{Version: 4})
	if err != nil {
		t.Fatal(err)
	}
	addr := func(frag, off uint64) uint64 { return frag<<32 | off }
	addrs := []uint64{addr(1, 99), addr(0, 0), addr(0, 1), addr(0, 2), addr(1, 49), addr(0, 0), addr(1, 51), addr(0, 50), addr(0, 9)}
	rec, err := d.Take(t.Context(), addrs, []string{"seq", "op"})
	if err != nil {
		skipIfNotDecoding(t, err)
		t.Fatal(err)
	}
	defer rec.Release()
	if rec.NumRows() != int64(len(addrs)) || rec.NumCols() != 2 {
		t.Fatalf("got %d rows %d cols", rec.NumRows(), rec.NumCols())
	}
	got := rec.Column(0).(*array.Uint64).Uint64Values()
	want := []uint64{199, 0, 1, 2, 149, 0, 151, 50, 9}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}

	empty, err := d.Take(t.Context(), nil, nil)
	if err != nil || empty.NumRows() != 0 || empty.NumCols() != 4 {
		t.Fatal(empty, err)
	}
	empty.Release()

	for _, tc := range []struct {
		addrs  []uint64
		reason string
	}{
		{[]uint64{addr(0, 1), addr(7, 0)}, "no such fragment"},
		{[]uint64{addr(0, 100)}, "offset out of range (fragment has 100 rows)"},
		{[]uint64{addr(0, 1), addr(0, 15)}, "row deleted"},
		{[]uint64{addr(1, 50)}, "row deleted"},
	} {
		_, err := d.Take(t.Context(), tc.addrs, nil)
		var re *RowAddressError
		if !errors.Is(err, ErrInvalidRowAddress) || !errors.As(err, &re) || re.Reason != tc.reason {
			t.Errorf("%v: got %v, want %q", tc.addrs, err, tc.reason)
		}
	}
}

// Take agrees with Scan on every live row of the bigdel datasets.
func TestTakeMatchesScan(t *testing.T) {
	st := loadFixture(t, "bigdel")
	d, err := Open(t.Context(), st, "t.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []uint64
	var want []float64
	for i := 19999; i >= 0; i -= 3 {
		if i%2 == 1 {
			addrs = append(addrs, uint64(i))
			want = append(want, float64(i))
		}
	}
	rec, err := d.Take(t.Context(), addrs, nil)
	if err != nil {
		skipIfNotDecoding(t, err)
		t.Fatal(err)
	}
	defer rec.Release()
	if got := rec.Column(0).(*array.Float64).Float64Values(); !slices.Equal(got, want) {
		t.Fatalf("got %d values, first %v", len(got), got[:5])
	}
}
