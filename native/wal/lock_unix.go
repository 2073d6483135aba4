//go:build unix

package wal

import (
	"errors"
	"os"
	"syscall"
)

// LockFile opens (creating) name and takes flock(LOCK_EX|LOCK_NB) on it;
// ErrLocked when another open file holds it, or when name was unlinked or
// replaced between the open and the lock (a lock on an unlinked file guards
// nothing). Closing the file releases the lock. flock locks belong to the
// open file description, so two handles in one process exclude each other
// as two processes do, and the kernel drops the lock when the process dies.
func LockFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
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
			return nil, ErrLocked
		}
		return nil, err
	}
	// The file may have been removed (a claimed directory deleted by its
	// claimer) between open and lock: a lock on an unlinked file guards
	// nothing.
	fi, err1 := f.Stat()
	pi, err2 := os.Stat(name)
	if err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
		f.Close()
		return nil, ErrLocked
	}
	return f, nil
}
