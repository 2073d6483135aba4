package tracking

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/core/store"
)

func TestSeriesIndexCodec(t *testing.T) {
	sids := []uint64{0, 0, 3, 3, 3, 9, 1 << 63, 1<<63 + 5, 1<<63 + 5}
	for _, part := range [][2]uint64{{0, 9}, {2, 4}, {5, 1}, {6, 3}} {
		b := encodeSeriesIndex(sids, part[0], part[1])
		rs, ok, err := decodeSeriesIndex(b, part[1])
		if err != nil || !ok {
			t.Fatalf("part %v: ok %v, err %v", part, ok, err)
		}
		// Every row of the part lies in the range of its own series.
		for i := part[0]; i < part[0]+part[1]; i++ {
			row := uint32(i - part[0])
			found := false
			for _, r := range rs {
				if r.sid == sids[i] && r.lo <= row && row < r.hi {
					found = true
				}
			}
			if !found {
				t.Fatalf("part %v: row %d (series %d) in no range of %v", part, row, sids[i], rs)
			}
		}
	}
	if b := encodeSeriesIndex([]uint64{5, 3}, 0, 2); b != nil {
		t.Fatalf("unsorted ids got an index")
	}
	good := encodeSeriesIndex(sids, 0, 9)
	if _, ok, err := decodeSeriesIndex([]byte("some other writer's buffer"), 9); ok || err != nil {
		t.Fatalf("foreign buffer: ok %v, err %v", ok, err)
	}
	reseal := func(b []byte) []byte {
		b = bytes.Clone(b[:len(b)-8])
		return binary.LittleEndian.AppendUint64(b, xxh3.Hash(b))
	}
	for name, b := range map[string][]byte{
		"flipped byte": func() []byte { b := bytes.Clone(good); b[20] ^= 1; return b }(),
		"truncated":    good[:len(good)-3],
		"short":        []byte(sidxMagic + "\x01"),
		"wrong total":  good, // decoded against the wrong row count below
		"out of order": func() []byte {
			b := bytes.Clone(good)
			copy(b[12:20], b[28:36]) // entry 0 gets entry 1's id
			return reseal(b)
		}(),
		"gap": func() []byte {
			b := bytes.Clone(good)
			binary.LittleEndian.PutUint32(b[12+16+8:], 3) // entry 1 starts at row 3, not 2
			return reseal(b)
		}(),
	} {
		rows := uint64(9)
		if name == "wrong total" {
			rows = 10
		}
		if _, ok, err := decodeSeriesIndex(b, rows); !ok || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ok %v, err %v; want ErrCorrupt", name, ok, err)
		}
	}
}

// trackSeries writes steps points of each named metric to one run and
// returns the run id.
func trackSeries(t *testing.T, r *Repo, steps map[string]int) string {
	t.Helper()
	run, err := r.StartRun(context.Background(), RunSpec{Name: "sorted"})
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range steps {
		for s := range n {
			if err := run.Track(float64(s)*0.5, name); err != nil {
				t.Fatal(err)
			}
		}
	}
	return run.ID()
}

// After Optimize, every sorted data file carries a series index matching
// its series_id column, a large series has pages of its own, and a cold
// reader of one series fetches little more than that series' pages.
func TestSortedFilesCarrySeriesIndex(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := openTest(t, st, RepoOptions{FlushInterval: -1})
	steps := map[string]int{"big": 3 * alignRows / 2, "b2": alignRows + 7, "small": 500, "tiny": 3}
	runID := trackSeries(t, r, steps)
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := lance.Open(ctx, st, "repo/"+MetricsTable, lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := planMetrics(d)
	if len(p.ranged) == 0 || len(p.scanned) != 0 {
		t.Fatalf("after Optimize: %d sorted, %d other fragments", len(p.ranged), len(p.scanned))
	}
	for _, f := range p.ranged {
		b, err := d.DataFileBuffer(ctx, f.ID, sidxBufferID)
		if err != nil || b == nil {
			t.Fatalf("fragment %d: no series index (%v)", f.ID, err)
		}
		fromIndex, ok, err := decodeSeriesIndex(b, f.PhysicalRows)
		if err != nil || !ok {
			t.Fatalf("fragment %d: %v", f.ID, err)
		}
		// The same ranges from the column, the slow way.
		var fromColumn []sidRange
		var pos uint32
		rows, err := d.Take(ctx, seqRows(f), []string{"series_id"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range rows.Column(0).(interface{ Uint64Values() []uint64 }).Uint64Values() {
			if n := len(fromColumn); n > 0 && fromColumn[n-1].sid == s {
				fromColumn[n-1].hi++
			} else {
				fromColumn = append(fromColumn, sidRange{sid: s, lo: pos, hi: pos + 1})
			}
			pos++
		}
		rows.Release()
		if fmt.Sprint(fromIndex) != fmt.Sprint(fromColumn) {
			t.Fatalf("fragment %d: index %v, column %v", f.ID, fromIndex, fromColumn)
		}
	}

	ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for name, n := range steps {
		id := seriesID(runID, name, "{}")
		before := st.Counters()
		out, err := ro.ReadMany(ctx, []SeriesID{id}, ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := out[0]
		if got.Len() != n {
			t.Fatalf("%s: %d points, want %d", name, got.Len(), n)
		}
		for i := range n {
			if got.Steps[i] != int64(i) || got.Values[i] != float64(i)*0.5 {
				t.Fatalf("%s: point %d = step %d value %v", name, i, got.Steps[i], got.Values[i])
			}
		}
		used := st.Counters().Sub(before)
		// step, epoch, timestamp, value and series_id at most 8 bytes a
		// point, plus one listing, footers (64 KiB tail reads) and pages
		// shared with small series (≤ 1 MiB each).
		if n >= alignRows {
			if limit := int64(5*8*n) + 2*64<<10; used.ReadBytes > limit {
				t.Errorf("%s: read %d bytes for %d points (limit %d)", name, used.ReadBytes, n, limit)
			}
		}
		// The freshness check: a listing, or IsLatest's probes shortly
		// after one.
		if used.Lists+used.Stats == 0 || used.Lists > 1 {
			t.Errorf("%s: %d listings and %d stats: no single freshness check", name, used.Lists, used.Stats)
		}
		// Warm, the read costs the pages of the point columns alone: the
		// index says whose each row is, so series_id (8 bytes a row) is not
		// read. The same pages read straight through lance are the measure.
		before = st.Counters()
		if _, err := ro.ReadMany(ctx, []SeriesID{id}, ReadOptions{}); err != nil {
			t.Fatal(err)
		}
		warm := st.Counters().Sub(before).ReadBytes
		var direct int64
		for _, f := range p.ranged {
			b, err := d.DataFileBuffer(ctx, f.ID, sidxBufferID)
			if err != nil {
				t.Fatal(err)
			}
			rs, ok, err := decodeSeriesIndex(b, f.PhysicalRows)
			if err != nil || !ok {
				t.Fatalf("fragment %d: %v", f.ID, err)
			}
			hits := wantedRanges(rs, []uint64{uint64(id)})
			if len(hits) == 0 {
				continue
			}
			before = st.Counters()
			rec, err := d.ReadRanges(ctx, f.ID, rowRanges(hits), sampledCols)
			if err != nil {
				t.Fatal(err)
			}
			rec.Release()
			direct += st.Counters().Sub(before).ReadBytes
		}
		if warm > direct+int64(n)+4<<10 {
			t.Errorf("%s: a warm read of %d points read %d bytes; its point columns' pages are %d", name, n, warm, direct)
		}
	}
}

func seqRows(f lance.Fragment) []uint64 {
	out := make([]uint64, f.PhysicalRows)
	for i := range out {
		out[i] = f.ID<<32 | uint64(i)
	}
	return out
}

// A damaged series index fails the read with ErrCorrupt naming the
// fragment, never wrong points.
func TestCorruptSeriesIndex(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := openTest(t, st, RepoOptions{FlushInterval: -1})
	runID := trackSeries(t, r, map[string]int{"loss": 2000, "acc": 100})
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	objs, err := st.List(ctx, store.ListOptions{Prefix: "repo/" + MetricsTable + "/data/"})
	if err != nil {
		t.Fatal(err)
	}
	damaged := 0
	for _, o := range objs {
		b := make([]byte, o.Size)
		if err := st.ReadAt(ctx, o.Key, b, 0); err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, []byte(sidxMagic)); i >= 0 {
			b[i+len(sidxMagic)+4+3] ^= 0x40 // inside entry 0's series id
			if err := st.Put(ctx, o.Key, b); err != nil {
				t.Fatal(err)
			}
			damaged++
		}
	}
	if damaged == 0 {
		t.Fatal("no data file holds a series index")
	}
	ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.ReadMany(ctx, []SeriesID{seriesID(runID, "loss", "{}")}, ReadOptions{})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "metrics fragment") {
		t.Fatalf("read through a damaged index: %v, want ErrCorrupt naming the fragment", err)
	}
}

// FuzzSeriesIndex checks that any buffer decodes to an error, to "not an
// index", or to ranges that tile the file's rows in series order, and that
// a valid index survives a round trip.
func FuzzSeriesIndex(f *testing.F) {
	f.Add(encodeSeriesIndex([]uint64{0, 0, 4, 9, 9, 9}, 0, 6), uint64(6))
	f.Add([]byte(sidxMagic), uint64(0))
	f.Add([]byte("other"), uint64(3))
	f.Fuzz(func(t *testing.T, b []byte, rows uint64) {
		rs, ok, err := decodeSeriesIndex(b, rows)
		if err != nil {
			if !ok || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v with ok %v", err, ok)
			}
			return
		}
		if !ok {
			return
		}
		var next uint32
		var sids []uint64
		for i, r := range rs {
			if r.lo != next || r.hi <= r.lo || (i > 0 && r.sid <= rs[i-1].sid) {
				t.Fatalf("bad ranges %v", rs)
			}
			next = r.hi
		}
		if uint64(next) != rows {
			t.Fatalf("ranges cover %d of %d rows", next, rows)
		}
		if rows > 1<<20 {
			return // too many to expand for the round trip
		}
		for _, r := range rs {
			for range r.hi - r.lo {
				sids = append(sids, r.sid)
			}
		}
		if again := encodeSeriesIndex(sids, 0, uint64(len(sids))); !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

// Deleting a run leaves deletion files on sorted fragments; the series of
// other runs are still read by range (deleted rows dropped), not by a scan
// of the whole fragment.
func TestSortedReadAfterDeleteRuns(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	r := openTest(t, st, RepoOptions{FlushInterval: -1})
	keep := trackSeries(t, r, map[string]int{"loss": alignRows + 100, "acc": 700})
	gone := trackSeries(t, r, map[string]int{"loss": 3 * alignRows, "acc": 900})
	if _, err := r.Optimize(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.DeleteRuns(ctx, []string{gone}); err != nil {
		t.Fatal(err)
	}
	d, err := lance.Open(ctx, st, "repo/"+MetricsTable, lance.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	withDeletions := 0
	sorted := parseSorted(d.Config()[ConfigSortedFragments])
	for _, f := range d.Fragments() {
		if sorted[f.ID] && f.DeletionFile != "" {
			withDeletions++
		}
	}
	if withDeletions == 0 {
		t.Skip("DeleteRuns left no deletion file on a sorted fragment; nothing to check")
	}
	ro, err := OpenRepo(ctx, st, "repo", RepoOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	out, err := ro.ReadMany(ctx, []SeriesID{seriesID(gone, "loss", "{}")}, ReadOptions{})
	if err != nil || out[0].Len() != 0 {
		t.Fatalf("deleted run: %d points, %v", out[0].Len(), err)
	}
	before := st.Counters()
	out, err = ro.ReadMany(ctx, []SeriesID{seriesID(keep, "loss", "{}")}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Len() != alignRows+100 {
		t.Fatalf("kept run: %d points", out[0].Len())
	}
	for i, s := range out[0].Steps {
		if s != int64(i) || out[0].Values[i] != float64(i)*0.5 {
			t.Fatalf("point %d: step %d value %v", i, s, out[0].Values[i])
		}
	}
	if used := st.Counters().Sub(before).ReadBytes; used > int64(5*8*(alignRows+100))+4*64<<10 {
		t.Fatalf("read %d bytes: the fragment was scanned, not read by range", used)
	}
}
