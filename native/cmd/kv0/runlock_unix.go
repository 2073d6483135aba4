//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockRunFile opens path and takes flock(LOCK_EX|LOCK_NB) on it
// (errRunLocked when another open file holds it).
func lockRunFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errRunLocked
		}
		return nil, err
	}
	// A releasing holder may have removed the file between open and lock:
	// a lock on an unlinked file guards nothing.
	fi, err1 := f.Stat()
	pi, err2 := os.Stat(path)
	if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
		f.Close()
		return lockRunFile(path)
	}
	return f, nil
}
