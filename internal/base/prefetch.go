package base

import "unsafe"

// lineBytes is the cache-line size the prefetch hints step by.
const lineBytes = 64

// maxPrefetchLines caps the hints one Prefetch call issues (2 KiB): its
// callers ask for the start of what they read next, and the CPU's own
// prefetchers follow a sequential read past it.
const maxPrefetchLines = 32

// Prefetch hints the CPU to start loading the n bytes at p into its
// caches and returns at once, without waiting for them: a scan asks for
// the memory it will read next while it works on what it has. A hint
// only: it never faults, never changes a result, and is a no-op where no
// prefetch instruction is wired (prefetch_other.go). At most
// maxPrefetchLines lines are asked for.
func Prefetch(p unsafe.Pointer, n int) {
	if p == nil || n <= 0 {
		return
	}
	prefetchLines(p, prefetchSpan(uintptr(p), n))
}

// prefetchSpan returns the number of cache lines the n bytes at address
// p touch (p need not be line-aligned), capped at maxPrefetchLines.
func prefetchSpan(p uintptr, n int) int {
	lines := (int(p&(lineBytes-1)) + n + lineBytes - 1) / lineBytes
	return min(lines, maxPrefetchLines)
}
