package expr

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

var fuzzSeeds = []string{
	"a = 1",
	"a = 1 AND b = 2 OR NOT c IS NULL",
	"x IN (1, -2, 3.5, NULL) AND y NOT IN ('a', 'it''s')",
	"`my col` >= 1e10 OR \"s\" = s",
	"ts_s < TIMESTAMP '2024-01-01 00:00:00' AND ts_ms >= TIMESTAMP(3) '2024-01-01T12:00:00.5Z'",
	"d = DATE '2024-01-01' OR d > '2024-01-01'",
	"bin = X'0aff' OR lbin < 'abc'",
	"meta.kind = 'x' AND meta.n != -9223372036854775809",
	"NOT (b) AND NOT NOT TRUE OR NULL",
	"u64 = 18446744073709551615 OR u8 < 300 OR i8 > -1e999",
	"f32 = -0.0 OR f64 != .5e-3",
	"5 <= i32 AND 'b' > s",
	"((((a = 1))))",
	"a = 'unterminated",
	"a IN ()",
	"a <> 1 == 2",
	"upper = 1 and UPPER is not null",
}

func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		e, err := Parse(src)
		if err != nil {
			if _, ok := err.(*SyntaxError); !ok {
				t.Fatalf("Parse(%q): error %T, want *SyntaxError", src, err)
			}
			_ = err.(*SyntaxError).Caret(src)
			return
		}
		s := e.String()
		e2, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(%q) ok, but its String() %q does not parse: %v", src, s, err)
		}
		if s2 := e2.String(); s2 != s {
			t.Fatalf("String() not stable: %q -> %q -> %q", src, s, s2)
		}
		_ = e.Columns()
	})
}

var (
	fuzzBatchOnce sync.Once
	fuzzBatch     arrow.RecordBatch
)

func FuzzEval(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("s IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j') OR i64 IN (1,2,3,4,5,6,7,8,9,10)"))
	f.Add([]byte("ts_ns = '2024-01-01 05:30:00' AND ts_us > TIMESTAMP(9) '1900-01-01 00:00:00.000000001'"))
	f.Fuzz(func(t *testing.T, src []byte) {
		fuzzBatchOnce.Do(func() {
			r := rand.New(rand.NewPCG(1, 2))
			fuzzBatch = buildBatch(genRows(r, 130, 0.3)).NewSlice(3, 130)
		})
		e, err := Parse(string(src))
		if err != nil {
			return
		}
		bd, err := e.Bind(testSchema)
		if err != nil {
			return
		}
		got, err := bd.Eval(fuzzBatch)
		if err != nil {
			t.Fatalf("Eval(%q): %v", src, err)
		}
		// The canonical text selects the same rows.
		e2, err := Parse(e.String())
		if err != nil {
			t.Fatal(err)
		}
		bd2, err := e2.Bind(testSchema)
		if err != nil {
			t.Fatalf("String() %q of %q does not bind: %v", e.String(), src, err)
		}
		got2, err := bd2.Eval(fuzzBatch)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(got2) {
			t.Fatalf("%q and its String() %q select different rows", src, e.String())
		}
	})
}
