package wal

import (
	"errors"
	"io"
	"os"
)

// ErrLocked is returned by FS.Lock when another handle (in this process or
// another) holds the lock. Match with errors.Is.
var ErrLocked = errors.New("wal: locked by another writer")

// File is the subset of *os.File the WAL writes segments through.
type File interface {
	io.Writer
	Sync() error
	Truncate(size int64) error
	Close() error
}

// FS is the file system the WAL works on. The default is the operating
// system's; tests substitute one that injects faults, in the manner of
// pebble's errorfs. Implementations must be safe for concurrent use.
type FS interface {
	// Create creates (or truncates) name for appending.
	Create(name string) (File, error)
	// ReadFile returns the contents of name.
	ReadFile(name string) ([]byte, error)
	// Truncate cuts name to size bytes.
	Truncate(name string, size int64) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// Rename renames a file, replacing the destination.
	Rename(from, to string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string) error
	// ReadDir lists a directory.
	ReadDir(name string) ([]os.DirEntry, error)
	// SyncDir makes the entries of a directory durable.
	SyncDir(name string) error
	// WriteFile creates name with data (not synced).
	WriteFile(name string, data []byte) error
	// Lock takes the advisory exclusive lock of the file name (created if
	// missing) without blocking; it returns ErrLocked when it is held. The
	// lock is released by closing the result.
	Lock(name string) (io.Closer, error)
}

// OSFS is the operating system's file system.
type OSFS struct{}

var _ FS = OSFS{}

// Create implements FS.
func (OSFS) Create(name string) (File, error) {
	return os.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
}

// ReadFile implements FS.
func (OSFS) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

// Truncate implements FS.
func (OSFS) Truncate(name string, size int64) error { return os.Truncate(name, size) }

// Remove implements FS.
func (OSFS) Remove(name string) error { return os.Remove(name) }

// Rename implements FS.
func (OSFS) Rename(from, to string) error { return os.Rename(from, to) }

// MkdirAll implements FS.
func (OSFS) MkdirAll(name string) error { return os.MkdirAll(name, 0o755) }

// ReadDir implements FS.
func (OSFS) ReadDir(name string) ([]os.DirEntry, error) { return os.ReadDir(name) }

// WriteFile implements FS.
func (OSFS) WriteFile(name string, data []byte) error { return os.WriteFile(name, data, 0o644) }

// SyncDir implements FS.
func (OSFS) SyncDir(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Lock implements FS with flock(2) where available (see lock_*.go).
func (OSFS) Lock(name string) (io.Closer, error) {
	f, err := LockFile(name)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return f, nil
}
