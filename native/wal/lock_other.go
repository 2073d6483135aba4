//go:build !unix

package wal

import (
	"os"
)

// LockFile creates the lock file name but cannot lock it on this platform:
// writers sharing a WAL directory are not excluded from each other here.
func LockFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}
