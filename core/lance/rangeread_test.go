package lance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/store"
)

// TestReadRangesChunks reads random sorted ranges of fragments written
// with random page breaks, some rows deleted, and checks that the chunks
// hold exactly the rows ReadRanges returns, in order, and that no chunk
// crosses a page break.
func TestReadRangesChunks(t *testing.T) {
	ctx := context.Background()
	for it := range 20 {
		rng := rand.New(rand.NewPCG(uint64(it), 9))
		const n = 30000
		var breaks []uint64
		for b := uint64(rng.IntN(3000)); b < n; b += 1 + uint64(rng.IntN(8000)) {
			if b > 0 {
				breaks = append(breaks, b)
			}
		}
		st := store.NewMemory()
		d := mustCreate(t, st, "t.lance", 0, n, WriteOptions{PageBreaks: breaks, MaxRowsPerFile: []int{0, 7000, 20000}[rng.IntN(3)]})
		if rng.IntN(2) == 0 {
			var err error
			a := rng.IntN(n)
			if d, _, err = d.Delete(ctx, fmt.Sprintf("(id >= %d AND id < %d) OR id = %d OR id = %d", a, a+rng.IntN(5000), rng.IntN(n), rng.IntN(n))); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range d.Fragments() {
			var ranges []RowRange
			for pos := uint64(rng.IntN(100)); pos < f.PhysicalRows; {
				end := min(f.PhysicalRows, pos+uint64(rng.IntN(9000)))
				ranges = append(ranges, RowRange{Start: pos, End: end})
				pos = end + uint64(rng.IntN(3000))
			}
			cols := [][]string{nil, {"id"}, {"label", "id"}}[rng.IntN(3)]
			want, err := d.ReadRanges(ctx, f.ID, ranges, cols)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := d.ReadRangesChunks(ctx, f.ID, ranges, cols)
			if err != nil {
				t.Fatal(err)
			}
			var parts [][]arrow.Array
			for c := range want.NumCols() {
				parts = append(parts, nil)
				for _, ch := range chunks {
					if ch.NumRows() == 0 {
						t.Fatal("an empty chunk")
					}
					parts[c] = append(parts[c], ch.Column(int(c)))
				}
				var got arrow.Array
				if len(parts[c]) == 0 {
					if want.NumRows() != 0 {
						t.Fatalf("no chunk for %d rows", want.NumRows())
					}
					continue
				}
				if got, err = array.Concatenate(parts[c], memory.DefaultAllocator); err != nil {
					t.Fatal(err)
				}
				if !array.Equal(got, want.Column(int(c))) {
					t.Fatalf("iteration %d, fragment %d, column %d: chunks differ from ReadRanges", it, f.ID, c)
				}
			}
			// No chunk holds a row of both sides of a break.
			idc := want.Schema().FieldIndices("id")[0]
			for _, ch := range chunks {
				ids := ch.Column(idc).(*array.Int64).Int64Values()
				lo, hi := uint64(ids[0]), uint64(ids[len(ids)-1])
				for _, b := range breaks {
					if lo < b && b <= hi {
						t.Fatalf("iteration %d: a chunk of rows %d..%d crosses the page break at %d", it, lo, hi, b)
					}
				}
			}
			want.Release()
			for _, ch := range chunks {
				ch.Release()
			}
		}
	}
}
