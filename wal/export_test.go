package wal

import "time"

// SetGatherLimit replaces the bound on a Sync leader's wait for joined
// writers (maxGather) for one writer.
func SetGatherLimit(w *Writer, d time.Duration) { w.gather.limit = d }
