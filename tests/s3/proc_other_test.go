//go:build !linux

package s3

import "syscall"

// serverProcAttr: only Linux can tie the server's life to the test
// process; elsewhere TestMain's stop is the only cleanup.
func serverProcAttr() *syscall.SysProcAttr { return nil }
