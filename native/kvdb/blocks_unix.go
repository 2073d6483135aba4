//go:build unix

package kvdb

import (
	"syscall"

	"github.com/kv0/kv0/core/kv"
)

// mmapBlocks is a kv.BlockAllocator on anonymous private mappings: the
// view's base run lives outside the Go heap, so it does not raise the
// garbage collector's heap goal, and a freed block goes back to the OS at
// once.
type mmapBlocks struct{}

var _ kv.BlockAllocator = mmapBlocks{}

// Alloc implements kv.BlockAllocator; it falls back to the Go heap when
// the mapping fails.
func (mmapBlocks) Alloc(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n)
	}
	return b
}

// Free implements kv.BlockAllocator.
func (mmapBlocks) Free(b []byte) {
	// A block from the Go heap (failed mapping) is not page aligned in
	// general; munmap then fails and the garbage collector reclaims it.
	_ = syscall.Munmap(b)
}

func defaultBlocks() kv.BlockAllocator { return mmapBlocks{} }
