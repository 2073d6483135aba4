package kv

import (
	"errors"
	"fmt"
)

// Errors returned by this package. Match them with errors.Is: most are
// wrapped with context (the key, the file, the operation).
var (
	// ErrNotFound means the key holds no value.
	ErrNotFound = errors.New("kv: not found")
	// ErrNotSupported means the handle cannot perform the operation, e.g. a
	// write on a read-only handle or on one opened at an older version.
	ErrNotSupported = errors.New("kv: operation not supported")
	// ErrCorruption means stored bytes failed validation. The error is a
	// *CorruptionError naming the file; match with errors.Is(err,
	// ErrCorruption) or get the details with errors.As.
	ErrCorruption = errors.New("kv: corruption")
	// ErrStoreIO wraps a failure of the storage binding (the OpLog) or of the
	// local write-ahead log. The underlying error stays reachable through
	// errors.Is and errors.As.
	ErrStoreIO = errors.New("kv: store I/O error")
	// ErrClosed means the handle (or iterator) was used after Close.
	ErrClosed = errors.New("kv: closed")
	// ErrStaleWAL means an abandoned write-ahead log holds operations older
	// than Options.MarkTTL from a writer whose mark is gone, so replaying it
	// could store writes twice. The error names the directory. Set
	// Options.ReplayStaleWAL to replay it anyway.
	ErrStaleWAL = errors.New("kv: stale write-ahead log")
)

// CorruptionError describes corrupt bytes: the file (or object) holding them,
// the byte offset when known (-1 otherwise) and what was wrong. It matches
// ErrCorruption with errors.Is.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
	Err    error // underlying cause, may be nil
}

// Error implements error.
func (e *CorruptionError) Error() string {
	s := "kv: corruption in " + e.File
	if e.Offset >= 0 {
		s += fmt.Sprintf(" at offset %d", e.Offset)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Is reports whether target is ErrCorruption.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// Unwrap returns the underlying cause.
func (e *CorruptionError) Unwrap() error { return e.Err }

// storeErr is an error of the storage binding or the WAL, matching both
// ErrStoreIO and the wrapped error.
type storeErr struct {
	op  string
	err error
}

func (e *storeErr) Error() string   { return "kv: " + e.op + ": " + e.err.Error() }
func (e *storeErr) Unwrap() []error { return []error{ErrStoreIO, e.err} }

// ioErr wraps err as a store I/O error of op, leaving errors that already
// carry a kv sentinel (corruption, not supported, store I/O) as they are.
func ioErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrCorruption) || errors.Is(err, ErrStoreIO) || errors.Is(err, ErrNotSupported) || errors.Is(err, ErrStaleWAL) {
		return err
	}
	return &storeErr{op: op, err: err}
}
