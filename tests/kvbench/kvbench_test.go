// Package kvbench compares kv0's key-value layer with Pebble (v2.1.7) on
// local disk, in one run, on the same keys and values: 16-byte keys,
// 100-byte values, 1M keys (KV0_BENCH_KEYS overrides, e.g. 10000000).
//
// Run it through run.sh, which prints a markdown table:
//
//	bash tests/kvbench/run.sh
//
// or directly (every sub-benchmark does its whole workload once; use
// -benchtime 1x):
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 2h ./tests/kvbench/
//
// Workloads, per engine:
//
//	put-batch   random-order puts, one per call, WAL fsynced about every 100 ms
//	            (kv0 WAL batch mode; Pebble NoSync writes plus a Sync every 100 ms)
//	put-nosync  the same with a WAL that is never fsynced (kv0 none; Pebble NoSync)
//	get         random-order gets of every key, value copied out
//	scan        one forward iteration over every key and value
//	reopen      close, then open and read one key (kv0 with its snapshot)
//	memory      a child process holding only the engine's code (memchild/kv0,
//	            memchild/pebble) loads every key, reads them back and closes
//	            the database; its peak RSS (VmHWM) divided by the raw
//	            key+value bytes
package kvbench

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kv0/kv0/tests/kvbench/kv0engine"
	"github.com/kv0/kv0/tests/kvbench/pebbleengine"
	"github.com/kv0/kv0/tests/kvbench/workload"
)

const (
	keySize   = workload.KeySize
	valueSize = workload.ValueSize
)

var (
	key     = workload.Key
	value   = workload.Value
	mix     = workload.Mix
	numKeys = workload.NumKeys
)

type engine = workload.Engine

var engines = []struct {
	name string
	open workload.Opener
}{
	{"kv0", kv0engine.Open},
	{"pebble", pebbleengine.Open},
}

func benchDir(b *testing.B, name string) string {
	root := os.Getenv("KV0_BENCH_DIR")
	if root == "" {
		return b.TempDir()
	}
	d := filepath.Join(root, name)
	_ = os.RemoveAll(d)
	if err := os.MkdirAll(d, 0o755); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func load(b *testing.B, e engine, n int) {
	if err := workload.Load(e, n); err != nil {
		b.Fatal(err)
	}
}

func opsPerSec(b *testing.B, ops int) {
	b.ReportMetric(float64(ops)*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

// BenchmarkKV runs every workload on every engine.
func BenchmarkKV(b *testing.B) {
	n := numKeys()
	b.Logf("%d keys of %d bytes, values of %d bytes", n, keySize, valueSize)
	for _, eng := range engines {
		b.Run("engine="+eng.name+"/op=put-batch", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				dir := benchDir(b, eng.name+"-batch")
				e, err := eng.open(dir, true)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				load(b, e, n)
				b.StopTimer()
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(dir)
				b.StartTimer()
			}
			opsPerSec(b, n)
		})

		dir := benchDir(b, eng.name+"-nosync")
		var e engine
		b.Run("engine="+eng.name+"/op=put-nosync", func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				if e != nil {
					e.Close()
					os.RemoveAll(dir)
					os.MkdirAll(dir, 0o755)
				}
				var err error
				if e, err = eng.open(dir, false); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				load(b, e, n)
			}
			opsPerSec(b, n)
		})
		if e == nil {
			continue
		}
		b.Run("engine="+eng.name+"/op=get", func(b *testing.B) {
			kb := make([]byte, 0, keySize)
			vb := make([]byte, 0, valueSize+8)
			perm := mix(uint64(n)) | 1
			for b.Loop() {
				for j := range n {
					i := int((uint64(j) * perm) % uint64(n)) // another random order
					v, err := e.Get(key(kb, i))
					if err != nil || string(v) != string(value(vb, i)) {
						b.Fatalf("get %d: %v", i, err)
					}
				}
			}
			opsPerSec(b, n)
		})
		b.Run("engine="+eng.name+"/op=scan", func(b *testing.B) {
			for b.Loop() {
				count, bytes := 0, 0
				if err := e.Scan(func(k, v []byte) { count++; bytes += len(k) + len(v) }); err != nil {
					b.Fatal(err)
				}
				if count != n {
					b.Fatalf("scan saw %d keys", count)
				}
			}
			opsPerSec(b, n)
		})
		b.Run("engine="+eng.name+"/op=reopen", func(b *testing.B) {
			kb := make([]byte, 0, keySize)
			for b.Loop() {
				b.StopTimer()
				if err := e.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var err error
				if e, err = eng.open(dir, false); err != nil {
					b.Fatal(err)
				}
				if _, err := e.Get(key(kb, n/2)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/reopen")
		})
		e.Close()
		b.Run("engine="+eng.name+"/op=memory", func(b *testing.B) {
			bin, err := buildChild(b.TempDir(), eng.name)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				rss, err := runChild(bin, benchDir(b, eng.name+"-mem"))
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(rss)/float64(n*(keySize+valueSize)), "x-raw")
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			}
		})
	}
}

// runChild runs a memory child on a new database in dir and returns the
// peak RSS it reports, in bytes.
func runChild(bin, dir string) (int64, error) {
	out, err := exec.Command(bin, dir).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("memory child: %w\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PEAK_RSS "); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				return n, nil
			}
		}
	}
	return 0, fmt.Errorf("memory child printed no peak:\n%s", out)
}

// buildChild builds memchild/<name> into dir with the go command.
func buildChild(dir, name string) (string, error) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		gocmd = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(dir, name)
	if out, err := exec.Command(gocmd, "build", "-o", bin, "./memchild/"+name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building memchild/%s: %w\n%s", name, err, out)
	}
	return bin, nil
}

// TestMemoryChildren runs each engine's memory child on a few keys: the
// children build, load, read back and report a peak.
func TestMemoryChildren(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	t.Setenv("KV0_BENCH_KEYS", "2000")
	for _, eng := range engines {
		bin, err := buildChild(t.TempDir(), eng.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := runChild(bin, t.TempDir()); err != nil {
			t.Fatalf("%s: %v", eng.name, err)
		}
	}
}
