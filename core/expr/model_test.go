package expr

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

var (
	flagSeed  = flag.Uint64("expr.seed", 0, "seed for TestModel (0: time-based)")
	flagIters = flag.Int("expr.iters", 300, "batches TestModel evaluates")
)

// tri is a three-valued truth value for the reference evaluator.
type tri int8

const (
	tUnknown tri = -1
	tFalse   tri = 0
	tTrue    tri = 1
)

func triOf(b bool) tri {
	if b {
		return tTrue
	}
	return tFalse
}

func (a tri) not() tri {
	if a == tUnknown {
		return a
	}
	return 1 - a
}

// gnode is a generated expression: the model's own tree, rendered to text
// for Parse and evaluated row by row over Go values by ref.
type gnode struct {
	kind  kind
	kids  []*gnode
	col   string // column path as written, e.g. "meta.kind"
	op    cmpOp
	lits  []string // literal texts
	neg   bool
	value tri
}

type gen struct {
	r *rand.Rand
}

var modelCols = []string{"b", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64",
	"s", "ls", "bin", "lbin", "ts_s", "ts_ms", "ts_us", "ts_ns", "d", "meta.kind", "meta.n", "`my col`", "upper"}

func colType(col string) arrow.DataType {
	switch col {
	case "meta.kind":
		return arrow.BinaryTypes.String
	case "meta.n", "`my col`", "upper":
		return arrow.PrimitiveTypes.Int32
	}
	return testSchema.Field(colIndex(col)).Type
}

var (
	intLits = []string{"0", "1", "-1", "2", "7", "100", "127", "-128", "255", "300", "-129", "128", "256",
		"65535", "65536", "-32769", "2147483647", "2147483648", "-2147483649", "4294967295", "4294967296",
		"9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
		"18446744073709551615", "0.5", "-0.5", "127.5", "255.5", "1e19", "-1e19", "2.5", "300.25",
		"1.8446744073709552e19", "-0.0", "1e999", "-1e999"}
	floatLits = []string{"0", "-0.0", "1", "-1", "0.1", "1.5", "-2.5", "1e300", "1e999", "-1e999", "3", "100", "16777217"}
)

func (g *gen) pick(xs []string) string { return xs[g.r.IntN(len(xs))] }

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func (g *gen) timeText(zonedOK bool) string {
	t := time.Unix(poolSecs[g.r.IntN(len(poolSecs))]+int64(g.r.IntN(3)-1), poolFracs[g.r.IntN(len(poolFracs))]).UTC()
	switch g.r.IntN(6) {
	case 0:
		return "TIMESTAMP " + quote(t.Format("2006-01-02 15:04:05.999999999"))
	case 1:
		p := []int{0, 3, 6, 9}[g.r.IntN(4)]
		return fmt.Sprintf("TIMESTAMP(%d) %s", p, quote(t.Format("2006-01-02 15:04:05.999999999")))
	case 2:
		return quote(t.Format(time.RFC3339Nano))
	case 3:
		return quote(t.Format("2006-01-02"))
	case 4:
		return "DATE " + quote(t.Format("2006-01-02"))
	}
	return quote(t.Format("2006-01-02T15:04:05.999999999"))
}

func (g *gen) literal(col string) string {
	if g.r.IntN(20) == 0 {
		return "NULL"
	}
	dt := colType(col)
	switch dt.ID() {
	case arrow.BOOL:
		return g.pick([]string{"TRUE", "FALSE", "true", "False"})
	case arrow.FLOAT32, arrow.FLOAT64:
		return g.pick(floatLits)
	case arrow.STRING, arrow.LARGE_STRING:
		return quote(poolStrings[g.r.IntN(len(poolStrings))])
	case arrow.BINARY, arrow.LARGE_BINARY:
		s := poolStrings[g.r.IntN(len(poolStrings))]
		if g.r.IntN(2) == 0 {
			return "X'" + hex.EncodeToString([]byte(s)) + "'"
		}
		return quote(s)
	case arrow.TIMESTAMP, arrow.DATE32:
		return g.timeText(true)
	}
	return g.pick(intLits)
}

func (g *gen) expr(depth int) *gnode {
	k := g.r.IntN(10)
	if depth <= 0 {
		k = 4 + g.r.IntN(6)
	}
	switch {
	case k < 2:
		n := &gnode{kind: kAnd}
		if k == 1 {
			n.kind = kOr
		}
		for range 2 + g.r.IntN(2) {
			n.kids = append(n.kids, g.expr(depth-1))
		}
		return n
	case k < 4:
		return &gnode{kind: kNot, kids: []*gnode{g.expr(depth - 1)}}
	}
	col := modelCols[g.r.IntN(len(modelCols))]
	switch g.r.IntN(12) {
	case 0:
		return &gnode{kind: kIsNull, col: col, neg: g.r.IntN(2) == 0}
	case 1:
		return &gnode{kind: kConst, value: tri(g.r.IntN(3) - 1)}
	case 2:
		return &gnode{kind: kCol, col: "b"}
	case 3, 4:
		n := &gnode{kind: kIn, col: col, neg: g.r.IntN(2) == 0}
		for range 1 + g.r.IntN(12) {
			n.lits = append(n.lits, g.literal(col))
		}
		return n
	}
	return &gnode{kind: kCmp, col: col, op: cmpOp(g.r.IntN(6)), lits: []string{g.literal(col)}}
}

func (n *gnode) text(r *rand.Rand) string {
	switch n.kind {
	case kAnd, kOr:
		sep := " AND "
		if n.kind == kOr {
			sep = " or "
		}
		var parts []string
		for _, k := range n.kids {
			parts = append(parts, "("+k.text(r)+")")
		}
		return strings.Join(parts, sep)
	case kNot:
		return "NOT (" + n.kids[0].text(r) + ")"
	case kIsNull:
		if n.neg {
			return n.col + " IS NOT NULL"
		}
		return n.col + " is null"
	case kConst:
		return map[tri]string{tTrue: "TRUE", tFalse: "FALSE", tUnknown: "NULL"}[n.value]
	case kCol:
		return n.col
	case kIn:
		kw := " IN ("
		if n.neg {
			kw = " NOT IN ("
		}
		return n.col + kw + strings.Join(n.lits, ", ") + ")"
	}
	ops := []string{"=", "!=", "<", "<=", ">", ">="}
	if r.IntN(4) == 0 { // literal first
		return n.lits[0] + " " + ops[n.op.flip()] + " " + n.col
	}
	op := ops[n.op]
	if n.op == opNe && r.IntN(2) == 0 {
		op = "<>"
	}
	return n.col + " " + op + " " + n.lits[0]
}

// cell returns the Go value of a column path in a row, nil for null.
func cell(row rowVals, col string) any {
	switch col {
	case "meta.kind", "meta.n":
		m := row[colIndex("meta")]
		if m == nil {
			return nil
		}
		if col == "meta.kind" {
			return m.([2]any)[0]
		}
		return m.([2]any)[1]
	case "`my col`":
		return row[colIndex("my col")]
	case "upper":
		return row[colIndex("Upper")]
	}
	return row[colIndex(col)]
}

func (n *gnode) ref(row rowVals) tri {
	switch n.kind {
	case kAnd:
		return andFix(n, row)
	case kOr:
		return orFix(n, row)
	case kNot:
		return n.kids[0].ref(row).not()
	case kConst:
		return n.value
	case kIsNull:
		return triOf((cell(row, n.col) == nil) != n.neg)
	case kCol:
		v := cell(row, n.col)
		if v == nil {
			return tUnknown
		}
		return triOf(v.(bool))
	case kIn:
		out := tFalse
		for _, l := range n.lits {
			switch refCmp(n.col, cell(row, n.col), opEq, l) {
			case tTrue:
				out = tTrue
			case tUnknown:
				if out == tFalse {
					out = tUnknown
				}
			}
		}
		if n.neg {
			return out.not()
		}
		return out
	}
	return refCmp(n.col, cell(row, n.col), n.op, n.lits[0])
}

func andFix(n *gnode, row rowVals) tri {
	out := tTrue
	for _, k := range n.kids {
		switch k.ref(row) {
		case tFalse:
			return tFalse
		case tUnknown:
			out = tUnknown
		}
	}
	return out
}

func orFix(n *gnode, row rowVals) tri {
	out := tFalse
	for _, k := range n.kids {
		switch k.ref(row) {
		case tTrue:
			return tTrue
		case tUnknown:
			out = tUnknown
		}
	}
	return out
}

func opHolds(op cmpOp, c int) bool {
	switch op {
	case opEq:
		return c == 0
	case opNe:
		return c != 0
	case opLt:
		return c < 0
	case opLe:
		return c <= 0
	case opGt:
		return c > 0
	}
	return c >= 0
}

// refTotal is IEEE totalOrder written out case by case.
func refTotal(a, b float64) int {
	rank := func(x float64) int {
		if math.IsNaN(x) {
			if math.Signbit(x) {
				return -1
			}
			return 1
		}
		return 0
	}
	ra, rb := rank(a), rank(b)
	switch {
	case ra != rb:
		return ra - rb
	case ra != 0:
		return 0
	case a < b:
		return -1
	case a > b:
		return 1
	case math.Signbit(a) == math.Signbit(b):
		return 0
	case math.Signbit(a):
		return -1
	}
	return 1
}

// refTime reads a literal compared with a timestamp or date column.
func refTime(lit string, loc *time.Location) time.Time {
	prec := -1
	switch {
	case strings.HasPrefix(lit, "DATE "):
		t, err := time.Parse("'2006-01-02'", lit[5:])
		if err != nil {
			panic(err)
		}
		return t
	case strings.HasPrefix(lit, "TIMESTAMP("):
		prec = int(lit[10] - '0')
		lit = lit[13:]
	case strings.HasPrefix(lit, "TIMESTAMP "):
		prec = 6
		lit = lit[10:]
	}
	text := strings.Trim(lit, "'")
	var t time.Time
	var err error
	switch {
	case strings.HasSuffix(text, "Z"):
		t, err = time.Parse(time.RFC3339Nano, text)
	case len(text) == 10:
		t, err = time.ParseInLocation("2006-01-02", text, loc)
	case strings.Contains(text, "T"):
		t, err = time.ParseInLocation("2006-01-02T15:04:05.999999999", text, loc)
	default:
		t, err = time.ParseInLocation("2006-01-02 15:04:05.999999999", text, loc)
	}
	if err != nil {
		panic(err)
	}
	if prec >= 0 {
		t = t.Truncate(time.Duration(math.Pow10(9 - prec)))
	}
	return t
}

func refCmp(col string, v any, op cmpOp, lit string) tri {
	if v == nil || lit == "NULL" {
		return tUnknown
	}
	dt := colType(col)
	switch dt.ID() {
	case arrow.BOOL:
		a, b := 0, 0
		if v.(bool) {
			a = 1
		}
		if strings.EqualFold(lit, "TRUE") {
			b = 1
		}
		return triOf(opHolds(op, a-b))
	case arrow.FLOAT32, arrow.FLOAT64:
		f, _ := strconv.ParseFloat(lit, 64)
		if dt.ID() == arrow.FLOAT32 {
			bf, _, _ := big.ParseFloat(lit, 10, 200, big.ToNearestEven)
			if bf != nil && !strings.Contains(lit, "e999") {
				f32, _ := bf.Float32()
				f = float64(f32)
			} else {
				f = float64(float32(f))
			}
		}
		return triOf(opHolds(op, refTotal(v.(float64), f)))
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		var b []byte
		if strings.HasPrefix(lit, "X'") {
			b, _ = hex.DecodeString(lit[2 : len(lit)-1])
		} else {
			b = []byte(strings.ReplaceAll(lit[1:len(lit)-1], "''", "'"))
		}
		return triOf(opHolds(op, bytes.Compare([]byte(v.(string)), b)))
	case arrow.TIMESTAMP:
		loc := time.UTC
		if dt.(*arrow.TimestampType).TimeZone == "+05:30" {
			loc = time.FixedZone("", 19800)
		}
		return triOf(opHolds(op, v.(time.Time).Compare(refTime(lit, loc))))
	case arrow.DATE32:
		day := time.Unix(int64(v.(int32))*86400, 0)
		return triOf(opHolds(op, day.Compare(refTime(lit, time.UTC))))
	}
	// Integers: compare exactly as rationals.
	var a big.Rat
	switch x := v.(type) {
	case int64:
		a.SetInt64(x)
	case uint64:
		a.SetUint64(x)
	}
	if strings.Contains(lit, "e999") {
		return triOf(opHolds(op, map[bool]int{true: 1, false: -1}[lit[0] == '-']))
	}
	var b big.Rat
	if _, ok := b.SetString(lit); !ok {
		panic("bad literal " + lit)
	}
	return triOf(opHolds(op, a.Cmp(&b)))
}

func TestModel(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -expr.seed=%d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	g := &gen{r: r}
	var dst []bool
	for it := 0; it < *flagIters; it++ {
		n := r.IntN(300)
		all := genRows(r, n+70, r.Float64()*0.5)
		rec := buildBatch(all)
		off := r.IntN(70)
		sub := rec.NewSlice(int64(off), int64(off+n))
		rows := all[off : off+n]
		for range 10 {
			gn := g.expr(3)
			src := gn.text(r)
			e, err := Parse(src)
			if err != nil {
				t.Fatalf("seed %d: Parse(%q): %v", seed, src, err)
			}
			bd, err := e.Bind(testSchema)
			if err != nil {
				t.Fatalf("seed %d: Bind(%q): %v", seed, src, err)
			}
			dst, err = bd.Filter(sub, dst)
			if err != nil {
				t.Fatalf("seed %d: Eval(%q): %v", seed, src, err)
			}
			if len(dst) != n {
				t.Fatalf("got %d results for %d rows", len(dst), n)
			}
			for i, row := range rows {
				want := gn.ref(row) == tTrue
				if dst[i] != want {
					t.Fatalf("seed %d: %q (canonical %q) row %d: got %v, want %v\nrow: %#v", seed, src, e.String(), i, dst[i], want, row)
				}
			}
		}
		sub.Release()
		rec.Release()
	}
}
