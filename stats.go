package bwkv

import (
	"fmt"
	"strings"
	"time"
)

// Stats is a point-in-time summary of the engine, one nested struct per
// part (DESIGN §9). It is a plain value; Sub gives the difference of two.
type Stats struct {
	WAL        WALStats
	Checkpoint CheckpointStats
	Recovery   RecoveryStats
	GC         GCStats
	Tree       TreeStats
	Cache      CacheStats
	Txn        TxnStats
	// BackpressureStalls counts writers that waited for a lagging
	// checkpointer.
	BackpressureStalls uint64
	// BackgroundErrors counts failures of background work.
	BackgroundErrors uint64
}

// WALStats describes the log.
type WALStats struct {
	Bytes, Records, Syncs uint64
	SyncLatency           time.Duration // total time spent in fsync
	RecordsPerSync        float64
}

// CheckpointStats describes checkpoints. Bytes is what data files
// received; InstalledBytes the frame bytes the checkpointed generations
// installed in memory (their ratio shows superseded frames never written).
type CheckpointStats struct {
	Count, Bytes, FramesWritten, FramesSkipped, InstalledBytes uint64
	Duration                                                   time.Duration // total
	Frontier                                                   uint64
}

// RecoveryStats describes the last Open's recovery.
type RecoveryStats struct {
	RecordsReplayed, LosersUndone, CLRsWritten, TornBytes uint64
	Duration                                              time.Duration
}

// GCStats describes data-file garbage collection (DESIGN §8) since Open.
type GCStats struct {
	// FilesRewritten counts data files whose live frames were copied to
	// a new file; FilesRetired files retired with nothing live;
	// FilesDeleted retired files unlinked.
	FilesRewritten, FilesRetired, FilesDeleted uint64
	// BytesReclaimed is the size of the files deleted minus BytesWritten,
	// the size of the files the rewrites wrote.
	BytesReclaimed, BytesWritten uint64
	// Rounds counts collection rounds.
	Rounds uint64
	// DataBytes and LiveBytes are the data files' frame bytes and live
	// frame bytes as the manifest accounts them (tables and footers
	// excluded); SpaceAmplification is DataBytes / LiveBytes (0 before
	// the first checkpoint). The log and the manifest are not included.
	DataBytes, LiveBytes int64
	SpaceAmplification   float64
}

// TreeStats describes the index.
type TreeStats struct {
	Pages, Leaves, Depth int
	// ChainHist[i] counts leaves with a delta chain of length in
	// [2^(i-1), 2^i); ChainHist[0] counts empty chains.
	ChainHist                                  [8]int
	Bytes                                      int64
	Consolidations, Splits, RootSplits, Merges uint64
}

// CacheStats describes the page cache.
type CacheStats struct {
	// Bytes is the memory of the resident page states; StubBytes the
	// part held by evicted leaves' stubs (fences and key filters).
	Bytes, StubBytes        int64
	Hits, Misses, Evictions uint64
	// Compactions counts stub leaves handed to the background
	// consolidation (their chains grew long under blind inserts).
	Compactions uint64
}

// TxnStats describes transactions.
type TxnStats struct {
	// Conflicts counts writes that failed with ErrConflict; of them,
	// Deadlocks were refused because their wait would have closed a
	// cycle, and LockTimeouts waited LockTimeout in vain.
	Commits, Aborts, Conflicts, TooOld uint64
	Deadlocks, LockTimeouts            uint64
	Open                               int
	OldestTxnAge, OldestSnapshotAge    time.Duration
}

// Stats returns the current statistics. It walks the tree's levels (O(pages));
// do not call it on a hot path.
func (db *DB) Stats() Stats {
	var s Stats
	sh := db.tree.Shape()
	ts := db.tree.Stats()
	s.Tree = TreeStats{
		Pages: sh.Pages, Leaves: sh.Leaves, Depth: sh.Depth, ChainHist: sh.ChainHist, Bytes: sh.Bytes,
		Consolidations: ts.Consolidations, Splits: ts.Splits, RootSplits: ts.RootSplits, Merges: ts.Merges,
	}
	s.Cache.Bytes = db.pt.Resident()
	s.Cache.Misses = ts.Loads // pages read from data files
	s.Cache.Evictions = db.cache.evictions.Load()
	s.Cache.StubBytes = db.tree.StubBytes()
	s.Cache.Compactions = db.cache.compactions.Load()
	s.Recovery = db.recovery
	c := &db.ckpt
	s.Checkpoint = CheckpointStats{
		Count:          c.count.Load(),
		Bytes:          c.bytes.Load(),
		FramesWritten:  c.framesWritten.Load(),
		FramesSkipped:  c.framesSkipped.Load(),
		InstalledBytes: c.installed.Load(),
		Duration:       time.Duration(c.nanos.Load()),
		Frontier:       c.frontier.Load(),
	}
	s.GC = db.gcStats()
	s.BackpressureStalls = c.stalls.Load()
	s.BackgroundErrors = db.stats.bgErrors.Load()
	if db.wal != nil {
		ws := db.wal.Stats()
		s.WAL = WALStats{
			Bytes:          uint64(ws.Bytes),
			Records:        uint64(ws.Records),
			Syncs:          uint64(ws.Syncs),
			SyncLatency:    ws.SyncLatency,
			RecordsPerSync: ws.RecordsPerSync,
		}
	}
	s.Txn = TxnStats{
		Commits:   db.stats.commits.Load(),
		Aborts:    db.stats.aborts.Load(),
		Conflicts: db.stats.conflicts.Load(),
		TooOld:    db.stats.tooOld.Load(),

		Deadlocks:    db.stats.deadlocks.Load(),
		LockTimeouts: db.stats.lockTimeouts.Load(),
	}
	db.txMu.Lock()
	s.Txn.Open = len(db.txns)
	db.txMu.Unlock()
	if t := db.mv.Oldest(); !t.IsZero() {
		s.Txn.OldestTxnAge = time.Since(t)
	}
	return s
}

// String prints the statistics as a table.
func (s Stats) String() string {
	var b strings.Builder
	row := func(part, name string, v any) { fmt.Fprintf(&b, "%-10s %-22s %v\n", part, name, v) }
	row("wal", "bytes", s.WAL.Bytes)
	row("wal", "records", s.WAL.Records)
	row("wal", "syncs", s.WAL.Syncs)
	row("wal", "sync latency", s.WAL.SyncLatency)
	row("wal", "records/sync", fmt.Sprintf("%.1f", s.WAL.RecordsPerSync))
	row("checkpoint", "count", s.Checkpoint.Count)
	row("checkpoint", "bytes", s.Checkpoint.Bytes)
	row("checkpoint", "frames written", s.Checkpoint.FramesWritten)
	row("checkpoint", "frames skipped", s.Checkpoint.FramesSkipped)
	row("checkpoint", "installed bytes", s.Checkpoint.InstalledBytes)
	row("checkpoint", "duration", s.Checkpoint.Duration)
	row("checkpoint", "frontier", s.Checkpoint.Frontier)
	row("recovery", "records replayed", s.Recovery.RecordsReplayed)
	row("recovery", "losers undone", s.Recovery.LosersUndone)
	row("recovery", "CLRs written", s.Recovery.CLRsWritten)
	row("recovery", "torn bytes", s.Recovery.TornBytes)
	row("recovery", "duration", s.Recovery.Duration)
	row("gc", "rounds", s.GC.Rounds)
	row("gc", "files rewritten", s.GC.FilesRewritten)
	row("gc", "files retired", s.GC.FilesRetired)
	row("gc", "files deleted", s.GC.FilesDeleted)
	row("gc", "bytes written", s.GC.BytesWritten)
	row("gc", "bytes reclaimed", s.GC.BytesReclaimed)
	row("gc", "data bytes", s.GC.DataBytes)
	row("gc", "live bytes", s.GC.LiveBytes)
	row("gc", "space amp", fmt.Sprintf("%.2f", s.GC.SpaceAmplification))
	row("tree", "pages", s.Tree.Pages)
	row("tree", "leaves", s.Tree.Leaves)
	row("tree", "depth", s.Tree.Depth)
	row("tree", "chain histogram", s.Tree.ChainHist)
	row("tree", "bytes", s.Tree.Bytes)
	row("tree", "consolidations", s.Tree.Consolidations)
	row("tree", "splits", s.Tree.Splits)
	row("tree", "root splits", s.Tree.RootSplits)
	row("tree", "merges", s.Tree.Merges)
	row("cache", "bytes", s.Cache.Bytes)
	row("cache", "stub bytes", s.Cache.StubBytes)
	row("cache", "hits", s.Cache.Hits)
	row("cache", "misses", s.Cache.Misses)
	row("cache", "evictions", s.Cache.Evictions)
	row("cache", "compactions", s.Cache.Compactions)
	row("txn", "commits", s.Txn.Commits)
	row("txn", "aborts", s.Txn.Aborts)
	row("txn", "conflicts", s.Txn.Conflicts)
	row("txn", "too old", s.Txn.TooOld)
	row("txn", "open", s.Txn.Open)
	row("txn", "oldest txn age", s.Txn.OldestTxnAge)
	row("txn", "oldest snapshot age", s.Txn.OldestSnapshotAge)
	row("engine", "backpressure stalls", s.BackpressureStalls)
	row("engine", "background errors", s.BackgroundErrors)
	return b.String()
}
