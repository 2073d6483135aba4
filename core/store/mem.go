package store

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
)

// Memory is an in-memory Store. It counts requests and bytes so tests can pin
// down the I/O cost of an operation. The zero value is not usable; call
// NewMemory.
type Memory struct {
	mu      sync.RWMutex
	objects map[string][]byte
	keys    []string // sorted; rebuilt lazily when dirty
	dirty   bool

	stats memCounters
}

type memCounters struct {
	reads, readBytes, stats, lists, puts, putBytes, deletes atomic.Int64
}

// Counters is a snapshot of a Memory store's request counters.
type Counters struct {
	Reads     int64 // ReadAt and ReadTail calls
	ReadBytes int64 // bytes returned by ReadAt
	Stats     int64 // Stat calls
	Lists     int64 // List calls
	Puts      int64 // Put and PutIfAbsent calls
	PutBytes  int64 // bytes written
	Deletes   int64 // Delete calls
}

// Requests is the number of requests of any kind.
func (c Counters) Requests() int64 { return c.Reads + c.Stats + c.Lists + c.Puts + c.Deletes }

// Sub returns c minus d, the requests made between two snapshots.
func (c Counters) Sub(d Counters) Counters {
	return Counters{c.Reads - d.Reads, c.ReadBytes - d.ReadBytes, c.Stats - d.Stats, c.Lists - d.Lists,
		c.Puts - d.Puts, c.PutBytes - d.PutBytes, c.Deletes - d.Deletes}
}

var (
	_ Store      = (*Memory)(nil)
	_ TailReader = (*Memory)(nil)
)

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{objects: make(map[string][]byte)} }

// Counters returns the request counters accumulated so far.
func (m *Memory) Counters() Counters {
	s := &m.stats
	return Counters{s.reads.Load(), s.readBytes.Load(), s.stats.Load(), s.lists.Load(), s.puts.Load(),
		s.putBytes.Load(), s.deletes.Load()}
}

// ResetCounters sets every counter to zero.
func (m *Memory) ResetCounters() {
	s := &m.stats
	for _, c := range []*atomic.Int64{&s.reads, &s.readBytes, &s.stats, &s.lists, &s.puts, &s.putBytes, &s.deletes} {
		c.Store(0)
	}
}

// ReadAt implements Store.
func (m *Memory) ReadAt(ctx context.Context, key string, p []byte, off int64) error {
	m.stats.reads.Add(1)
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	data, ok := m.objects[key]
	m.mu.RUnlock()
	if !ok {
		return fmt.Errorf("read %s: %w", key, ErrNotFound)
	}
	if off < 0 || off+int64(len(p)) > int64(len(data)) {
		return fmt.Errorf("read %s [%d, %d) of %d bytes: %w", key, off, off+int64(len(p)), len(data), ErrShortObject)
	}
	copy(p, data[off:])
	m.stats.readBytes.Add(int64(len(p)))
	return nil
}

// ReadTail implements TailReader. It counts as one read.
func (m *Memory) ReadTail(ctx context.Context, key string, n int) ([]byte, int64, error) {
	m.stats.reads.Add(1)
	if err := ValidateKey(key); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if n < 0 {
		return nil, 0, fmt.Errorf("read tail %s: negative length %d", key, n)
	}
	m.mu.RLock()
	data, ok := m.objects[key]
	m.mu.RUnlock()
	if !ok {
		return nil, 0, fmt.Errorf("read %s: %w", key, ErrNotFound)
	}
	k := min(n, len(data))
	out := append([]byte(nil), data[len(data)-k:]...)
	m.stats.readBytes.Add(int64(k))
	return out, int64(len(data)), nil
}

// Stat implements Store.
func (m *Memory) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	m.stats.stats.Add(1)
	if err := ValidateKey(key); err != nil {
		return ObjectInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return ObjectInfo{}, err
	}
	m.mu.RLock()
	data, ok := m.objects[key]
	m.mu.RUnlock()
	if !ok {
		return ObjectInfo{}, fmt.Errorf("stat %s: %w", key, ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: int64(len(data))}, nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, opts ListOptions) ([]ObjectInfo, error) {
	m.stats.lists.Add(1)
	if err := ValidatePrefix(opts.Prefix); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	if m.dirty {
		m.keys = m.keys[:0]
		for k := range m.objects {
			m.keys = append(m.keys, k)
		}
		sort.Strings(m.keys)
		m.dirty = false
	}
	start := opts.Prefix
	if opts.StartAfter >= start {
		start = opts.StartAfter + "\x00"
	}
	i := sort.SearchStrings(m.keys, start)
	var out []ObjectInfo
	for ; i < len(m.keys); i++ {
		k := m.keys[i]
		if len(k) < len(opts.Prefix) || k[:len(opts.Prefix)] != opts.Prefix {
			break
		}
		out = append(out, ObjectInfo{Key: k, Size: int64(len(m.objects[k]))})
		if opts.Limit > 0 && len(out) == opts.Limit {
			break
		}
	}
	m.mu.Unlock()
	return out, nil
}

// PutIfAbsent implements Store.
func (m *Memory) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return m.put(ctx, key, data, true)
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, key string, data []byte) error {
	return m.put(ctx, key, data, false)
}

func (m *Memory) put(ctx context.Context, key string, data []byte, createOnly bool) error {
	m.stats.puts.Add(1)
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cp := append([]byte(nil), data...)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, exists := m.objects[key]
	if exists && createOnly {
		return fmt.Errorf("create %s: %w", key, ErrExists)
	}
	m.objects[key] = cp
	if !exists {
		m.dirty = true
	}
	m.stats.putBytes.Add(int64(len(data)))
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, key string) error {
	m.stats.deletes.Add(1)
	if err := ValidateKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	if _, ok := m.objects[key]; ok {
		delete(m.objects, key)
		m.dirty = true
	}
	m.mu.Unlock()
	return nil
}
