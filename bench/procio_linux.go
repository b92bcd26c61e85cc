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

// syncAll asks the kernel to write back every dirty page (sync(2)), so
// the directory's block allocation is final when it is measured.
func syncAll() { syscall.Sync() }
