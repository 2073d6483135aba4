// Package workload is the key-value benchmark's workload: its keys and
// values, the engine interface both stores implement, and the memory
// measurement. The side-by-side benchmark (package kvbench) and the memory
// children (memchild/kv0, memchild/pebble: one binary per engine, so each
// measured process holds the code of its own engine only) share it.
package workload

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Key and value sizes.
const (
	KeySize   = 16
	ValueSize = 100
)

// NumKeys is the number of keys: KV0_BENCH_KEYS, default 1,000,000.
func NumKeys() int {
	if s := os.Getenv("KV0_BENCH_KEYS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 1_000_000
}

// Mix is splitmix64, a bijection: distinct x give distinct results.
func Mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Key writes the i-th key into dst: 16 hex digits of a bijective hash of
// i, so keys come in random order.
func Key(dst []byte, i int) []byte {
	const digits = "0123456789abcdef"
	h := Mix(uint64(i))
	dst = dst[:0]
	for s := 60; s >= 0; s -= 4 {
		dst = append(dst, digits[(h>>uint(s))&15])
	}
	return dst
}

// Value writes the 100-byte value of key i into dst.
func Value(dst []byte, i int) []byte {
	dst = dst[:0]
	x := uint64(i)
	for len(dst) < ValueSize {
		x = Mix(x)
		dst = binary.LittleEndian.AppendUint64(dst, x)
	}
	return dst[:ValueSize]
}

// Engine is one store under test.
type Engine interface {
	// Put writes one key, without waiting for durability.
	Put(k, v []byte) error
	// Get returns a copy of the value of k.
	Get(k []byte) ([]byte, error)
	// Scan calls fn on every key and value in order.
	Scan(fn func(k, v []byte)) error
	// Flush makes every write so far durable.
	Flush() error
	Close() error
}

// Opener opens the engine's database in dir; batch selects a WAL synced
// about every 100 ms instead of one never synced.
type Opener func(dir string, batch bool) (Engine, error)

// Load puts keys [0, n) and flushes.
func Load(e Engine, n int) error {
	kb, vb := make([]byte, 0, KeySize), make([]byte, 0, ValueSize+8)
	for i := range n {
		if err := e.Put(Key(kb, i), Value(vb, i)); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
	}
	return e.Flush()
}

// Memory is the memory workload: it loads n keys into e (WAL not synced),
// reads each back and closes e, and returns the process's peak RSS
// (VmHWM) over the whole run, Close included.
func Memory(e Engine, n int) (int64, error) {
	if err := Load(e, n); err != nil {
		return 0, err
	}
	kb, vb := make([]byte, 0, KeySize), make([]byte, 0, ValueSize+8)
	for i := range n {
		v, err := e.Get(Key(kb, i))
		if err != nil || !bytes.Equal(v, Value(vb, i)) {
			return 0, fmt.Errorf("get %d: %q, %v", i, v, err)
		}
	}
	if err := e.Close(); err != nil {
		return 0, err
	}
	return PeakRSS(), nil
}

// PeakRSS reads VmHWM from /proc/self/status (Linux), in bytes; 0
// elsewhere.
func PeakRSS() int64 {
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

// ChildMain is the main function of a memory child: it runs Memory on a
// new database in the folder named by its argument, with NumKeys keys,
// and prints "PEAK_RSS <bytes>".
func ChildMain(open Opener) {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: memchild DIR")
		os.Exit(2)
	}
	e, err := open(os.Args[1], false)
	if err == nil {
		var peak int64
		if peak, err = Memory(e, NumKeys()); err == nil {
			fmt.Printf("PEAK_RSS %d\n", peak)
			return
		}
	}
	fmt.Fprintln(os.Stderr, "memchild:", err)
	os.Exit(1)
}
