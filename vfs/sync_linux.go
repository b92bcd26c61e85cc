package vfs

import (
	"errors"
	"os"
	"syscall"
)

// datasync makes f's data durable with fdatasync, which skips the metadata
// (mtime) flush fsync would add; the file size, which reads need, is still
// made durable. It falls back to fsync if the file system rejects fdatasync.
//
// It calls package syscall rather than golang.org/x/sys/unix: the syscalls
// are the same, and importing x/sys while go.mod lists it as indirect breaks
// every build in the module until someone runs `go mod tidy`.
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return f.Sync()
	}
	var serr error
	// Control keeps the descriptor open until the call returns, so a
	// concurrent Close cannot hand the number to another file meanwhile.
	cerr := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	if errors.Is(serr, syscall.ENOSYS) || errors.Is(serr, syscall.EINVAL) {
		return f.Sync()
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
