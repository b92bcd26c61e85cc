package wal

import "time"

// SetGatherLimit replaces the bound on a Sync leader's wait for joined
// writers (maxGather) for one writer.
func SetGatherLimit(w *Writer, d time.Duration) { w.gather.limit = d }

// HardFlushBytes is the append buffer's bound (hardFlushBytes).
const HardFlushBytes = hardFlushBytes

// Pending returns the bytes appended and not yet taken by a write-out.
func Pending(w *Writer) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.buf)
}

// HoldWrites keeps every write-out from starting, as a slow one in
// progress does, until release is called.
func HoldWrites(w *Writer) (release func()) {
	w.writeMu.Lock()
	return w.writeMu.Unlock
}

// OverLimitSlack is the least room an append buffer grown past the hard
// limit gets (overLimitSlack).
const OverLimitSlack = overLimitSlack

// GrowAppendBuffer is growAppendBuffer.
func GrowAppendBuffer(buf []byte, need int) []byte { return growAppendBuffer(buf, need) }

// BufferCapacity returns the append buffer's capacity.
func BufferCapacity(w *Writer) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return cap(w.buf)
}

// SpareCapacity returns the spare append buffer's capacity.
func SpareCapacity(w *Writer) int {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	return cap(w.spare)
}
