package bench

import (
	"os"
	"syscall"
)

// readProcIO reads the process's I/O counters from /proc/self/io; ok is
// false where the file is missing or unreadable (a kernel without task
// I/O accounting, a sandbox hiding /proc).
func readProcIO() (c ProcIO, ok bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return ProcIO{}, false
	}
	return parseProcIO(b)
}

// syncAll asks the kernel to write back every dirty page (sync(2))
// before the counters are read at the end of a run. write_bytes is
// charged when a page is dirtied, not at its writeback, so this changes
// the counters little; it keeps the run's pending writeback from landing
// on the next run.
func syncAll() { syscall.Sync() }
