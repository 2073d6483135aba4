package main

import (
	"errors"
	"io/fs"
	"os"

	"github.com/kv0/kv0/native/wal"
)

// lockRunFile opens path and locks it as the WAL locks its folders
// (wal.LockFile): errRunLocked when another open file holds it. A holder
// releasing the lock removes the file, which can happen between our open
// and our lock; then the try starts over.
func lockRunFile(path string) (*os.File, error) {
	for {
		f, err := wal.LockFile(path)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, wal.ErrLocked) {
			return nil, err
		}
		if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
			return nil, errRunLocked
		}
	}
}
