package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
)

// kvModel is the reference the key-value store is checked against.
type kvModel map[string][]byte

func (m kvModel) keys() []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// checkKV compares every read path of db with the model: Get of every
// model key and of a missing key, MultiGet, forward and backward
// iteration, and a bounded iterator with SeekGE.
func checkKV(t *testing.T, db *kv.DB, m kvModel, keySpace int) {
	t.Helper()
	ctx := context.Background()
	var probe [][]byte
	for i := range keySpace {
		k := kvKey(i)
		probe = append(probe, []byte(k))
		v, err := db.Get(ctx, []byte(k))
		want, ok := m[k]
		switch {
		case ok && (err != nil || !bytes.Equal(v, want)):
			t.Fatalf("Get(%s) = %d bytes, %v; want %d bytes", k, len(v), err, len(want))
		case !ok && !errors.Is(err, kv.ErrNotFound):
			t.Fatalf("Get(%s) = %d bytes, %v; want ErrNotFound", k, len(v), err)
		}
	}
	vals, err := db.MultiGet(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range probe {
		if want, ok := m[string(k)]; ok != (vals[i] != nil) || !bytes.Equal(vals[i], want) {
			t.Fatalf("MultiGet(%s) = %d bytes, want %d (present %v)", k, len(vals[i]), len(want), ok)
		}
	}
	keys := m.keys()
	it, err := db.NewIter(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var fwd []string
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.Equal(it.Value(), m[string(it.Key())]) {
			t.Fatalf("iterator value of %s differs", it.Key())
		}
		fwd = append(fwd, string(it.Key()))
	}
	var back []string
	for ok := it.Last(); ok; ok = it.Prev() {
		back = append(back, string(it.Key()))
	}
	if err := it.Error(); err != nil {
		t.Fatal(err)
	}
	it.Close()
	slices.Reverse(back)
	if !slices.Equal(fwd, keys) || !slices.Equal(back, keys) {
		t.Fatalf("iteration: %d keys forward, %d backward, want %d", len(fwd), len(back), len(keys))
	}
	lo, hi := kvKey(keySpace/4), kvKey(keySpace/2)
	it, err = db.NewIter(ctx, &kv.IterOptions{LowerBound: []byte(lo), UpperBound: []byte(hi)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var got, want []string
	for ok := it.SeekGE([]byte(kvKey(keySpace / 3))); ok; ok = it.Next() {
		got = append(got, string(it.Key()))
	}
	for _, k := range keys {
		if k >= kvKey(keySpace/3) && k >= lo && k < hi {
			want = append(want, k)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("bounded iteration: %v, want %v", got, want)
	}
}

func kvKey(i int) string { return fmt.Sprintf("key-%05d", i) }

// TestKVModelOnS3 (OnGCS, OnAzure: the same on the emulators) drives a
// key-value database on S3 (WAL and snapshot on
// local disk) with random puts, deletes, range deletes and batches, some
// values large enough to stay in the log and be read back by range, and
// compares it with a map after explicit flushes, a compaction and reopens,
// including a reopen with an empty local WAL folder (everything must come
// from S3).
func TestKVModelOnS3(t *testing.T)    { kvModelSuite(t, s3Backend()) }
func TestKVModelOnGCS(t *testing.T)   { kvModelSuite(t, gcsBackend()) }
func TestKVModelOnAzure(t *testing.T) { kvModelSuite(t, azureBackend()) }

func kvModelSuite(t *testing.T, b backend) {
	b.need(t)
	ctx := context.Background()
	loc := b.newURI(t.Name()) + "/db"
	walDir := t.TempDir()
	opts := func(dir string) kvdb.Options {
		return kvdb.Options{
			WALDir:   dir,
			Location: b.loc,
			DB: kv.Options{
				FlushInterval:      -1,
				RefreshInterval:    -1,
				LazyValueThreshold: 512,
				MaxFragments:       -1,
			},
		}
	}
	open := func(dir string) *kv.DB {
		t.Helper()
		db, err := kvdb.Open(ctx, loc, opts(dir))
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	const keySpace = 300
	rng := rand.New(rand.NewPCG(6, 1))
	value := func(i, round int) []byte {
		n := 1 + rng.IntN(64)
		if rng.IntN(5) == 0 {
			n = 600 + rng.IntN(3000) // lazy: read back from the log
		}
		return bytes.Repeat([]byte(fmt.Sprintf("%d/%d.", i, round)), n/4+1)
	}
	m := kvModel{}
	db := open(walDir)
	for round := range 6 {
		for range 150 {
			i := rng.IntN(keySpace)
			k := kvKey(i)
			switch op := rng.IntN(10); {
			case op < 6:
				v := value(i, round)
				if err := db.Put(ctx, []byte(k), v, nil); err != nil {
					t.Fatal(err)
				}
				m[k] = v
			case op < 8:
				if err := db.Delete(ctx, []byte(k), nil); err != nil {
					t.Fatal(err)
				}
				delete(m, k)
			case op < 9:
				end := kvKey(min(i+1+rng.IntN(8), keySpace))
				if err := db.DeleteRange(ctx, []byte(k), []byte(end), nil); err != nil {
					t.Fatal(err)
				}
				for key := range m {
					if key >= k && key < end {
						delete(m, key)
					}
				}
			default:
				b := db.NewBatch()
				for j := range 5 {
					kk := kvKey((i + j) % keySpace)
					v := value(i+j, round)
					b.Put([]byte(kk), v)
					m[kk] = v
				}
				if err := db.Write(ctx, b, nil); err != nil {
					t.Fatal(err)
				}
			}
		}
		checkKV(t, db, m, keySpace) // buffered and committed mixed
		if err := db.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		checkKV(t, db, m, keySpace)
		switch round {
		case 2:
			if err := db.CompactRange(ctx, nil, nil); err != nil {
				t.Fatal(err)
			}
			checkKV(t, db, m, keySpace)
		case 1, 4:
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db = open(walDir)
			checkKV(t, db, m, keySpace)
		}
	}
	vs, err := db.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) < 7 {
		t.Fatalf("%d versions on S3, want at least one per flush", len(vs))
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// A writer with no local state at all sees the same database.
	db = open(t.TempDir())
	checkKV(t, db, m, keySpace)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// So does a read-only handle, which writes nothing.
	ro := opts(t.TempDir())
	ro.DB.ReadOnly = true
	rdb, err := kvdb.Open(ctx, loc, ro)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	checkKV(t, rdb, m, keySpace)
	if err := rdb.Put(ctx, []byte("x"), []byte("y"), nil); !errors.Is(err, kv.ErrNotSupported) {
		t.Fatalf("Put on a read-only handle: %v", err)
	}
}

// TestKVTwoWritersOnS3 (and OnGCS, OnAzure) has two handles with separate local WALs write
// disjoint keys to one database on S3; after Refresh each sees the other's
// committed writes.
func TestKVTwoWritersOnS3(t *testing.T)    { kvTwoWritersSuite(t, s3Backend()) }
func TestKVTwoWritersOnGCS(t *testing.T)   { kvTwoWritersSuite(t, gcsBackend()) }
func TestKVTwoWritersOnAzure(t *testing.T) { kvTwoWritersSuite(t, azureBackend()) }

func kvTwoWritersSuite(t *testing.T, b backend) {
	b.need(t)
	ctx := context.Background()
	loc := b.newURI(t.Name()) + "/db"
	o := kvdb.Options{Location: b.loc,
		DB: kv.Options{FlushInterval: -1, RefreshInterval: -1}}
	var dbs [2]*kv.DB
	for i := range dbs {
		o.WALDir = t.TempDir()
		db, err := kvdb.Open(ctx, loc, o)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	m := kvModel{}
	for round := range 3 {
		for i, db := range dbs {
			for j := range 20 {
				k := fmt.Sprintf("w%d-%02d-%02d", i, round, j)
				v := []byte(k + "!")
				if err := db.Put(ctx, []byte(k), v, &kv.WriteOptions{Sync: j == 19}); err != nil {
					t.Fatal(err)
				}
				m[k] = v
			}
		}
		for _, db := range dbs {
			if err := db.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			it, err := db.NewIter(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for ok := it.First(); ok; ok = it.Next() {
				got = append(got, string(it.Key()))
			}
			it.Close()
			if !slices.Equal(got, m.keys()) {
				t.Fatalf("round %d: a writer sees %d keys, want %d", round, len(got), len(m))
			}
		}
	}
}
