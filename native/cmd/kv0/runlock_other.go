//go:build !unix

package main

import "os"

// lockRunFile opens path. Without flock(2) there is no lock: a second
// resume on this host is refused only by the run's fresh heartbeat.
func lockRunFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}
