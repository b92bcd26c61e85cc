package wal

import (
	"sync/atomic"
	"time"
)

// Stats describes a Writer's activity since Open.
type Stats struct {
	Bytes            int64         // bytes appended
	Records          int64         // records appended
	Syncs            int64         // segment fsyncs (group commits, background flushes, rotations)
	SyncLatency      time.Duration // total time spent in those fsyncs
	SyncedRecords    int64         // records those fsyncs made durable
	RecordsPerSync   float64       // SyncedRecords / Syncs
	Rotations        int64         // segments started after the first
	RecycledSegments int64         // segments deleted by Recycle or kept as spares
	ReusedSegments   int64         // rotations that reused a spare file (Options.Spares)
	SpareSegments    int           // spare files kept now
	Gathers          int64         // Sync leaders that waited for joined writers (gather.go)
	GatherWait       time.Duration // total time those leaders waited
	Head             LSN           // just past the last appended record
	Durable          LSN           // every byte below is durable
}

// counters are updated atomically so Stats never waits for an fsync.
type counters struct {
	syncs         atomic.Int64
	syncNanos     atomic.Int64
	syncedRecords atomic.Int64
	rotations     atomic.Int64
	recycled      atomic.Int64
	reused        atomic.Int64
}

// Stats returns a snapshot of the writer's counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	records := w.records
	head := LSN(w.head.Load())
	w.mu.Unlock()
	s := Stats{
		Bytes:            int64(head - w.startLSN),
		Records:          records,
		Syncs:            w.stats.syncs.Load(),
		SyncLatency:      time.Duration(w.stats.syncNanos.Load()),
		SyncedRecords:    w.stats.syncedRecords.Load(),
		Rotations:        w.stats.rotations.Load(),
		RecycledSegments: w.stats.recycled.Load(),
		ReusedSegments:   w.stats.reused.Load(),
		Gathers:          w.gather.gathers.Load(),
		GatherWait:       time.Duration(w.gather.gatherNanos.Load()),
		Head:             head,
		Durable:          w.DurableLSN(),
	}
	w.spareMu.Lock()
	s.SpareSegments = len(w.spareFiles)
	w.spareMu.Unlock()
	if s.Syncs > 0 {
		s.RecordsPerSync = float64(s.SyncedRecords) / float64(s.Syncs)
	}
	return s
}
