package wal

import "testing"

func FuzzReadSegment(f *testing.F) {
	var seg []byte
	seg = appendRecord(seg, rec(1, "hello"))
	seg = appendRecord(seg, trimPayload(3, 40))
	seg = appendRecord(seg, rec(2, ""))
	f.Add(seg)
	f.Add(seg[:len(seg)-2])
	f.Add([]byte{})
	f.Add(make([]byte, 30))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, bad, torn := ReadSegment(data)
		if bad < -1 || bad > int64(len(data)) {
			t.Fatalf("bad offset %d of %d", bad, len(data))
		}
		if bad == -1 && torn {
			t.Fatal("torn without a bad record")
		}
		// Re-framing what was read gives a prefix of the input's records.
		var again []byte
		for _, r := range recs {
			again = appendRecord(again, r)
		}
		recs2, bad2, _ := ReadSegment(again)
		if bad2 != -1 || len(recs2) != len(recs) {
			t.Fatalf("re-encoded segment: %d records (bad %d), want %d", len(recs2), bad2, len(recs))
		}
	})
}
