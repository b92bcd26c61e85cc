//go:build amd64 || arm64

package base

import "unsafe"

// prefetchLines issues one prefetch hint per 64-byte line for n lines
// from p (prefetch_$GOARCH.s).
//
//go:noescape
func prefetchLines(p unsafe.Pointer, n int)
