package interop

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/native/kvdb"
)

// TestKVLanceDBScan writes a key-value database with kv0 (puts, deletes,
// range deletes, batches, large and binary values, a compaction, WAL marks),
// then checks that lancedb scans its operation log and, applying the same
// newest-seq-wins rules in JavaScript (kv.mjs), sees exactly the live rows
// that `kv0 kv scan` prints.
func TestKVLanceDBScan(t *testing.T) {
	requireBinary(t)
	node, err := exec.LookPath("node")
	if err != nil {
		if inCI() {
			t.Fatalf("CI=true but node is missing: %v", err)
		}
		t.Skip("node not found: skipping (the test fails instead when CI=true)")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@lancedb", "lancedb")); err != nil {
		if setupErr != nil {
			t.Fatal(setupErr)
		}
		if inCI() {
			t.Fatalf("CI=true but node_modules/@lancedb/lancedb is missing: %v", err)
		}
		t.Skip("node_modules missing: run npm ci in tests/interop")
	}

	ctx := context.Background()
	root := t.TempDir()
	dbPath := filepath.Join(root, "kv.lance")
	walDir := t.TempDir()
	// lancedb 0.31 (lance 8) reads data files of format 2.1 only.
	opts := kvdb.Options{WALDir: walDir, DB: kv.Options{FlushInterval: -1, RefreshInterval: -1, MaxFragments: -1, LazyValueThreshold: 256}}
	opts.Log.DataFormat = lance.DataFormat21
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

	var expect strings.Builder
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&expect, "%s\t%s\n", hex.EncodeToString([]byte(k)), hex.EncodeToString([]byte(want[k])))
	}

	scan := exec.Command(kv0Binary, "kv", "scan", "--hex", "--wal-dir", walDir, dbPath)
	fromKV0, err := scan.Output()
	if err != nil {
		t.Fatalf("kv0 kv scan: %v", err)
	}
	js := exec.Command(node, "kv.mjs", root)
	js.Env = append(os.Environ(), "RUST_LOG=error")
	var stderr bytes.Buffer
	js.Stderr = &stderr
	fromLanceDB, err := js.Output()
	if err != nil {
		t.Fatalf("node kv.mjs: %v\n%s", err, tail(stderr.String(), 4000))
	}
	t.Logf("lancedb: %s; %d live keys", strings.TrimSpace(stderr.String()), len(keys))
	if string(fromKV0) != expect.String() {
		t.Fatalf("kv0 kv scan differs from the model:\n%s", firstDiff(string(fromKV0), expect.String()))
	}
	if string(fromLanceDB) != string(fromKV0) {
		t.Fatalf("lancedb's live rows differ from kv0 kv scan:\n%s", firstDiff(string(fromLanceDB), string(fromKV0)))
	}
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
