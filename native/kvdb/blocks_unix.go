//go:build unix

package kvdb

import (
	"sync"
	"syscall"

	"github.com/kv0/kv0/core/kv"
)

// mmapBlocks is a kv.BlockAllocator on anonymous private mappings: the
// view's base run lives outside the Go heap, so it does not raise the
// garbage collector's heap goal, and a freed block goes back to the OS.
// A few freed blocks of the common size (1 MiB, the size of base blocks
// and delta arenas) are kept for reuse instead: merges free and allocate
// blocks at a high rate, and a reused block costs neither system calls nor
// page faults.
type mmapBlocks struct {
	mu   sync.Mutex
	free [][]byte
}

const (
	poolBlockSize = 1 << 20
	poolBlocks    = 4
)

var sharedBlocks = &mmapBlocks{}

var _ kv.BlockAllocator = (*mmapBlocks)(nil)

// Alloc implements kv.BlockAllocator; it falls back to the Go heap when
// the mapping fails.
func (p *mmapBlocks) Alloc(n int) []byte {
	if n == poolBlockSize {
		p.mu.Lock()
		if k := len(p.free); k > 0 {
			b := p.free[k-1]
			p.free = p.free[:k-1]
			p.mu.Unlock()
			return b
		}
		p.mu.Unlock()
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}

// Free implements kv.BlockAllocator.
func (p *mmapBlocks) Free(b []byte) {
	if len(b) == poolBlockSize && cap(b) == poolBlockSize {
		p.mu.Lock()
		if len(p.free) < poolBlocks {
			p.free = append(p.free, b)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	// A block from the Go heap (failed mapping) is not page aligned in
	// general; munmap then fails and the garbage collector reclaims it.
	_ = syscall.Munmap(b)
}

func defaultBlocks() kv.BlockAllocator { return sharedBlocks }
