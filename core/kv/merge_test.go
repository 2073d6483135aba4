package kv

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The delta on its own: inserts in random order, replacements, point
// reads and cursors both ways from every position, against a sorted model.
func TestDelta(t *testing.T) {
	d := newDelta(nil)
	defer d.unref()
	rng := rand.New(rand.NewPCG(3, 4))
	model := map[string]string{}
	for i := range 20000 {
		// Short keys share prefixes of 8 bytes, so ties go to the arena.
		k := fmt.Sprintf("key%06d", rng.IntN(8000))
		if i%7 == 0 {
			k = fmt.Sprintf("%d", rng.IntN(300))
		}
		v := fmt.Sprint(i)
		d.setPut(uint64(i+1), []byte(k), []byte(v))
		model[k] = v
	}
	if d.n != len(model) {
		t.Fatalf("n = %d, want %d", d.n, len(model))
	}
	keys := make([]string, 0, len(model))
	for k := range model {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var got []string
	for c := d.seekGE(nil); c.valid(); c.next() {
		_, e := c.item()
		got = append(got, string(entryKey(e)))
		if string(entryPayload(e)) != model[string(entryKey(e))] {
			t.Fatalf("value of %s", entryKey(e))
		}
	}
	if !slices.Equal(got, keys) {
		t.Fatalf("forward walk differs (%d keys, want %d)", len(got), len(keys))
	}
	got = got[:0]
	for c := d.seekLE(nil); c.valid(); c.prev() {
		_, e := c.item()
		got = append(got, string(entryKey(e)))
	}
	slices.Reverse(got)
	if !slices.Equal(got, keys) {
		t.Fatal("backward walk differs")
	}
	for i := range 3000 {
		probe := fmt.Sprintf("key%06d", rng.IntN(8100))
		if i%3 == 0 {
			probe = fmt.Sprintf("%d", rng.IntN(400))
		}
		e := d.get([]byte(probe))
		if v, ok := model[probe]; ok != (e != nil) || (ok && string(entryPayload(e)) != v) {
			t.Fatalf("get %q", probe)
		}
		j, _ := slices.BinarySearch(keys, probe)
		c := d.seekGE([]byte(probe))
		if (j < len(keys)) != c.valid() || (c.valid() && string(entryKey(c.d.entry(c.lf.ref[c.i]))) != keys[j]) {
			t.Fatalf("seekGE %q", probe)
		}
		if j < len(keys) && keys[j] == probe {
			j++
		}
		c = d.seekLE([]byte(probe))
		if (j > 0) != c.valid() || (c.valid() && string(entryKey(c.d.entry(c.lf.ref[c.i]))) != keys[j-1]) {
			t.Fatalf("seekLE %q", probe)
		}
	}
}

// Background merges against concurrent readers, frozen copies and
// synchronous merges: every read under the lock sees exactly the writes
// made so far, a frozen copy keeps seeing the state it was taken at, and
// in the end the merges leave one base run holding everything. Run with
// -race.
func TestBackgroundMerge(t *testing.T) {
	// Small blocks and steps: merges splice many stretches.
	defer func(c, s int) { baseChunkSize, mergeStep = c, s }(baseChunkSize, mergeStep)
	baseChunkSize, mergeStep = 4096, 3
	var mu sync.RWMutex
	blocks := &checkedBlocks{t: t, live: map[*byte]int{}}
	v := newViewAlloc(blocks)
	v.lk = &mu
	model := map[string]string{}
	const n = 12000
	keyOf := func(i int) string { return fmt.Sprintf("k%08d", (i*7919)%5000) }
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 8)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				full := rng.IntN(50) == 0
				mu.RLock()
				size := len(model)
				count := 0
				if full {
					v.ascend(nil, func(e entry) bool {
						if entryKind(e) == kindPut {
							count++
						}
						return true
					})
				} else {
					count = size
				}
				k := keyOf(rng.IntN(n))
				// An entry is valid only under the lock: a merge may free
				// its block once the lock is released.
				e := v.lookup([]byte(k))
				want, ok := model[k]
				bad := ok != (e != nil) || (ok && string(entryPayload(e)) != want)
				got := string(e)
				mu.RUnlock()
				if count != size {
					errs <- fmt.Errorf("walk saw %d keys, want %d", count, size)
					return
				}
				if bad {
					errs <- fmt.Errorf("lookup %s: %q, want %q", k, got, want)
					return
				}
			}
		}()
	}
	var frozen []*view
	var frozenWant []map[string]string
	for i := range n {
		k, val := keyOf(i), fmt.Sprint(i)
		mu.Lock()
		if i%97 == 0 {
			v.applyDeleteRange(uint64(i+1), []byte(k), []byte(k+"\x00"))
			delete(model, k)
		} else {
			v.applyPut(uint64(i+1), []byte(k), []byte(val), nil)
			model[k] = val
		}
		if i%3000 == 2999 {
			frozen = append(frozen, v.frozen())
			cp := make(map[string]string, len(model))
			for a, b := range model {
				cp[a] = b
			}
			frozenWant = append(frozenWant, cp)
		}
		if i == n/2 {
			v.merge(nil) // voids the running background merge
		}
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, f := range frozen {
		got := map[string]string{}
		f.ascend(nil, func(e entry) bool {
			if entryKind(e) == kindPut {
				got[string(entryKey(e))] = string(entryPayload(e))
			}
			return true
		})
		if len(got) != len(frozenWant[i]) {
			t.Fatalf("frozen copy %d holds %d keys, want %d", i, len(got), len(frozenWant[i]))
		}
		for k, val := range frozenWant[i] {
			if got[k] != val {
				t.Fatalf("frozen copy %d: %s = %q, want %q", i, k, got[k], val)
			}
		}
		f.release()
	}
	v.wait()
	mu.Lock()
	defer mu.Unlock()
	var prev []byte
	count := 0
	v.ascend(nil, func(e entry) bool {
		if prev != nil && bytes.Compare(prev, entryKey(e)) >= 0 {
			t.Fatalf("out of order: %s after %s", entryKey(e), prev)
		}
		prev = clone(entryKey(e))
		if entryKind(e) == kindPut {
			count++
			if model[string(entryKey(e))] != string(entryPayload(e)) {
				t.Fatalf("%s = %q", entryKey(e), entryPayload(e))
			}
		}
		return true
	})
	if count != len(model) {
		t.Fatalf("%d keys, want %d", count, len(model))
	}
	if v.base.n == 0 {
		t.Fatal("no merge ran")
	}
	// Merges carry each step's last block into the next: the base is
	// made of full blocks but its last.
	for i, c := range v.base.chunks[:len(v.base.chunks)-1] {
		if !c.nearlyFull() {
			t.Fatalf("base block %d of %d: %d of %d bytes used", i, len(v.base.chunks), c.used+c.n*slotSize, len(c.data))
		}
	}
	v.release()
	if n := blocks.count(); n != 0 {
		t.Fatalf("%d blocks not freed after release", n)
	}
}

// checkedBlocks is a BlockAllocator that fills a freed block with 0xff
// (so a read after Free sees garbage), fails the test on a double or
// foreign Free, and counts the blocks not freed.
type checkedBlocks struct {
	t    *testing.T
	mu   sync.Mutex
	live map[*byte]int
}

func (c *checkedBlocks) Alloc(n int) []byte {
	b := make([]byte, n)
	c.mu.Lock()
	c.live[&b[0]] = n
	c.mu.Unlock()
	return b
}

func (c *checkedBlocks) Free(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.live[&b[0]]; !ok {
		c.t.Errorf("Free of a block that is not allocated")
		return
	}
	delete(c.live, &b[0])
	for i := range b {
		b[i] = 0xff
	}
}

func (c *checkedBlocks) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.live)
}

// A snapshot large enough to be checksummed while it is decoded: a flipped
// value byte (every entry still well-formed) is caught by the checksum.
func TestLargeSnapshotChecksum(t *testing.T) {
	v := newView()
	val := bytes.Repeat([]byte("v"), 100)
	for i := range 20000 {
		v.applyPut(uint64(i+1), fmt.Appendf(nil, "key%08d", i), val, nil)
	}
	data := encodeSnapshot(nil, 4096, 1, nil, v)
	if len(data) < 1<<20 {
		t.Fatalf("snapshot of %d bytes is too small for the test", len(data))
	}
	s, err := decodeSnapshot(data, "snap", true)
	if err != nil {
		t.Fatal(err)
	}
	if dump(s.view) != dump(v) {
		t.Fatal("decoded view differs")
	}
	s.view.release()
	i := bytes.LastIndex(data, val) + 50
	data[i] ^= 1
	if _, err := decodeSnapshot(data, "snap", true); err == nil {
		t.Fatal("damaged snapshot accepted")
	}
}

// Snapshots of many entries decode in parts side by side: the result
// equals the view encoded, and entries out of order across the boundary of
// two parts (each part sorted on its own) are refused.
func TestSnapshotParallelDecode(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	v := newView()
	n := parallelEntries + 1000
	for i := range n {
		v.applyPut(uint64(i+1), fmt.Appendf(nil, "key%08d", i), []byte("v"), nil)
	}
	data := encodeSnapshot(nil, 16, 1, nil, v)
	s, err := decodeSnapshot(data, "snap", true)
	if err != nil {
		t.Fatal(err)
	}
	if s.view.base.n != n || dump(s.view) != dump(v) {
		t.Fatal("decoded view differs")
	}
	s.view.release()
	for _, parts := range []int{2, 3, 4} {
		runtime.GOMAXPROCS(parts)
		per := (n + parts - 1) / parts
		body := []byte(snapMagic)
		for _, x := range []uint64{16, 1, 9, 0, 0, uint64(n)} { // threshold, version, max seq, fragments, marks, entries
			body = binary.AppendUvarint(body, x)
		}
		for i := range n {
			prefix := "b"
			if i >= per {
				prefix = "a" // the second part starts below the first
			}
			body = appendBytes(body, newPut(1, fmt.Appendf(nil, "%s%08d", prefix, i), []byte("1")))
		}
		body = binary.AppendUvarint(body, 0) // spans
		bad := binary.LittleEndian.AppendUint64(body, xxh3Hash(body))
		if _, err := decodeSnapshot(bad, "snap", true); err == nil {
			t.Fatalf("%d parts: entries out of order across parts accepted", parts)
		}
	}
}

// The base run's slots keep 40 bits of each key's prefix and a 24-bit
// offset: keys that tie on those bits are told apart by the keys, and an
// entry past 16 MiB (in a block of its own) is found like any other.
func TestBaseSlots(t *testing.T) {
	bb := newBaseBuilder(nil)
	var keys []string
	for i := range 3000 {
		// Keys share 5 bytes and more, so most comparisons tie on the
		// prefix.
		keys = append(keys, fmt.Sprintf("sharedprefix%06d", i))
	}
	keys = append(keys, "sharedprefix9big")
	slices.Sort(keys)
	huge := bytes.Repeat([]byte("h"), offMask+2)
	for i, k := range keys {
		v := []byte(fmt.Sprint(i))
		if strings.HasSuffix(k, "big") {
			v = huge
		}
		bb.add(newPut(uint64(i+1), []byte(k), v))
	}
	for _, tail := range []string{"sharedprefix9x", "sharedprefix9y"} {
		keys = append(keys, tail)
		bb.add(newPut(9999, []byte(tail), []byte("after the big one")))
	}
	b := bb.finish()
	defer b.release()
	for i, c := range b.chunks {
		if c.used > offMask+1 && c.n != 1 {
			t.Fatalf("block %d of %d bytes holds %d entries", i, len(c.data), c.n)
		}
	}
	for i, k := range keys {
		e := b.get([]byte(k))
		if e == nil || string(entryKey(e)) != k {
			t.Fatalf("get %s: %q", k, e)
		}
		if strings.HasSuffix(k, "big") && len(entryPayload(e)) != len(huge) {
			t.Fatalf("big value of %d bytes", len(entryPayload(e)))
		}
		if c := b.seekGE([]byte(k + "\x00")); i+1 < len(keys) && (!c.valid() || string(entryKey(c.entry())) != keys[i+1]) {
			t.Fatalf("seekGE after %s", k)
		}
	}
	if e := b.get([]byte("sharedprefix000000\x00")); e != nil {
		t.Fatalf("found a missing key: %q", e)
	}
}
