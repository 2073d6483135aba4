package lancefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/store"
)

func TestSpanClass(t *testing.T) {
	seen := map[int]int{}
	for n := minPooledSpan; n < 1<<24; n += 1 + n/997 {
		c, size := spanClass(n)
		if c < 0 || size < n || size > n+n/4+1 {
			t.Fatalf("spanClass(%d) = %d, %d", n, c, size)
		}
		if s, ok := seen[c]; ok && s != size {
			t.Fatalf("class %d holds sizes %d and %d", c, s, size)
		}
		seen[c] = size
		if c2, s2 := spanClass(size); c2 != c || s2 != size {
			t.Fatalf("a buffer of class %d (%d bytes) goes back to class %d (%d)", c, size, c2, s2)
		}
	}
	if c, _ := spanClass(minPooledSpan - 1); c >= 0 {
		t.Fatal("small spans are pooled")
	}
}

// TestRecycledPagesInterleaved reads one file with two readers in turn,
// keeping every array: page buffers one reader recycles are reused by the
// other's next reads, so a decoder that kept referring to a recycled
// buffer would see its arrays change. Both reads must equal what was
// written.
func TestRecycledPagesInterleaved(t *testing.T) {
	seed := *writerSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -writer.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ctx := context.Background()
	for it := range 8 {
		ncol := 1 + rng.IntN(4)
		fields := make([]arrow.Field, ncol)
		for i := range fields {
			fields[i] = arrow.Field{Name: fmt.Sprintf("c%d", i), Type: randomType(rng, 2), Nullable: rng.IntN(3) > 0}
		}
		as := arrow.NewSchema(fields, nil)
		n := 20000 + rng.IntN(60000)
		cols := make([]arrow.Array, ncol)
		for i, f := range fields {
			np := []float64{0, 0.1, 0.9}[rng.IntN(3)]
			if !f.Nullable {
				np = 0
			}
			cols[i] = randomArray(rng, f.Type, n, np, 0.01)
		}
		rec := array.NewRecordBatch(as, cols, int64(n))
		s := mustSchema(t, as)
		file := writeFile(t, s, WriterOptions{MaxPageBytes: []int{0, 64 << 10, 256 << 10}[rng.IntN(3)]}, rec)
		st := store.NewMemory()
		if err := st.Put(ctx, "f.lance", file); err != nil {
			t.Fatal(err)
		}
		f, err := Open(ctx, st, "f.lance", int64(len(file)))
		if err != nil {
			t.Fatal(err)
		}
		columnOf := map[int32]int{}
		col := 0
		s.Walk(func(fl *Field) {
			if fl.IsLeaf() {
				columnOf[fl.ID] = col
				col++
			}
		})
		var readers [2]*Reader
		var parts [2][][]arrow.Array
		for k := range readers {
			if readers[k], err = f.NewReader(s.Fields, columnOf, ReadOptions{Readahead: 1}); err != nil {
				t.Fatal(err)
			}
			parts[k] = make([][]arrow.Array, ncol)
		}
		done := [2]bool{}
		batch := 1 + rng.IntN(5000)
		for !done[0] || !done[1] {
			for k, r := range readers {
				if done[k] {
					continue
				}
				arrs, err := r.Next(ctx, batch)
				if errors.Is(err, io.EOF) {
					done[k] = true
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				for i, a := range arrs {
					parts[k][i] = append(parts[k][i], a)
				}
			}
		}
		for k := range readers {
			for i := range ncol {
				got, err := array.Concatenate(parts[k][i], memory.DefaultAllocator)
				if err != nil {
					t.Fatal(err)
				}
				if !array.Equal(cols[i], got) {
					t.Fatalf("file %d, reader %d, column %s (%s): the values changed", it, k, fields[i].Name, fields[i].Type)
				}
			}
		}
	}
}
