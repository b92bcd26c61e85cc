//go:build !amd64 && !arm64

package base

import "unsafe"

// prefetchLines is a no-op on architectures without a wired prefetch
// instruction: the hint changes no result, only speed.
func prefetchLines(p unsafe.Pointer, n int) {}
