package tracking

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/kv0/kv0/core/lance"
)

func TestSortedSpansConfig(t *testing.T) {
	spans := parseSortedSpans("3:10:20, 7 ,9:5:5,bad,11:9:2")
	want := map[uint64]sidSpan{3: {10, 20, true}, 7: {}, 9: {5, 5, true}, 11: {}}
	if len(spans) != len(want) {
		t.Fatalf("parsed %v, want %v", spans, want)
	}
	for id, sp := range want {
		if spans[id] != sp {
			t.Fatalf("fragment %d: span %+v, want %+v", id, spans[id], sp)
		}
	}
	if got := formatSorted(spans); got != "3:10:20,7,9:5:5,11" {
		t.Fatalf("formatSorted = %q", got)
	}
	if got := parseSorted("3:10:20,7"); !got[3] || !got[7] || len(got) != 2 {
		t.Fatalf("parseSorted = %v", got)
	}
	for _, tc := range []struct {
		sp   sidSpan
		ids  []uint64
		want bool
	}{
		{sidSpan{10, 20, true}, []uint64{5, 9}, false},
		{sidSpan{10, 20, true}, []uint64{5, 15}, true},
		{sidSpan{10, 20, true}, []uint64{20}, true},
		{sidSpan{10, 20, true}, []uint64{21, 30}, false},
		{sidSpan{}, []uint64{1}, true},
	} {
		if got := tc.sp.holdsAny(tc.ids); got != tc.want {
			t.Errorf("%+v.holdsAny(%v) = %v, want %v", tc.sp, tc.ids, got, tc.want)
		}
	}
}

func TestFragmentSpans(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "step", Type: arrow.PrimitiveTypes.Int64}, {Name: "series_id", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	batch := func(sids ...uint64) arrow.RecordBatch {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		for _, s := range sids {
			b.Field(0).(*array.Int64Builder).Append(1)
			b.Field(1).(*array.Uint64Builder).Append(s)
		}
		return b.NewRecordBatch()
	}
	recs := []arrow.RecordBatch{batch(0, 0, 4, 4, 4), batch(9, 9, 12)}
	frags := []lance.Fragment{{ID: 7, PhysicalRows: 3}, {ID: 8, PhysicalRows: 4}, {ID: 9, PhysicalRows: 1}}
	got := fragmentSpans(recs, frags)
	want := []sidSpan{{0, 4, true}, {4, 9, true}, {12, 12, true}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("spans = %+v, want %+v", got, want)
		}
	}
	// Row counts that do not add up give unknown spans, never wrong ones.
	for _, fs := range [][]lance.Fragment{{{ID: 1, PhysicalRows: 3}}, {{ID: 1, PhysicalRows: 9}}} {
		for _, sp := range fragmentSpans(recs, fs) {
			if sp.known {
				t.Fatalf("spans for mismatched fragments %+v are known: %+v", fs, sp)
			}
		}
	}
}
