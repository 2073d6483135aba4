package kv

import (
	"container/list"
	"sync"
)

// valueCache is a byte-bounded LRU of committed values keyed by row address
// (Lance never reuses fragment ids, so an address names one row for the
// life of the dataset), with shared in-flight misses: concurrent lookups of
// one address wait for a single read. Cached slices are immutable; callers
// copy them before handing them out. Safe for concurrent use.
type valueCache struct {
	mu       sync.Mutex
	max      int64
	size     int64
	lru      *list.List // of *cacheItem, most recent at front
	items    map[uint64]*list.Element
	inflight map[uint64]*flight
}

type cacheItem struct {
	addr uint64
	val  []byte
}

type flight struct {
	done chan struct{}
	val  []byte
	err  error
}

func newValueCache(maxBytes int64) *valueCache {
	return &valueCache{max: maxBytes, lru: list.New(), items: map[uint64]*list.Element{}, inflight: map[uint64]*flight{}}
}

// get returns the values at locs (in order), reading the misses with fetch,
// which receives each miss once even when other callers ask concurrently.
func (c *valueCache) get(locs []lazyLoc, fetch func(miss []lazyLoc) ([][]byte, error)) ([][]byte, error) {
	out := make([][]byte, len(locs))
	var mine []lazyLoc
	var mineIdx []int
	var waits []*flight
	var waitIdx []int
	c.mu.Lock()
	for i, l := range locs {
		if el, ok := c.items[l.addr]; ok {
			c.lru.MoveToFront(el)
			out[i] = el.Value.(*cacheItem).val
			continue
		}
		if f, ok := c.inflight[l.addr]; ok {
			waits = append(waits, f)
			waitIdx = append(waitIdx, i)
			continue
		}
		f := &flight{done: make(chan struct{})}
		c.inflight[l.addr] = f
		waits = append(waits, f)
		waitIdx = append(waitIdx, i)
		mine = append(mine, l)
		mineIdx = append(mineIdx, i)
	}
	c.mu.Unlock()
	if len(mine) > 0 {
		vals, err := fetch(mine)
		if err == nil && len(vals) != len(mine) {
			err = ioErr("take", errShortTake)
		}
		c.mu.Lock()
		for j, l := range mine {
			f := c.inflight[l.addr]
			delete(c.inflight, l.addr)
			if err != nil {
				f.err = err
			} else {
				f.val = vals[j]
				c.addLocked(l.addr, vals[j])
			}
			close(f.done)
		}
		c.mu.Unlock()
	}
	for j, f := range waits {
		<-f.done
		if f.err != nil {
			return nil, f.err
		}
		out[waitIdx[j]] = f.val
	}
	return out, nil
}

func (c *valueCache) addLocked(addr uint64, val []byte) {
	n := int64(len(val)) + 64
	if c.max <= 0 || n > c.max {
		return
	}
	if el, ok := c.items[addr]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.items[addr] = c.lru.PushFront(&cacheItem{addr: addr, val: val})
	c.size += n
	for c.size > c.max {
		el := c.lru.Back()
		it := el.Value.(*cacheItem)
		c.lru.Remove(el)
		delete(c.items, it.addr)
		c.size -= int64(len(it.val)) + 64
	}
}

// clear drops every cached value.
func (c *valueCache) clear() {
	c.mu.Lock()
	c.lru.Init()
	clear(c.items)
	c.size = 0
	c.mu.Unlock()
}
