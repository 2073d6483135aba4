package lance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/kv0/kv0/core/lancefile"
	"github.com/kv0/kv0/core/store"
)

// skipIfNotDecoding skips a test while the page decoders of the data file
// format it needs are still being written.
func skipIfNotDecoding(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, lancefile.ErrUnsupportedEncoding) && strings.Contains(err.Error(), "not implemented yet") {
		t.Skipf("data file decoding not implemented yet: %v", err)
	}
}

// scanColumn scans one column and returns its values as float64 (numeric
// columns only) plus the number of batches.
func scanColumn(t *testing.T, d *Dataset, opts ScanOptions) ([]float64, int) {
	t.Helper()
	s, err := d.Scan(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []float64
	batches := 0
	for s.Next() {
		rec := s.Record()
		batches++
		if !s.Schema().Equal(rec.Schema()) {
			t.Fatalf("record schema %v, scan schema %v", rec.Schema(), s.Schema())
		}
		switch c := rec.Column(0).(type) {
		case *array.Uint64:
			for _, v := range c.Uint64Values() {
				out = append(out, float64(v))
			}
		case *array.Float64:
			out = append(out, c.Float64Values()...)
		default:
			t.Fatalf("column type %T", c)
		}
	}
	if err := s.Err(); err != nil {
		skipIfNotDecoding(t, err)
		t.Fatal(err)
	}
	return out, batches
}

func seqRange(from, to int, skip func(int) bool) []float64 {
	var out []float64
	for i := from; i < to; i++ {
		if skip == nil || !skip(i) {
			out = append(out, float64(i))
		}
	}
	return out
}

// The default fixture: v1 seq 0..99, v2 +100..199, v3 deletes [10,20),
// v4 deletes 150, v5 reserves a fragment id, v6 compacts into one fragment.
func TestScanVersions(t *testing.T) {
	v3 := func(i int) bool { return i >= 10 && i < 20 }
	v4 := func(i int) bool { return v3(i) || i == 150 }
	want := map[uint64][]float64{
		1: seqRange(0, 100, nil),
		2: seqRange(0, 200, nil),
		3: seqRange(0, 200, v3),
		4: seqRange(0, 200, v4),
		5: seqRange(0, 200, v4),
		6: seqRange(0, 200, v4),
	}
	for _, dir := range []string{"default", "v2_0", "v1paths"} {
		t.Run(dir, func(t *testing.T) {
			st := loadFixture(t, dir)
			for v := uint64(1); v <= 6; v++ {
				d, err := Open(t.Context(), st, "kv.lance", OpenOptions{Version: v})
				if err != nil {
					t.Fatal(err)
				}
				got, _ := scanColumn(t, d, ScanOptions{Columns: []string{"seq"}, BatchRows: 7})
				if !slices.Equal(got, want[v]) {
					t.Fatalf("version %d: got %v\nwant %v", v, got, want[v])
				}
				n, _ := d.CountRows(t.Context())
				if int(n) != len(got) {
					t.Fatalf("version %d: CountRows %d, scanned %d", v, n, len(got))
				}
			}
		})
	}
}

func TestScanAllColumnsAndLimit(t *testing.T) {
	st := loadFixture(t, "default")
	d, err := Open(t.Context(), st, "kv.lance", OpenOptions{Version: 4})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Scan(t.Context(), ScanOptions{Limit: 25, BatchRows: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows := 0
	for s.Next() {
		rec := s.Record()
		if rec.NumCols() != 4 || !rec.Schema().Equal(d.ArrowSchema()) {
			t.Fatalf("schema %v", rec.Schema())
		}
		rows += int(rec.NumRows())
	}
	if err := s.Err(); err != nil {
		skipIfNotDecoding(t, err)
		t.Fatal(err)
	}
	if rows != 25 {
		t.Fatalf("limit 25 gave %d rows", rows)
	}
	if _, err := d.Scan(t.Context(), ScanOptions{Columns: []string{"nope"}}); err == nil {
		t.Fatal("unknown column accepted")
	}
	if _, err := d.Scan(t.Context(), ScanOptions{Fragments: []uint64{99}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown fragment: %v", err)
	}
	// Fragment subset: fragment 1 holds seq 100..199 (minus 150).
	got, _ := scanColumn(t, d, ScanOptions{Columns: []string{"seq"}, Fragments: []uint64{1}})
	if !slices.Equal(got, seqRange(100, 200, func(i int) bool { return i == 150 })) {
		t.Fatalf("fragment 1: %v", got)
	}
}

// bigdel: t.lance has 20,000 rows (id = 0..19999 as float64) with the even
// ids deleted (roaring .bin); t2.lance has 1,000 rows with id < 10 deleted
// (.arrow, ZSTD-compressed).
func TestScanDeletionFiles(t *testing.T) {
	st := loadFixture(t, "bigdel")
	for _, tc := range []struct {
		root string
		want []float64
	}{
		{"t.lance", seqRange(0, 20000, func(i int) bool { return i%2 == 0 })},
		{"t2.lance", seqRange(10, 1000, nil)},
	} {
		t.Run(tc.root, func(t *testing.T) {
			d, err := Open(t.Context(), st, tc.root, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, batch := range []int{0, 1000, 3} {
				got, _ := scanColumn(t, d, ScanOptions{BatchRows: batch})
				if !slices.Equal(got, tc.want) {
					t.Fatalf("batch %d: got %d rows %v…, want %d", batch, len(got), got[:min(len(got), 10)], len(tc.want))
				}
			}
		})
	}
}

// TestReadOneColumnCost pins issue 2's budget: after Open, reading one column
// of one fragment costs at most 2 sequential round trips (the data file's
// tail, concurrently with the deletion file; then the column's pages).
func TestReadOneColumnCost(t *testing.T) {
	for _, tc := range []struct{ dir, root string }{{"default", "kv.lance"}, {"bigdel", "t.lance"}, {"bigdel", "t2.lance"}} {
		t.Run(tc.dir+"/"+tc.root, func(t *testing.T) {
			mem := loadFixture(t, tc.dir)
			rt := &roundTrips{Memory: mem}
			d, err := Open(t.Context(), rt, tc.root, OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rt.reset()
			frag := d.Fragments()[0]
			col := d.Schema().Fields[0].Name
			got, _ := scanColumn(t, d, ScanOptions{Columns: []string{col}, Fragments: []uint64{frag.ID}, BatchRows: 1 << 20})
			if len(got) == 0 {
				t.Fatal("no rows")
			}
			t.Logf("%d requests in %d round trips", rt.requests, rt.trips)
			if rt.trips > 2 {
				t.Fatalf("%d sequential round trips (%d requests), budget 2", rt.trips, rt.requests)
			}
		})
	}
}

// roundTrips counts requests and sequential round trips: requests that
// start while another is in flight share its round trip.
type roundTrips struct {
	*store.Memory
	mu              sync.Mutex
	inflight        int
	requests, trips int
}

func (r *roundTrips) reset() {
	r.mu.Lock()
	r.requests, r.trips = 0, 0
	r.mu.Unlock()
}

func (r *roundTrips) begin() {
	r.mu.Lock()
	r.requests++
	if r.inflight == 0 {
		r.trips++
	}
	r.inflight++
	r.mu.Unlock()
	time.Sleep(2 * time.Millisecond) // let concurrent requests overlap
}

func (r *roundTrips) end() {
	r.mu.Lock()
	r.inflight--
	r.mu.Unlock()
}

func (r *roundTrips) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	r.begin()
	defer r.end()
	return r.Memory.ReadAt(ctx, key, p, off)
}

func (r *roundTrips) ReadTail(ctx context.Context, key string, n int) ([]byte, int64, error) {
	r.begin()
	defer r.end()
	return r.Memory.ReadTail(ctx, key, n)
}

func (r *roundTrips) Stat(ctx context.Context, key string) (store.ObjectInfo, error) {
	r.begin()
	defer r.end()
	return r.Memory.Stat(ctx, key)
}

func (r *roundTrips) List(ctx context.Context, o store.ListOptions) ([]store.ObjectInfo, error) {
	r.begin()
	defer r.end()
	return r.Memory.List(ctx, o)
}
