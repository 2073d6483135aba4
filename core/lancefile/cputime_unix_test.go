//go:build unix

package lancefile

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user+system CPU time; benchmarks report
// rows per CPU-second too, since wall time on a shared machine says little.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
