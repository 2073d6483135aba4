//go:build !unix

package wal

import (
	"io"
	"os"
)

// lockFile creates the lock file but cannot lock it on this platform:
// writers sharing a WAL directory are not excluded from each other here.
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}
