//go:build !linux

package bench

// readProcIO: /proc/self/io exists on Linux only; elsewhere the I/O
// columns are 0.
func readProcIO() (ProcIO, bool) { return ProcIO{}, false }

// syncAll is a no-op off Linux.
func syncAll() {}
