package s3

import "syscall"

// serverProcAttr makes the kernel kill versitygw when the test process
// dies without stopping it (a panic, a timeout, a kill), so no server
// outlives the suite.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
