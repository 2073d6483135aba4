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
//	memory      a child process loads every key and reads them back; its peak
//	            RSS (VmHWM) divided by the raw key+value bytes
package kvbench

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/wal"
)

const (
	keySize   = 16
	valueSize = 100
)

func numKeys() int {
	if s := os.Getenv("KV0_BENCH_KEYS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// mix is splitmix64, a bijection: distinct i give distinct keys.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// key writes the i-th key: 16 hex digits of a bijective hash of i, so keys
// come in random order.
func key(dst []byte, i int) []byte {
	const digits = "0123456789abcdef"
	h := mix(uint64(i))
	dst = dst[:0]
	for s := 60; s >= 0; s -= 4 {
		dst = append(dst, digits[(h>>uint(s))&15])
	}
	return dst
}

// value writes the 100-byte value of key i.
func value(dst []byte, i int) []byte {
	dst = dst[:0]
	x := uint64(i)
	for len(dst) < valueSize {
		x = mix(x)
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst[:valueSize]
}

// engine is one store under test.
type engine interface {
	put(k, v []byte) error
	get(k []byte) ([]byte, error)
	scan(fn func(k, v []byte)) error
	flush() error
	close() error
}

type kv0Engine struct{ db *kv.DB }

func openKV0(dir string, mode wal.SyncMode) (*kv0Engine, error) {
	db, err := kvdb.Open(context.Background(), filepath.Join(dir, "db.lance"), kvdb.Options{WALDir: filepath.Join(dir, "wal"), WALMode: mode})
	if err != nil {
		return nil, err
	}
	return &kv0Engine{db: db}, nil
}

func (e *kv0Engine) put(k, v []byte) error { return e.db.Put(context.Background(), k, v, nil) }
func (e *kv0Engine) get(k []byte) ([]byte, error) {
	return e.db.Get(context.Background(), k)
}
func (e *kv0Engine) scan(fn func(k, v []byte)) error {
	it, err := e.db.NewIter(context.Background(), nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
	}
	err = it.Error()
	it.Close()
	return err
}
func (e *kv0Engine) flush() error { return e.db.Flush(context.Background()) }
func (e *kv0Engine) close() error { return e.db.Close() }

type pebbleEngine struct {
	db   *pebble.DB
	stop chan struct{}
	wg   sync.WaitGroup
}

// quietLogger drops Pebble's informational messages.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)      {}
func (quietLogger) Errorf(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
func (quietLogger) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// openPebble opens Pebble with its defaults plus 10-bit bloom filters on
// every level (the usual setting for point reads) and a block cache of
// twice the raw data (the memory budget kv0 targets, so reads compare at
// equal memory rather than against Pebble's 8 MiB default); with
// syncEvery > 0 a goroutine syncs the WAL at that interval (kv0's batch
// mode).
func openPebble(dir string, syncEvery time.Duration) (*pebbleEngine, error) {
	cache := pebble.NewCache(int64(2 * numKeys() * (keySize + valueSize)))
	defer cache.Unref()
	o := &pebble.Options{Logger: quietLogger{}, Cache: cache}
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(filepath.Join(dir, "pebble"), o)
	if err != nil {
		return nil, err
	}
	e := &pebbleEngine{db: db, stop: make(chan struct{})}
	if syncEvery > 0 {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			t := time.NewTicker(syncEvery)
			defer t.Stop()
			for {
				select {
				case <-e.stop:
					return
				case <-t.C:
					_ = db.LogData([]byte("s"), pebble.Sync)
				}
			}
		}()
	}
	return e, nil
}

func (e *pebbleEngine) put(k, v []byte) error { return e.db.Set(k, v, pebble.NoSync) }
func (e *pebbleEngine) get(k []byte) ([]byte, error) {
	v, c, err := e.db.Get(k)
	if err != nil {
		return nil, err
	}
	out := append(make([]byte, 0, len(v)), v...)
	return out, c.Close()
}
func (e *pebbleEngine) scan(fn func(k, v []byte)) error {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		fn(it.Key(), it.Value())
	}
	return it.Close()
}
func (e *pebbleEngine) flush() error { return e.db.LogData([]byte("s"), pebble.Sync) }
func (e *pebbleEngine) close() error {
	close(e.stop)
	e.wg.Wait()
	return e.db.Close()
}

type opener func(dir string, batch bool) (engine, error)

var engines = []struct {
	name string
	open opener
}{
	{"kv0", func(dir string, batch bool) (engine, error) {
		mode := wal.SyncNone
		if batch {
			mode = wal.SyncBatch
		}
		return openKV0(dir, mode)
	}},
	{"pebble", func(dir string, batch bool) (engine, error) {
		every := time.Duration(0)
		if batch {
			every = 100 * time.Millisecond
		}
		return openPebble(dir, every)
	}},
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
	var kb, vb []byte
	kb, vb = make([]byte, 0, keySize), make([]byte, 0, valueSize+8)
	for i := range n {
		if err := e.put(key(kb, i), value(vb, i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := e.flush(); err != nil {
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
				if err := e.close(); err != nil {
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
					e.close()
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
					v, err := e.get(key(kb, i))
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
				if err := e.scan(func(k, v []byte) { count++; bytes += len(k) + len(v) }); err != nil {
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
				if err := e.close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				var err error
				if e, err = eng.open(dir, false); err != nil {
					b.Fatal(err)
				}
				if _, err := e.get(key(kb, n/2)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/reopen")
		})
		e.close()
		b.Run("engine="+eng.name+"/op=memory", func(b *testing.B) {
			for b.Loop() {
				rss := memoryChild(b, eng.name)
				b.ReportMetric(float64(rss)/float64(n*(keySize+valueSize)), "x-raw")
				b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
			}
		})
	}
}

// memoryChild runs TestMemoryChild in a child process for one engine and
// returns its peak RSS in bytes.
func memoryChild(b *testing.B, name string) int64 {
	dir := benchDir(b, name+"-mem")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChild$", "-test.v")
	cmd.Env = append(os.Environ(), "KVBENCH_MEM_ENGINE="+name, "KVBENCH_MEM_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("memory child: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "PEAK_RSS "); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatalf("memory child printed no peak:\n%s", out)
	return 0
}

// peakRSS reads VmHWM from /proc/self/status (Linux), in bytes.
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// TestMemoryChild is the memory workload: it runs only as a child of the
// memory benchmark.
func TestMemoryChild(t *testing.T) {
	name, dir := os.Getenv("KVBENCH_MEM_ENGINE"), os.Getenv("KVBENCH_MEM_DIR")
	if name == "" {
		t.Skip("runs as a child of BenchmarkKV/op=memory")
	}
	var open opener
	for _, e := range engines {
		if e.name == name {
			open = e.open
		}
	}
	e, err := open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	n := numKeys()
	kb, vb := make([]byte, 0, keySize), make([]byte, 0, valueSize+8)
	for i := range n {
		if err := e.put(key(kb, i), value(vb, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := e.get(key(kb, i)); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	fmt.Printf("PEAK_RSS %d\n", peakRSS())
	if err := e.close(); err != nil {
		t.Fatal(err)
	}
}
