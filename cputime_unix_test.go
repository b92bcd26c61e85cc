//go:build unix

package bwkv_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user+system CPU time: on a shared, loaded
// machine wall time says more about the neighbours than about the code,
// so the restore benchmarks also report CPU ms per op.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
