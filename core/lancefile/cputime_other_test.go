//go:build !unix

package lancefile

import "time"

// cpuTime is zero where the process's CPU time is not available (js and
// wasip1); the benchmarks then leave out their rows/cpu-s figure.
func cpuTime() time.Duration { return 0 }
