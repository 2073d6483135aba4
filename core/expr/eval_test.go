package expr

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func colIndex(name string) int {
	idx := testSchema.FieldIndices(name)
	if len(idx) != 1 {
		panic("no column " + name)
	}
	return idx[0]
}

// handRows builds the batch of TestEvalHand: row 2 is null in every column.
func handRows() []rowVals {
	ts := func(s string) time.Time {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			panic(err)
		}
		return t
	}
	negZero := math.Copysign(0, -1)
	cols := map[string][5]any{
		"b":      {true, false, nil, true, false},
		"i8":     {int64(-128), int64(127), nil, int64(0), int64(5)},
		"i16":    {int64(1), int64(2), nil, int64(-300), int64(300)},
		"i32":    {int64(1), int64(2), nil, int64(3), int64(-7)},
		"i64":    {int64(math.MinInt64), int64(math.MaxInt64), nil, int64(0), int64(-5)},
		"u8":     {int64(0), int64(255), nil, int64(7), int64(200)},
		"u16":    {int64(0), int64(65535), nil, int64(7), int64(1)},
		"u32":    {int64(0), int64(7), nil, int64(1), int64(math.MaxUint32)},
		"u64":    {int64(0), int64(-1), nil, int64(5), int64(math.MinInt64)},
		"f32":    {0.1, math.NaN(), nil, negZero, 3.0},
		"f64":    {0.0, negZero, nil, math.NaN(), math.Inf(-1)},
		"s":      {"a", "b", nil, "it's", ""},
		"ls":     {"a", "B", nil, "é", "zz"},
		"bin":    {"abc", "\x0a\xff", nil, "", "b"},
		"lbin":   {"abc", "", nil, "ab", "\x00"},
		"ts_s":   {ts("2024-01-01T00:00:00Z"), ts("1970-01-01T00:00:01Z"), nil, ts("1970-01-01T00:00:02Z"), ts("1969-12-31T23:59:59Z")},
		"ts_ms":  {ts("2024-01-01T00:00:00Z"), ts("2024-01-01T00:00:00.5Z"), nil, ts("2023-12-31T23:59:59.999Z"), ts("2024-01-02T00:00:00Z")},
		"ts_us":  {ts("2024-01-01T00:00:00Z"), ts("2024-01-01T00:00:00.000001Z"), nil, ts("2023-12-31T23:59:59Z"), ts("1900-01-01T00:00:00Z")},
		"ts_ns":  {ts("2024-01-01T00:00:00Z"), ts("2023-12-31T18:30:00Z"), nil, ts("2024-01-01T05:30:00.000000001Z"), ts("2024-01-01T00:00:00.0000005Z")},
		"d":      {int32(19723), int32(19722), nil, int32(0), int32(19724)},
		"meta":   {[2]any{"x", int64(1)}, [2]any{nil, int64(2)}, nil, [2]any{"y", int64(3)}, [2]any{"x", int64(-1)}},
		"my col": {int64(1), int64(2), nil, int64(3), int64(4)},
		"Upper":  {int64(1), int64(2), nil, int64(3), int64(4)},
		"lst":    {[]int32{1}, []int32{1}, nil, []int32{1}, []int32{1}},
	}
	rows := make([]rowVals, 5)
	for i := range rows {
		rows[i] = make(rowVals, len(testSchema.Fields()))
		for name, vs := range cols {
			rows[i][colIndex(name)] = vs[i]
		}
	}
	return rows
}

func TestEvalHand(t *testing.T) {
	rec := buildBatch(handRows())
	defer rec.Release()
	cases := []struct {
		src  string
		want string // matching rows
	}{
		{"b", "0 3"},
		{"NOT b", "1 4"},
		{"b = FALSE", "1 4"},
		{"b < TRUE", "1 4"},
		{"b <= TRUE", "0 1 3 4"},
		{"b >= FALSE", "0 1 3 4"},
		{"b > FALSE", "0 3"},
		{"b != TRUE", "1 4"},
		{"b IN (TRUE, FALSE)", "0 1 3 4"},
		{"b IS NULL", "2"},
		{"TRUE", "0 1 2 3 4"},
		{"FALSE OR NULL", ""},
		{"NOT NULL", ""},
		{"NOT (b AND NULL)", "1 4"},
		{"b OR NULL", "0 3"},
		{"i8 = -128", "0"},
		{"i8 < -128", ""},
		{"i8 < -129", ""},
		{"i8 > -129", "0 1 3 4"},
		{"i8 <= 127", "0 1 3 4"},
		{"i8 >= 128", ""},
		{"i8 != 1000", "0 1 3 4"},
		{"i8 < 0.5", "0 3"},
		{"i8 > 4.5", "1 4"},
		{"i8 = 5.0", "4"},
		{"i8 = 5.5", ""},
		{"i8 != 5.5", "0 1 3 4"},
		{"i16 IN (300, -300, 70000)", "3 4"},
		{"i16 NOT IN (300, 1)", "1 3"},
		{"i16 NOT IN (300, NULL)", ""},
		{"i16 IN (300, NULL)", "4"},
		{"NOT (i16 IN (300, NULL))", ""},
		{"-7 = i32", "4"},
		{"3 <= i32", "3"},
		{"i64 = -9223372036854775808", "0"},
		{"i64 < -9223372036854775809", ""},
		{"i64 > -9223372036854775809", "0 1 3 4"},
		{"i64 >= 9223372036854775807", "1"},
		{"i64 > 9223372036854775807", ""},
		{"i64 < 1e19", "0 1 3 4"},
		{"i64 > -1e19", "0 1 3 4"},
		{"u8 < 300", "0 1 3 4"},
		{"u8 = -1", ""},
		{"u8 > -1", "0 1 3 4"},
		{"u8 >= 255", "1"},
		{"u8 IN (7, 255, 256, -1)", "1 3"},
		{"u16 = 65535", "1"},
		{"u32 = 4294967295", "4"},
		{"u64 = 18446744073709551615", "1"},
		{"u64 = -1", ""},
		{"u64 > 9223372036854775807", "1 4"},
		{"u64 >= 9.223372036854775808e18", "1 4"},
		{"u64 < 1.8446744073709552e19", "0 1 3 4"},
		{"f32 = 0.1", "0"},
		{"f32 = 0", ""},
		{"f32 = -0.0", "3"},
		{"f32 > 1e30", "1"},
		{"f32 < 0", "3"},
		{"f32 IN (3, 0.1)", "0 4"},
		{"f64 = 0", "0"},
		{"f64 = -0.0", "1"},
		{"f64 < 0", "1 4"},
		{"f64 > 1e308", "3"},
		{"f64 >= 1e999", "3"},
		{"f64 != 1", "0 1 3 4"},
		{"f64 < -1e999", ""},
		{"f64 <= -1e999", "4"},
		{"f64 IN (0, 5)", "0"},
		{"s = 'a'", "0"},
		{`s = "a"`, "0"},
		{"s = 'it''s'", "3"},
		{"s < 'b'", "0 4"},
		{"s >= 'b'", "1 3"},
		{"s != ''", "0 1 3"},
		{"s IN ('a', 'b', 'c')", "0 1"},
		{"s NOT IN ('a', 'b', 'c')", "3 4"},
		{"s IN ('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', '')", "0 1 4"},
		{"ls = 'é'", "3"},
		{"ls > 'z'", "3 4"},
		{"ls < 'a'", "1"},
		{"bin = 'abc'", "0"},
		{"bin = X'0aff'", "1"},
		{"bin < X'0b'", "1 3"},
		{"bin IN (X'', 'b')", "3 4"},
		{"lbin = X'00'", "4"},
		{"lbin > 'a'", "0 3"},
		{"ts_s = TIMESTAMP '2024-01-01 00:00:00'", "0"},
		{"ts_s >= '2024-01-01'", "0"},
		{"ts_s < TIMESTAMP '1970-01-01 00:00:01.5'", "1 4"},
		{"ts_s > TIMESTAMP '1970-01-01 00:00:01.5'", "0 3"},
		{"ts_s = '1970-01-01 00:00:01.5'", ""},
		{"ts_s <= '1970-01-01T00:00:01Z'", "1 4"},
		{"ts_s < '1970-01-01T01:00:00+01:00'", "4"},
		{"ts_s >= DATE '1970-01-01'", "0 1 3"},
		{"ts_ms >= '2024-01-01T00:00:00.5Z'", "1 4"},
		{"ts_ms IN ('2024-01-01', TIMESTAMP '2024-01-02 00:00:00')", "0 4"},
		{"ts_us > TIMESTAMP '2024-01-01 00:00:00'", "1"},
		{"ts_us > TIMESTAMP '2024-01-01 00:00:00.0000009'", "1"},
		{"ts_us > '2024-01-01 00:00:00.0000009'", "1"},
		{"ts_us >= '2024-01-01 00:00:00.0000019'", ""},
		{"ts_us >= TIMESTAMP '2024-01-01 00:00:00.0000019'", "1"},
		{"ts_us < TIMESTAMP '1900-01-01 00:00:00.000001'", "4"},
		{"ts_ns = '2024-01-01 05:30:00'", "0"},
		{"ts_ns = '2024-01-01T00:00:00Z'", "0"},
		{"ts_ns = TIMESTAMP '2024-01-01 00:00:00'", "1"},
		{"ts_ns > TIMESTAMP '2024-01-01 11:00:00'", "3"},
		{"ts_ns >= TIMESTAMP(9) '2024-01-01 11:00:00.000000001'", "3"},
		{"ts_ns > TIMESTAMP(9) '2024-01-01 11:00:00.000000001'", ""},
		{"ts_ns >= TIMESTAMP(9) '2024-01-01 11:00:00.000000002'", ""},
		{"ts_ns < '2024-01-01T00:00:00.000000001Z'", "0 1"},
		{"d = DATE '2024-01-01'", "0"},
		{"d = '2024-01-01'", "0"},
		{"d >= TIMESTAMP '2024-01-01 00:00:00'", "0 4"},
		{"d > TIMESTAMP '2024-01-01 00:00:01'", "4"},
		{"d < '2024-01-01 00:00:01'", "0 1 3"},
		{"d < DATE '1970-01-02'", "3"},
		{"meta.kind = 'x'", "0 4"},
		{"meta.kind IS NULL", "1 2"},
		{"meta IS NULL", "2"},
		{"meta.n > 1", "1 3"},
		{"`my col` = 3", "3"},
		{"upper = 3", "3"},
		{"UPPER IN (1, 4)", "0 4"},
		{"lst IS NOT NULL", "0 1 3 4"},
		{"i32 = 1 OR s = 'b' OR u8 = 200", "0 1 4"},
		{"i32 > 0 AND s IS NOT NULL AND NOT f64 = 0", "1 3"},
		{"NOT (i32 > 1 AND b)", "0 1 4"},
		{"i32 > 1 AND b OR NOT b", "1 3 4"},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			e, err := Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			bd, err := e.Bind(testSchema)
			if err != nil {
				t.Fatal(err)
			}
			got, err := bd.Eval(rec)
			if err != nil {
				t.Fatal(err)
			}
			var rows []string
			for i, ok := range got {
				if ok {
					rows = append(rows, fmt.Sprint(i))
				}
			}
			if g := strings.Join(rows, " "); g != c.want {
				t.Fatalf("rows %q, want %q", g, c.want)
			}
			// The canonical text must select the same rows.
			e2, err := Parse(e.String())
			if err != nil {
				t.Fatal(err)
			}
			bd2, err := e2.Bind(testSchema)
			if err != nil {
				t.Fatal(err)
			}
			got2, _ := bd2.Eval(rec)
			if fmt.Sprint(got2) != fmt.Sprint(got) {
				t.Fatalf("String() %q selects %v, original %v", e.String(), got2, got)
			}
		})
	}
}

func TestBindErrors(t *testing.T) {
	cases := []struct {
		src    string
		sent   error
		column string
		msg    string
	}{
		{"nope = 1", ErrUnknownColumn, "nope", `unknown column "nope"`},
		{"meta.nope = 1", ErrUnknownColumn, "meta.nope", `unknown column "meta.nope": "meta" has no field "nope"`},
		{"s.x = 1", ErrUnknownColumn, "s.x", `unknown column "s.x": "s" has type utf8, not a struct`},
		{"s = 1", ErrType, "s", `cannot compare column "s" of type utf8 with integer 1`},
		{"i32 = 'x'", ErrType, "i32", `cannot compare column "i32" of type int32 with string 'x'`},
		{"b = 1", ErrType, "b", `cannot compare column "b" of type bool with integer 1`},
		{"s = X'00'", ErrType, "s", `cannot compare column "s" of type utf8 with binary X'00'`},
		{"ts_s < 'yesterday'", ErrType, "ts_s", `cannot compare column "ts_s" of type timestamp[s] with string 'yesterday': want YYYY-MM-DD[ HH:MM:SS[.fffffffff]][Z|±HH:MM]`},
		{"ts_s < 5", ErrType, "ts_s", `cannot compare column "ts_s" of type timestamp[s] with integer 5`},
		{"i32 IN (1, 'a')", ErrType, "i32", `cannot compare column "i32" of type int32 with string 'a'`},
		{"i32", ErrType, "i32", `column "i32" has type int32; only a bool column can stand alone as a condition`},
		{"lst = 1", ErrUnsupportedType, "lst", `column "lst" has type list<item: int32, nullable>, which filters can only test with IS [NOT] NULL`},
	}
	for _, c := range cases {
		t.Run(c.src, func(t *testing.T) {
			e, err := Parse(c.src)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Bind(testSchema)
			var be *BindError
			if !errors.As(err, &be) || !errors.Is(err, c.sent) {
				t.Fatalf("got %v, want a *BindError wrapping %v", err, c.sent)
			}
			if be.Column != c.column || be.Msg != c.msg {
				t.Fatalf("got column %q msg %q, want %q %q", be.Column, be.Msg, c.column, c.msg)
			}
		})
	}
}

func TestEvalSchemaChecks(t *testing.T) {
	e, _ := Parse("x = 1")
	s1 := arrow.NewSchema([]arrow.Field{{Name: "y", Type: arrow.BinaryTypes.String}, {Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	bd, err := e.Bind(s1)
	if err != nil {
		t.Fatal(err)
	}
	// A batch with the columns in another order: found by name.
	s2 := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewInt32Builder(memory.DefaultAllocator)
	b.AppendValues([]int32{1, 2}, nil)
	col := b.NewArray()
	rec := array.NewRecordBatch(s2, []arrow.Array{col}, 2)
	got, err := bd.Eval(rec)
	if err != nil || fmt.Sprint(got) != "[true false]" {
		t.Fatalf("got %v, %v", got, err)
	}
	// A batch where x has another type.
	s3 := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b64 := array.NewInt64Builder(memory.DefaultAllocator)
	b64.AppendValues([]int64{1, 2}, nil)
	rec3 := array.NewRecordBatch(s3, []arrow.Array{b64.NewArray()}, 2)
	if _, err := bd.Eval(rec3); err == nil {
		t.Fatal("no error for a type change")
	}
}
