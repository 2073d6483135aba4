package interop

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
)

// TestKVLanceDBScan writes a key-value database with kv0 (puts, deletes,
// range deletes, batches, large and binary values, a compaction, WAL marks),
// then checks that lancedb scans its operation log and, applying the same
// newest-seq-wins rules in JavaScript (kv.mjs), sees exactly the live rows
// that `kv0 kv scan` prints. Then lancedb writes a put and a tombstone to
// the log, with the next seqs, and compacts it: kv0 sees both, and lancedb
// agrees again.
func TestKVLanceDBScan(t *testing.T) {
	forEachInstall(t, func(t *testing.T, in *lanceInstall) {
		forEachFormat(t, in, func(t *testing.T, format string) { testKVLanceDBScan(t, in, format) })
	})
}

func testKVLanceDBScan(t *testing.T, in *lanceInstall, format string) {
	ctx := context.Background()
	root := t.TempDir()
	dbPath := filepath.Join(root, "kv.lance")
	walDir := t.TempDir()
	opts := kvdb.Options{WALDir: walDir, DB: kv.Options{FlushInterval: -1, RefreshInterval: -1, MaxFragments: -1, LazyValueThreshold: 256}}
	opts.Log.DataFormat = format
	db, err := kvdb.Open(ctx, dbPath, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	rng := rand.New(rand.NewPCG(7, 7))
	key := func() string {
		if rng.IntN(10) == 0 {
			return string([]byte{0, byte(rng.IntN(256)), 0xff})
		}
		return fmt.Sprintf("key/%03d", rng.IntN(400))
	}
	for round := range 8 {
		for i := range 150 {
			k := key()
			switch r := rng.IntN(20); {
			case r < 14:
				v := fmt.Sprintf("v%d.%d", round, i)
				if r == 0 {
					v = strings.Repeat(v, 100) // above the lazy threshold
				}
				if r == 1 {
					v = ""
				}
				if err := db.Put(ctx, []byte(k), []byte(v), nil); err != nil {
					t.Fatal(err)
				}
				want[k] = v
			case r < 18:
				if err := db.Delete(ctx, []byte(k), nil); err != nil {
					t.Fatal(err)
				}
				delete(want, k)
			case r < 19:
				e := key()
				if e < k {
					k, e = e, k
				}
				if err := db.DeleteRange(ctx, []byte(k), []byte(e), nil); err != nil {
					t.Fatal(err)
				}
				for x := range want {
					if x >= k && x < e {
						delete(want, x)
					}
				}
			default:
				b := db.NewBatch()
				k2 := key()
				b.Put([]byte(k), []byte("batch"))
				b.Delete([]byte(k2))
				if err := db.Write(ctx, b, nil); err != nil {
					t.Fatal(err)
				}
				want[k] = "batch"
				delete(want, k2)
			}
		}
		if err := db.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if round == 4 {
			if err := db.CompactRange(ctx, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	requireFormat(t, dbPath, format)

	scan := func(stage string) {
		t.Helper()
		var expect strings.Builder
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&expect, "%s\t%s\n", hex.EncodeToString([]byte(k)), hex.EncodeToString([]byte(want[k])))
		}
		fromKV0, err := exec.Command(kv0Binary, "kv", "scan", "--hex", "--wal-dir", walDir, dbPath).Output()
		if err != nil {
			t.Fatalf("%s: kv0 kv scan: %v", stage, err)
		}
		js := in.command("kv.mjs", "scan", root)
		var stderr bytes.Buffer
		js.Stderr = &stderr
		fromLanceDB, err := js.Output()
		if err != nil {
			t.Fatalf("%s: node kv.mjs scan: %v\n%s", stage, err, tail(stderr.String(), 4000))
		}
		t.Logf("%s: lancedb %s: %s; %d live keys", stage, in.lancedb, strings.TrimSpace(stderr.String()), len(keys))
		if string(fromKV0) != expect.String() {
			t.Fatalf("%s: kv0 kv scan differs from the model:\n%s", stage, firstDiff(string(fromKV0), expect.String()))
		}
		if string(fromLanceDB) != string(fromKV0) {
			t.Fatalf("%s: lancedb's live rows differ from kv0 kv scan:\n%s", stage, firstDiff(string(fromLanceDB), string(fromKV0)))
		}
	}
	scan("written by kv0")

	js := in.command("kv.mjs", "mutate", root)
	var stderr bytes.Buffer
	js.Stderr = &stderr
	out, err := js.Output()
	if err != nil {
		t.Fatalf("node kv.mjs mutate: %v\n%s", err, tail(stderr.String(), 4000))
	}
	var changed struct {
		Put     [2]string `json:"put"`
		Deleted string    `json:"deleted"`
	}
	if err := json.Unmarshal(out, &changed); err != nil {
		t.Fatalf("kv.mjs mutate printed %q: %v", out, err)
	}
	unhex := func(h string) string {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatalf("kv.mjs mutate printed %q: %v", out, err)
		}
		return string(b)
	}
	gone := unhex(changed.Deleted)
	if _, ok := want[gone]; !ok {
		t.Fatalf("lancedb deleted %q, which is not live", gone)
	}
	delete(want, gone)
	want[unhex(changed.Put[0])] = unhex(changed.Put[1])
	requireFormat(t, dbPath, format)
	scan("after lancedb's put, tombstone and compaction")
}

func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: got %q, want %q (%d vs %d lines)", i+1, a, b, len(g), len(w))
		}
	}
	return "equal"
}
