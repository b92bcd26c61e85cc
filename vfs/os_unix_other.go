//go:build unix && !linux

package vfs

import "golang.org/x/sys/unix"

// fullSync is fsync(2) of fd.
func fullSync(fd int) error { return unix.Fsync(fd) }
