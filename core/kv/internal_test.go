package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	maps2 "maps"
	"slices"
	"testing"

	"github.com/zeebo/xxh3"
)

func xxh3Hash(b []byte) uint64 { return xxh3.Hash(b) }

func TestEntryRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    entry
		kind byte
	}{
		{"put", newPut(7, []byte("key"), []byte("value")), kindPut},
		{"empty", newPut(1, nil, nil), kindPut},
		{"long key", newPut(1, bytes.Repeat([]byte("k"), 300), []byte("v")), kindPut},
		{"tombstone", newTombstone(9, []byte("gone")), kindTombstone},
		{"lazy", newLazy(3, []byte("big"), lazyLoc{version: 12, addr: 5<<32 | 7, length: 9000}), kindLazy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !validEntry(tc.e) || entryKind(tc.e) != tc.kind {
				t.Fatalf("invalid entry %x", tc.e)
			}
			if tc.kind == kindLazy {
				l, ok := decodeLazy(entryPayload(tc.e))
				if !ok || l.version != 12 || l.addr != 5<<32|7 || l.length != 9000 {
					t.Fatalf("lazy %+v", l)
				}
			}
		})
	}
}

func TestRangeTombstoneOrderIndependence(t *testing.T) {
	rows := []Row{
		{Seq: 10, Op: OpPut, Key: []byte("b"), Value: []byte("1")},
		{Seq: 20, Op: OpDeleteRange, Key: []byte("a"), Value: []byte("c")},
		{Seq: 30, Op: OpPut, Key: []byte("b"), Value: []byte("2")},
		{Seq: 15, Op: OpDeleteRange, Key: []byte("b"), Value: []byte("z")},
		{Seq: 25, Op: OpDelete, Key: []byte("d")},
		{Seq: 5, Op: OpPut, Key: []byte("d"), Value: []byte("old")},
		{Seq: 40, Op: OpPut, Key: []byte("e"), Value: []byte("new")},
		{Seq: 35, Op: OpDeleteRange, Key: []byte("d"), Value: []byte("f")},
	}
	want := dump(applyAll(rows))
	perm := make([]Row, len(rows))
	for i := range 200 {
		copy(perm, rows)
		for j := len(perm) - 1; j > 0; j-- {
			k := (i*31 + j*17) % (j + 1)
			perm[j], perm[k] = perm[k], perm[j]
		}
		if got := dump(applyAll(perm)); got != want {
			t.Fatalf("order %d: %s, want %s", i, got, want)
		}
		if got := dump(applyAll(append(perm, perm...))); got != want {
			t.Fatalf("applied twice: %s, want %s", got, want)
		}
	}
	if want != "b=2 e=new " {
		t.Fatalf("view %q", want)
	}
}

func applyAll(rows []Row) *view {
	v := newView()
	for i := range rows {
		v.applyRow(&rows[i], 0, 0)
	}
	return v
}

func dump(v *view) string {
	var b bytes.Buffer
	v.ascend(nil, func(e entry) bool {
		if entryKind(e) != kindTombstone {
			b.WriteString(string(entryKey(e)) + "=" + string(entryPayload(e)) + " ")
		}
		return true
	})
	return b.String()
}

func TestSnapshotRoundTrip(t *testing.T) {
	v := applyAll([]Row{
		{Seq: 10, Op: OpPut, Key: []byte("a"), Value: []byte("1")},
		{Seq: 11, Op: OpDelete, Key: []byte("b")},
		{Seq: 12, Op: OpDeleteRange, Key: []byte("c"), Value: []byte("d")},
		{Seq: 13, Op: OpMark, Key: []byte("w1"), Value: AppendMark(nil, 13)},
	})
	v.set(newLazy(14, []byte("z"), lazyLoc{version: 3, addr: 1, length: 5000}))
	frags := []FragmentInfo{{ID: 1, DataFile: "data/x.lance", Rows: 4}, {ID: 2, DataFile: "data/y.lance", Rows: 1, DeletionFile: "_deletions/2.arrow"}}
	data := encodeSnapshot(nil, 4096, 7, frags, v)
	s, err := decodeSnapshot(data, "snap", true)
	if err != nil {
		t.Fatal(err)
	}
	if s.version != 7 || s.threshold != 4096 || len(s.frags) != 2 || s.frags[1] != frags[1] || s.view.marks["w1"] != 13 || s.view.max != v.max {
		t.Fatalf("decoded %+v", s)
	}
	if again := encodeSnapshot(nil, 4096, 7, frags, s.view); !bytes.Equal(again, data) {
		t.Fatal("re-encoding differs")
	}
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x40
		if err := ValidateSnapshot(bad); err == nil {
			t.Fatalf("flip at %d accepted", i)
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	v := applyAll([]Row{
		{Seq: 10, Op: OpPut, Key: []byte("a"), Value: []byte("1")},
		{Seq: 12, Op: OpDeleteRange, Key: []byte("c"), Value: []byte("d")},
	})
	good := encodeSnapshot(nil, 16, 2, []FragmentInfo{{ID: 1, DataFile: "f", Rows: 2}}, v)
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(snapMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decodeSnapshot(data, "fuzz", true)
		if err == nil {
			// Whatever decodes re-encodes to something that decodes.
			again := encodeSnapshot(nil, s.threshold, s.version, s.frags, s.view)
			if _, err := decodeSnapshot(again, "again", true); err != nil {
				t.Fatalf("re-encoded snapshot fails: %v", err)
			}
		}
		// The body alone, re-checksummed, must never panic either.
		if len(data) > 0 {
			body := append([]byte(snapMagic), data...)
			body = binary.LittleEndian.AppendUint64(body, xxh3Hash(body))
			_, _ = decodeSnapshot(body, "body", true)
		}
	})
}

func FuzzRecord(f *testing.F) {
	var b Batch
	b.Put([]byte("k"), []byte("v"))
	b.Delete([]byte("d"))
	b.DeleteRange([]byte("a"), []byte("b"))
	rec := newRecordForTest(&b)
	f.Add(rec)
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = recordOps(data, func(*Row) error { return nil })
		_, _, _ = recordSpan(data)
	})
}

func newRecordForTest(b *Batch) []byte {
	rec := make([]byte, recordHeader)
	rec[0] = RecordKind
	rec = binary.AppendUvarint(rec, uint64(b.count))
	return append(rec, b.repr...)
}

// A snapshot whose entries are out of key order is corrupt: the base run
// it loads into is searched by binary search.
func TestSnapshotEntriesOutOfOrder(t *testing.T) {
	body := []byte(snapMagic)
	body = binary.AppendUvarint(body, 16) // threshold
	body = binary.AppendUvarint(body, 1)  // version
	body = binary.AppendUvarint(body, 9)  // max seq
	body = binary.AppendUvarint(body, 0)  // fragments
	body = binary.AppendUvarint(body, 0)  // marks
	body = binary.AppendUvarint(body, 2)  // entries
	body = appendBytes(body, newPut(1, []byte("b"), []byte("1")))
	body = appendBytes(body, newPut(2, []byte("a"), []byte("2")))
	body = binary.AppendUvarint(body, 0) // spans
	data := binary.LittleEndian.AppendUint64(body, xxh3Hash(body))
	if err := ValidateSnapshot(data); err == nil {
		t.Fatal("out-of-order entries accepted")
	}
}

// The base run and the delta together: point reads, walks both ways from
// every position, range deletes over both layers, merges.
func TestViewLayers(t *testing.T) {
	v := newView()
	want := map[string]string{}
	for i := range 200 {
		k := fmt.Sprintf("k%03d", (i*37)%200)
		v.applyPut(uint64(i+1), []byte(k), []byte(k), nil)
		want[k] = k
	}
	v.merge(nil)
	for i := range 50 {
		k := fmt.Sprintf("k%03d", i*3)
		v.applyPut(uint64(1000+i), []byte(k), []byte("new"), nil)
		want[k] = "new"
	}
	v.applyDeleteRange(2000, []byte("k050"), []byte("k100"))
	for i := 50; i < 100; i++ {
		delete(want, fmt.Sprintf("k%03d", i))
	}
	keys := slices.Sorted(maps2.Keys(want))
	var got []string
	v.ascend(nil, func(e entry) bool {
		if entryKind(e) != kindTombstone {
			got = append(got, string(entryKey(e)))
		}
		return true
	})
	if !slices.Equal(got, keys) {
		t.Fatalf("ascend %v\nwant %v", got, keys)
	}
	got = got[:0]
	v.descend([]byte("k150"), func(e entry) bool {
		got = append(got, string(entryKey(e)))
		return true
	})
	var wantDesc []string
	for i := len(keys) - 1; i >= 0; i-- {
		if keys[i] <= "k150" {
			wantDesc = append(wantDesc, keys[i])
		}
	}
	if !slices.Equal(got, wantDesc) {
		t.Fatalf("descend %v\nwant %v", got, wantDesc)
	}
	for i := range 210 {
		k := fmt.Sprintf("k%03d", i)
		e := v.lookup([]byte(k))
		w, ok := want[k]
		if ok != (e != nil) || (ok && string(entryPayload(e)) != w) {
			t.Fatalf("lookup %s = %q, want %q (%v)", k, e, w, ok)
		}
	}
	v.release()
}

// appendBytes appends b to dst as the snapshot frames byte strings.
func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// failAfter is a writer that fails once it has taken n bytes.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		return 0, f.err
	}
	f.n -= len(p)
	return len(p), nil
}

// A streamed snapshot is byte for byte the one encoded in memory, over
// many pieces, and a failing writer's error comes back.
func TestSnapshotStreamed(t *testing.T) {
	var rows []Row
	for i := range 20000 {
		rows = append(rows, Row{Seq: uint64(i + 1), Op: OpPut, Key: fmt.Appendf(nil, "key%07d", i), Value: bytes.Repeat([]byte{byte(i)}, 40)})
	}
	rows = append(rows,
		Row{Seq: 30001, Op: OpDeleteRange, Key: []byte("key0000100"), Value: []byte("key0000200")},
		Row{Seq: 30002, Op: OpMark, Key: []byte("w"), Value: AppendMark(nil, 30002)})
	v := applyAll(rows)
	frags := []FragmentInfo{{ID: 3, DataFile: "data/a.lance", Rows: 20002}}
	want := encodeSnapshot(nil, 4096, 9, frags, v)
	if len(want) < 3*snapChunk {
		t.Fatalf("snapshot of %d bytes is too small to span pieces", len(want))
	}
	var got bytes.Buffer
	if err := writeSnapshot(&got, 4096, 9, frags, v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("streamed snapshot (%d bytes) differs from the encoded one (%d bytes)", got.Len(), len(want))
	}
	if _, err := decodeSnapshot(got.Bytes(), "streamed", true); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	if err := writeSnapshot(&failAfter{n: snapChunk, err: boom}, 4096, 9, frags, v); !errors.Is(err, boom) {
		t.Fatalf("failing writer: %v", err)
	}
}
