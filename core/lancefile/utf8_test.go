package lancefile

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
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

func TestWriterRefusesInvalidUTF8(t *testing.T) {
	as := arrow.NewSchema([]arrow.Field{
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	s := mustSchema(t, as)
	for _, tc := range []struct {
		name string
		top  string
		list []string
		ok   bool
	}{
		{"valid", "é", []string{"a", "€"}, true},
		{"top level", "a\xffb", nil, false},
		{"split rune", "\xc3", []string{"\xa9"}, false},
		{"in a list", "a", []string{"ok", "\xc3("}, false},
	} {
		b := array.NewRecordBuilder(memory.DefaultAllocator, as)
		b.Field(0).(*array.StringBuilder).Append(tc.top)
		lb := b.Field(1).(*array.ListBuilder)
		lb.Append(true)
		for _, v := range tc.list {
			lb.ValueBuilder().(*array.StringBuilder).Append(v)
		}
		rec := b.NewRecordBatch()
		b.Release()
		w, err := NewWriter(s, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Write(rec)
		rec.Release()
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, ErrInvalidUTF8)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
