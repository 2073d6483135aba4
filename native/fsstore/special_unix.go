//go:build unix

package fsstore

import (
	"errors"
	"syscall"
)

// readFlags open a file for reading without waiting on it: a FIFO opens at
// once (and is then refused for its type) instead of blocking until a
// writer comes, and a terminal never becomes the process's. On a regular
// file neither flag changes anything.
const readFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// notOpenable reports whether err is open(2)'s refusal of a special file
// that cannot be opened at all (a socket).
func notOpenable(err error) bool {
	return errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EOPNOTSUPP)
}
