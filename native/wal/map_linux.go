//go:build linux

package wal

import (
	"os"
	"syscall"
)

// mapSegment creates the segment file name with size bytes reserved on
// disk (fallocate, so stores into the mapping can never hit a full disk)
// and maps it shared and writable: a store into the mapping is in the
// kernel's page cache as soon as it completes, as a write(2) would be.
// It fails where the file system cannot reserve space; the caller then
// writes with write(2).
func mapSegment(name string, size int) (*os.File, []byte, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (*os.File, []byte, error) {
		f.Close()
		_ = os.Remove(name)
		return nil, nil, err
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		return fail(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	return f, m, nil
}

func unmapSegment(m []byte) error { return syscall.Munmap(m) }

const canMap = true

// mapFile maps the file name read-only. It returns nil for an empty file.
func mapFile(name string) ([]byte, func(), error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.Size() == 0 {
		return []byte{}, func() {}, nil
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	_ = syscall.Madvise(m, syscall.MADV_SEQUENTIAL)
	return m, func() { _ = syscall.Munmap(m) }, nil
}
