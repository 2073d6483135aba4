package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/kv"
)

// readTree returns every file under root (path relative to root ->
// contents); directories appear with a trailing slash.
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(path)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeTree makes root hold exactly the files of tree.
func writeTree(t *testing.T, root string, tree map[string]string) {
	t.Helper()
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	for _, rel := range slices.Sorted(maps.Keys(tree)) {
		p := filepath.Join(root, rel)
		if strings.HasSuffix(rel, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(tree[rel]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k := range want {
		if _, ok := got[k]; !ok {
			t.Fatalf("%s: %s disappeared", what, k)
		}
		if got[k] != want[k] {
			t.Fatalf("%s: %s changed", what, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s: %s appeared", what, k)
		}
	}
}

// testBodies are record bodies of assorted sizes: short ones, one ending
// in zeros, one crossing a page boundary.
func testBodies() []string {
	rng := rand.New(rand.NewPCG(7, 7))
	var out []string
	for i := range 12 {
		n := 1 + rng.IntN(60)
		switch i {
		case 4:
			n = 5000
		case 7:
			n = 0
		}
		b := make([]byte, n)
		for j := range b {
			b[j] = byte('a' + rng.IntN(26))
		}
		if i == 9 {
			b = append(b, make([]byte, 10)...)
		}
		out = append(out, string(b))
	}
	return out
}

// recordStarts returns the offset of each record of a segment and its end.
func recordStarts(t *testing.T, data []byte) []int {
	t.Helper()
	p := parseSegment(data)
	starts := []int{0}
	for _, r := range p.records {
		starts = append(starts, int(r.end))
	}
	return starts
}

// flipPositions returns the bytes of the records to damage: every byte of
// each header (the first is the record boundary) and the first, the last
// and every 97th byte of each payload.
func flipPositions(starts []int) []int {
	var pos []int
	for i := 0; i+1 < len(starts); i++ {
		a, b := starts[i], starts[i+1]
		for p := a; p < b; p++ {
			if p < a+headerSize+1 || (p-a-headerSize)%97 == 0 || p == b-1 {
				pos = append(pos, p)
			}
		}
	}
	return pos
}

// TestFlipEveryByte changes every byte of a segment, with several masks,
// in a segment that ends with its last record and in one followed by the
// zeros of a mapped segment: each change inside a record is damage at
// that record, after the records before it read whole, never a torn tail.
func TestFlipEveryByte(t *testing.T) {
	var seg []byte
	starts := []int{0}
	for i, b := range testBodies() {
		seg = appendRecord(seg, rec(uint64(i+1), b))
		starts = append(starts, len(seg))
	}
	for _, tail := range []int{0, 64 << 10} {
		data := append(slices.Clone(seg), make([]byte, tail)...)
		k := 0
		for pos := range seg {
			for starts[k+1] <= pos {
				k++
			}
			for _, mask := range []byte{0xff, 0x01, 0x80, 0x10, 0x55} {
				data[pos] ^= mask
				p := parseSegment(data)
				data[pos] ^= mask
				if p.badAt != int64(starts[k]) || len(p.records) != k || p.torn {
					t.Fatalf("tail %d, byte %d of record %d ^%#x: bad at %d (torn %v, %s) after %d records; want damage at %d",
						tail, pos-starts[k], k, mask, p.badAt, p.torn, p.why, len(p.records), starts[k])
				}
			}
		}
	}
}

// TestSalvageFlippedByte damages one byte of a segment, at every record
// boundary and inside every record (length, checksum, payload), in a
// segment that ends with its last record and in one followed by the zeros
// of a mapped segment a killed writer leaves, and for each checks: Open
// fails with a *CorruptError naming the segment, the offset of the record,
// the intact records before it and the salvage command; Check reports the
// same and changes nothing; Salvage keeps exactly the records before the
// damage, copies the damaged segment byte for byte into damaged/; the next
// Open replays exactly those records; a second Salvage changes nothing.
func TestSalvageFlippedByte(t *testing.T) {
	bodies := testBodies()
	for _, shape := range []string{"closed", "mapped-tail"} {
		t.Run(shape, func(t *testing.T) {
			root := t.TempDir()
			o := Options{Dir: root, Mode: SyncAlways, FS: noSyncFS{}}
			l := mustOpen(t, o)
			appendAll(t, l, 1, bodies...)
			seg := lastSegment(t, l.Dir())
			id := l.WriterID()
			l.Close(false)
			if shape == "mapped-tail" {
				if err := os.Truncate(seg, 64<<10); err != nil {
					t.Fatal(err)
				}
			}
			pristine := readTree(t, root)
			data, _ := os.ReadFile(seg)
			starts := recordStarts(t, data)
			if len(starts) != len(bodies)+1 {
				t.Fatalf("%d records in the pristine segment", len(starts)-1)
			}
			masks := []byte{0xff, 0x01, 0x80, 0x10}
			for i, pos := range flipPositions(starts) {
				k := 0 // the damaged record
				for starts[k+1] <= pos {
					k++
				}
				mask := masks[i%len(masks)]
				name := fmt.Sprintf("record %d byte %d ^%#x", k, pos-starts[k], mask)
				writeTree(t, root, pristine)
				damaged := slices.Clone(data)
				damaged[pos] ^= mask
				os.WriteFile(seg, damaged, 0o644)

				_, err := Open(uri, o)
				var ce *CorruptError
				var kce *kv.CorruptionError
				if !errors.Is(err, ErrCorrupt) || !errors.Is(err, kv.ErrCorruption) || !errors.As(err, &ce) || !errors.As(err, &kce) {
					t.Fatalf("%s: open: %v; want a *CorruptError", name, err)
				}
				if ce.Segment != seg || ce.Offset != int64(starts[k]) || ce.Intact != k || kce.File != seg {
					t.Fatalf("%s: open: %+v; want segment %s, offset %d, %d intact", name, ce, seg, starts[k], k)
				}
				cmd := "kv0 wal salvage /data/db.lance --wal-dir " + root
				if msg := err.Error(); !strings.Contains(msg, seg) || !strings.Contains(msg, cmd) {
					t.Fatalf("%s: message %q names neither %s nor %q", name, msg, seg, cmd)
				}
				before := readTree(t, root)

				rep, err := Check(uri, o)
				if err != nil {
					t.Fatalf("%s: check: %v", name, err)
				}
				if len(rep.Damaged) != 1 || rep.Damaged[0].Segment != seg || rep.Damaged[0].Offset != int64(starts[k]) ||
					rep.Damaged[0].Intact != k || rep.Damaged[0].Writer != id || rep.Records != k {
					t.Fatalf("%s: check: %+v", name, rep)
				}
				if want := int64(lastNonZero(damaged[starts[k]:]) + 1); rep.Damaged[0].LostBytes != want {
					t.Fatalf("%s: check: %d bytes lost, want %d", name, rep.Damaged[0].LostBytes, want)
				}
				sameTree(t, name+": check", readTree(t, root), before)

				rep, err = Salvage(uri, o)
				if err != nil {
					t.Fatalf("%s: salvage: %v", name, err)
				}
				if len(rep.Damaged) != 1 || rep.Damaged[0].Intact != k || rep.Records != k {
					t.Fatalf("%s: salvage: %+v", name, rep)
				}
				moved := rep.Damaged[0].MovedTo
				if want := filepath.Join(filepath.Dir(filepath.Dir(seg)), "damaged", id, filepath.Base(seg)+".damaged"); moved != want {
					t.Fatalf("%s: moved to %s, want %s", name, moved, want)
				}
				if b, err := os.ReadFile(moved); err != nil || !bytes.Equal(b, damaged) {
					t.Fatalf("%s: the set-aside copy differs from the damaged segment (%v)", name, err)
				}
				if b, _ := os.ReadFile(seg); !bytes.Equal(b, data[:starts[k]]) {
					t.Fatalf("%s: segment holds %d bytes, want the %d of the intact records", name, len(b), starts[k])
				}
				after := readTree(t, root)
				again, err := Salvage(uri, o)
				if err != nil || len(again.Damaged) != 0 || again.Records != k || !slices.Equal(again.SetAside, []string{moved}) {
					t.Fatalf("%s: second salvage: %+v, %v", name, again, err)
				}
				sameTree(t, name+": second salvage", readTree(t, root), after)

				l2, err := Open(uri, o)
				if err != nil {
					t.Fatalf("%s: open after salvage: %v", name, err)
				}
				if got := claimedBodies(l2); !slices.Equal(got, bodies[:k]) {
					t.Fatalf("%s: replayed %d records, want the %d before the damage", name, len(got), k)
				}
				l2.Close(true)
			}
		})
	}
}

// TestSalvageLaterSegments damages the second of three segments: the
// first segment and the second's records before the damage are kept, the
// third is set aside unreplayed (as .after-damage) and reported.
func TestSalvageLaterSegments(t *testing.T) {
	o := Options{Dir: t.TempDir(), Mode: SyncAlways}
	l := mustOpen(t, o)
	appendAll(t, l, 1, "a1", "a2")
	l.Rotate()
	appendAll(t, l, 3, "b1", "b2", "b3")
	l.Rotate()
	appendAll(t, l, 6, "c1", "c2")
	l.Close(false)
	segs, _ := segments(OSFS{}, l.Dir())
	second, third := filepath.Join(l.Dir(), segs[1]), filepath.Join(l.Dir(), segs[2])
	data, _ := os.ReadFile(second)
	starts := recordStarts(t, data)
	data[starts[2]+headerSize+3] ^= 0x40 // inside b3
	os.WriteFile(second, data, 0o644)
	thirdData, _ := os.ReadFile(third)

	rep, err := Salvage(uri, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Damaged) != 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Damaged[0]
	if d.Segment != second || d.Intact != 4 || !slices.Equal(d.Later, []string{third}) || d.LaterRecords != 2 ||
		d.LaterBytes != int64(len(thirdData)) || len(d.LaterMovedTo) != 1 {
		t.Fatalf("damage %+v", d)
	}
	if !strings.HasSuffix(d.LaterMovedTo[0], filepath.Join("damaged", l.WriterID(), segs[2]+".after-damage")) {
		t.Fatalf("later segment moved to %s", d.LaterMovedTo[0])
	}
	if b, err := os.ReadFile(d.LaterMovedTo[0]); err != nil || !bytes.Equal(b, thirdData) {
		t.Fatalf("set-aside later segment differs: %v", err)
	}
	if _, err := os.Stat(third); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("later segment still in the writer's log: %v", err)
	}
	l2 := mustOpen(t, o)
	defer l2.Close(true)
	if got := claimedBodies(l2); !slices.Equal(got, []string{"a1", "a2", "b1", "b2"}) {
		t.Fatalf("replayed %q", got)
	}
}

// TestSalvageHealthy: Check and Salvage of healthy logs (several writers,
// several segments, one log running) report no damage, count every
// record and change no file; a location without a log reports nothing.
func TestSalvageHealthy(t *testing.T) {
	o := Options{Dir: t.TempDir(), Mode: SyncAlways}
	if rep, err := Check(uri, o); err != nil || rep.Exists || rep.Records != 0 {
		t.Fatalf("check without a log: %+v, %v", rep, err)
	}
	a, b := mustOpen(t, o), mustOpen(t, o)
	appendAll(t, a, 1, "a1", "a2")
	a.Rotate()
	appendAll(t, a, 3, "a3")
	appendAll(t, b, 10, "b1")
	a.Close(false)
	b.Close(false)
	running := mustOpen(t, o) // claims a's and b's logs, so it runs beside a new writer
	defer running.Close(true)
	appendAll(t, running, 20, "r1")
	running.ReleaseClaimed()
	c, d := mustOpen(t, o), mustOpen(t, o)
	appendAll(t, c, 30, "c1", "c2")
	appendAll(t, d, 40, "d1")
	c.Close(false)
	d.Close(false)
	before := readTree(t, o.Dir)
	for _, f := range []func(string, Options) (*Report, error){Check, Salvage} {
		rep, err := f(uri, o)
		if err != nil {
			t.Fatal(err)
		}
		if !rep.Exists || rep.Records != 3 || rep.Writers != 2 || len(rep.Damaged) != 0 || len(rep.Torn) != 0 ||
			!slices.Equal(rep.Busy, []string{running.Dir()}) {
			t.Fatalf("report %+v", rep)
		}
		sameTree(t, "healthy log", readTree(t, o.Dir), before)
	}
}

// tornShapes are appends cut short by a crash, as they end a segment.
var tornShapes = map[string]func(full []byte, at int) []byte{
	"header cut":     func(full []byte, at int) []byte { return full[:5] },
	"payload cut":    func(full []byte, at int) []byte { return full[:len(full)-3] },
	"length garbage": func(full []byte, at int) []byte { return []byte{0xff, 0xff, 0xff, 0x7f, 1, 2} },
	"zeroed tail":    func(full []byte, at int) []byte { return make([]byte, 40) },
	// A mapped segment: length and payload stored, checksum not yet,
	// then the zeros of the reserved space.
	"unfinished mapped": func(full []byte, at int) []byte {
		c := slices.Clone(full)
		clear(c[4:headerSize])
		return append(c, make([]byte, 4096)...)
	},
	"partial payload mapped": func(full []byte, at int) []byte {
		c := slices.Clone(full)
		clear(c[4:headerSize])
		clear(c[headerSize+3:])
		return append(c, make([]byte, 4096)...)
	},
	// The machine stopped before the record's second page reached the
	// disk: zeros from the page boundary on.
	"page never written": func(full []byte, at int) []byte {
		c := slices.Clone(full)
		clear(c[(at+pageSize)&^(pageSize-1)-at:])
		return c
	},
	"page never written mapped": func(full []byte, at int) []byte {
		c := slices.Clone(full)
		clear(c[(at+pageSize)&^(pageSize-1)-at:])
		return append(c, make([]byte, 8192)...)
	},
}

func TestTornTail(t *testing.T) {
	for name, tail := range tornShapes {
		t.Run(name, func(t *testing.T) {
			o := Options{Dir: t.TempDir()}
			l := mustOpen(t, o)
			appendAll(t, l, 1, "a", "b")
			l.Close(false)
			seg := lastSegment(t, l.Dir())
			before, _ := os.ReadFile(seg)
			full := appendRecord(nil, rec(3, strings.Repeat("torn", 1500)))
			f, _ := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
			f.Write(tail(full, len(before)))
			f.Close()

			// Not damage: Check reports the torn append, Salvage changes
			// nothing.
			tree := readTree(t, o.Dir)
			rep, err := Check(uri, o)
			if err != nil || len(rep.Damaged) != 0 || rep.Records != 2 {
				t.Fatalf("check: %+v, %v", rep, err)
			}
			if name != "zeroed tail" && (len(rep.Torn) != 1 || rep.Torn[0].Offset != int64(len(before))) {
				t.Fatalf("check reports torn %+v, want one at %d", rep.Torn, len(before))
			}
			if rep, err := Salvage(uri, o); err != nil || len(rep.Damaged) != 0 {
				t.Fatalf("salvage: %+v, %v", rep, err)
			}
			sameTree(t, "salvage of a torn tail", readTree(t, o.Dir), tree)

			l2 := mustOpen(t, o)
			defer l2.Close(true)
			if got := claimedBodies(l2); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("replayed %q", got)
			}
			after, _ := os.ReadFile(seg)
			if !bytes.Equal(after, before) {
				t.Fatalf("torn tail not cut: %d bytes, want %d", len(after), len(before))
			}
		})
	}
}

// noSyncFS is the OS file system without fsyncs, for tests that do many
// salvages and whose subject is not durability.
type noSyncFS struct{ OSFS }

type noSyncFile struct{ File }

func (noSyncFile) Sync() error { return nil }

func (f noSyncFS) Create(name string) (File, error) {
	file, err := f.OSFS.Create(name)
	if err != nil {
		return nil, err
	}
	return noSyncFile{file}, nil
}

func (noSyncFS) SyncDir(string) error { return nil }

// renameFaultFS fails renames whose source or target contains a string.
type renameFaultFS struct {
	OSFS
	failOn string
}

func (f *renameFaultFS) Rename(from, to string) error {
	if f.failOn != "" && (strings.Contains(from, f.failOn) || strings.Contains(to, f.failOn)) {
		return errors.New("injected rename failure")
	}
	return f.OSFS.Rename(from, to)
}

// TestSalvageInterrupted stops a salvage at each of its steps (a failed
// rename): the log still fails Open (the damage is in place) or already
// opens with the intact records, and a second salvage finishes with the
// same result and a single copy of each set-aside segment.
func TestSalvageInterrupted(t *testing.T) {
	for _, failOn := range []string{tmpPrefix, afterExt, salvagePrefix} {
		t.Run(failOn, func(t *testing.T) {
			fsys := &renameFaultFS{}
			o := Options{Dir: t.TempDir(), Mode: SyncAlways, FS: fsys}
			l := mustOpen(t, o)
			appendAll(t, l, 1, "a1", "a2", "a3")
			l.Rotate()
			appendAll(t, l, 4, "b1")
			l.Close(false)
			segs, _ := segments(OSFS{}, l.Dir())
			first := filepath.Join(l.Dir(), segs[0])
			data, _ := os.ReadFile(first)
			starts := recordStarts(t, data)
			data[starts[1]] ^= 0xff // the length of a2
			os.WriteFile(first, data, 0o644)

			fsys.failOn = failOn
			if _, err := Salvage(uri, o); err == nil {
				t.Fatal("salvage with a failing rename succeeded")
			}
			if _, err := Open(uri, o); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("open after an interrupted salvage: %v", err)
			}
			fsys.failOn = ""
			rep, err := Salvage(uri, o)
			if err != nil || len(rep.Damaged) != 1 || rep.Damaged[0].Intact != 1 {
				t.Fatalf("second salvage: %+v, %v", rep, err)
			}
			if len(rep.SetAside) != 2 {
				t.Fatalf("set aside %q, want one copy of each segment", rep.SetAside)
			}
			tree := readTree(t, o.Dir)
			for name := range tree {
				if strings.Contains(name, salvagePrefix) || strings.Contains(name, tmpPrefix) {
					t.Fatalf("left %s behind", name)
				}
			}
			l2 := mustOpen(t, o)
			defer l2.Close(true)
			if got := claimedBodies(l2); !slices.Equal(got, []string{"a1"}) {
				t.Fatalf("replayed %q", got)
			}
		})
	}
}

func TestCorruptErrorCommand(t *testing.T) {
	for _, c := range []struct{ uri, dir, want string }{
		{"file:///data/db.lance", "", "kv0 wal salvage /data/db.lance"},
		{"repo:/data/my runs", "", "kv0 wal salvage '/data/my runs'"},
		{"repo:s3://bucket/team", "/tmp/w", "kv0 wal salvage s3://bucket/team --wal-dir /tmp/w"},
		{"file:///it's", "", `kv0 wal salvage '/it'\''s'`},
	} {
		e := &CorruptError{Location: LocationOf(c.uri), WALDir: c.dir}
		if got := e.Command(); got != c.want {
			t.Errorf("%s: %q, want %q", c.uri, got, c.want)
		}
	}
}

// FuzzFlipIsDamage builds a segment from the fuzzer's record bodies
// (optionally followed by the zeros of a mapped segment), changes one
// byte, and checks what a parse makes of it: a change inside a record is
// damage at that record's start, never a torn tail, and the records before
// it read back whole; a change in the zeros past the records never costs a
// record.
func FuzzFlipIsDamage(f *testing.F) {
	f.Add([]byte("hello\x00world\x00x"), uint16(3), byte(0xff), false)
	f.Add([]byte("a\x00bb\x00ccc"), uint16(30), byte(0x01), true)
	f.Add([]byte("abc"), uint16(1), byte(0x80), true)
	f.Fuzz(func(t *testing.T, spec []byte, at uint16, mask byte, zeros bool) {
		if mask == 0 {
			return
		}
		var seg []byte
		starts := []int{0}
		for i, body := range bytes.Split(spec, []byte{0}) {
			seg = appendRecord(seg, rec(uint64(i+1), string(body)))
			starts = append(starts, len(seg))
		}
		n := len(seg)
		if zeros {
			seg = append(seg, make([]byte, 4096)...)
		}
		pos := int(at) % len(seg)
		orig := slices.Clone(seg)
		seg[pos] ^= mask
		p := parseSegment(seg)
		if pos >= n {
			if len(p.records) != len(starts)-1 {
				t.Fatalf("a change in the unused space at %d lost records: %d of %d", pos, len(p.records), len(starts)-1)
			}
			return
		}
		k := 0
		for starts[k+1] <= pos {
			k++
		}
		if p.badAt != int64(starts[k]) || len(p.records) != k {
			t.Fatalf("change at %d (record %d at %d): bad at %d after %d records", pos, k, starts[k], p.badAt, len(p.records))
		}
		if p.torn && !(k == len(starts)-2 && zeroPageTail(orig, starts[k], starts[k+1])) {
			// (A last record ending in a page of zeros of its own is the
			// one a changed byte before that page makes look torn.)
			t.Fatalf("change at %d (record %d at %d) taken for a torn tail (%s)", pos, k, starts[k], p.why)
		}
		for i, r := range p.records {
			if s, _ := recordSeq(r.payload); s != uint64(i+1) || binary.LittleEndian.Uint64(r.payload[1:]) != s {
				t.Fatalf("record %d reads back as seq %d", i, s)
			}
		}
	})
}
