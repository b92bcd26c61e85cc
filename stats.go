package bwkv

import (
	"fmt"
	"strings"
	"time"
)

// Stats is a point-in-time summary of the engine, one nested struct per
// part. It is a plain value; Sub gives the activity between two of them.
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
	// Degraded is the unrecoverable I/O error (a failed fsync of the log,
	// the manifest or a data file) that made the DB read-only until it is
	// reopened; empty while healthy.
	Degraded string
}

// WALStats describes the log.
type WALStats struct {
	Bytes, Records, Syncs uint64
	SyncLatency           time.Duration // total time spent in fsync
	RecordsPerSync        float64
	// Gathers counts the group-commit leaders that first waited for
	// transactions about to commit (DurabilitySync), GatherWait the total
	// of those waits (each at most half an fsync; docs/architecture.md).
	Gathers    uint64
	GatherWait time.Duration
	// SegmentsReused counts the log segments started over a spare file
	// (format 3: docs/formats.md), Spares the spare
	// files held now (at most 2; none once the database settles).
	SegmentsReused uint64
	Spares         int
}

// CheckpointStats describes checkpoints. Bytes is what data files
// received; InstalledBytes the frame bytes the checkpointed generations
// installed in memory (their ratio shows superseded frames never written).
//
// Blob files (Options.BlobThreshold): BlobsWritten counts the blob frames
// checkpoints wrote and BlobBytes their bytes (part of Bytes);
// BlobsReused the references to an already durable blob that written
// frames carried instead of writing the value again; BlobReads the blob
// frames read back (one per large value of each page read from disk).
type CheckpointStats struct {
	Count, Bytes, FramesWritten, FramesSkipped, InstalledBytes uint64
	Duration                                                   time.Duration // total
	Frontier                                                   uint64
	BlobsWritten, BlobBytes, BlobsReused, BlobReads            uint64
	// FramesPlain counts the frames written uncompressed, though a codec
	// is set, because their page was hot: rewritten within about two
	// seconds of its previous checkpoint, so the next one supersedes them
	// (the idle settle rewrites such pages compressed).
	FramesPlain uint64
}

// RecoveryStats describes the last Open's recovery. TornBytes counts the
// bytes after the log's last valid record that the open cut off: a torn
// write, or, when the newest segment was a reused spare (format 3), the
// spare's old records behind the new ones too (up to a segment's worth).
type RecoveryStats struct {
	RecordsReplayed, LosersUndone, CLRsWritten, TornBytes uint64
	Duration                                              time.Duration
	// DroppedBytes counts the log bytes a WALRecoveryTruncateDamaged open
	// gave up at damage (zero otherwise), and Damage describes that
	// damage (empty: none). Commits in the dropped bytes are lost.
	DroppedBytes uint64
	Damage       string
}

// GCStats describes data-file garbage collection since Open.
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
	// PagesConsolidated counts on-disk delta chains a rewrite replaced by
	// one base frame at the chain's newest rewritten address, and
	// FramesConsolidated the frames they held (docs/crash-safety.md).
	// ConsolidateErrors counts chains a rewrite could not read or merge
	// and copied as they were instead (a damaged frame, or a bug: the
	// merge must keep every version).
	PagesConsolidated, FramesConsolidated, ConsolidateErrors uint64
	// AccountingUnread counts pages whose old on-disk chain a checkpoint
	// could not read, AccountingMismatched pages whose old chain, as the
	// GC had recorded it, lacked a frame the new one keeps (a bug). The
	// frames their new state superseded were not counted as junk: the
	// GC sees their files as more live than they are when it chooses
	// victims; what it copies stays exact.
	AccountingUnread, AccountingMismatched uint64
}

// TreeStats describes the index.
type TreeStats struct {
	Pages, Leaves, Depth int
	// ChainHist[i] counts leaves with a delta chain of length in
	// [2^(i-1), 2^i); ChainHist[0] counts empty chains.
	ChainHist                                  [8]int
	Bytes                                      int64
	Consolidations, Splits, RootSplits, Merges uint64
	// Carried counts the consolidations, among Consolidations, that
	// leave the leaf's frames on disk as they are (a carried base, never
	// written): the checkpoints write the leaf's deltas instead of a
	// whole new base (docs/architecture.md).
	Carried uint64
}

// CacheStats describes the page cache.
type CacheStats struct {
	// Bytes is the memory of the resident page states; StubBytes the
	// part held by evicted leaves' stubs (fences and key filters),
	// InnerBytes the part held by inner pages (outside CacheBytes).
	Bytes, StubBytes, InnerBytes int64
	// Hits counts page visits served from memory, sampled one in 16 (an
	// estimate: exact counting cost every visit a memory barrier);
	// Misses (pages loaded from the data files) and Evictions are exact.
	Hits, Misses, Evictions uint64
	// Peeks counts point reads and writes that missed once the cache was
	// full and were answered by searching the page's frames on disk for
	// their key, leaving the page there (the cache admits a page only if
	// it is used again before a cache's worth of other pages was read from
	// disk).
	Peeks uint64
	// Compactions counts stub leaves handed to the background
	// consolidation (their chains grew long under blind inserts).
	Compactions uint64
	// Shortened counts resident leaves the evictor consolidated instead
	// of evicting them: in steady use (read before each of its last two
	// passes) with a chain at least a third of DeltaChainMax long or
	// holding a quarter of a leaf's bytes (their superseded versions
	// freed).
	Shortened uint64
}

// TxnStats describes transactions.
type TxnStats struct {
	// Conflicts counts writes that failed with ErrConflict; of them,
	// Deadlocks were refused because their wait would have closed a
	// cycle, and LockTimeouts waited LockTimeout in vain.
	Commits, Aborts, Conflicts, TooOld uint64
	Deadlocks, LockTimeouts            uint64
	// Requeued counts Update attempts restarted to queue behind a hot
	// key's other writers instead of racing them (not conflicts).
	Requeued uint64
	Open     int
	// OldestTxnAge is the age of the oldest open transaction;
	// OldestSnapshotAge of the oldest open reader, snapshot or
	// transaction (both pin the versions they can see).
	OldestTxnAge, OldestSnapshotAge time.Duration
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
		Carried: ts.Carried,
	}
	s.Cache.Bytes = db.pt.Resident()
	s.Cache.Misses = ts.Loads // pages read from data files
	s.Cache.Peeks = ts.Peeks
	s.Cache.Hits = ts.Hits
	cs := db.cache.Stats()
	s.Cache.Evictions = cs.Evictions
	s.Cache.StubBytes = db.tree.StubBytes()
	s.Cache.InnerBytes = db.pt.InnerResident()
	s.Cache.Compactions = cs.Compactions
	s.Cache.Shortened = cs.Shortened
	s.Recovery = db.recovery
	c := db.ckpt.Stats()
	s.Checkpoint = CheckpointStats{
		Count:          c.Count,
		Bytes:          c.Bytes,
		FramesWritten:  c.FramesWritten,
		FramesSkipped:  c.FramesSkipped,
		FramesPlain:    c.FramesPlain,
		InstalledBytes: c.Installed,
		Duration:       c.Duration,
		Frontier:       c.Frontier,
		BlobsWritten:   c.Blobs,
		BlobBytes:      c.BlobBytes,
		BlobsReused:    c.BlobsReused,
		BlobReads:      db.stats.blobReads.Load(),
	}
	s.GC = db.gcStats()
	if s.GC.Rounds == 0 && db.man != nil {
		// Before the first GC round of this Open the collector has not
		// looked at the files yet: take the totals from the manifest.
		s.GC.DataBytes, s.GC.LiveBytes = db.man.FileBytes()
		if s.GC.LiveBytes > 0 {
			s.GC.SpaceAmplification = float64(s.GC.DataBytes) / float64(s.GC.LiveBytes)
		}
	}
	s.BackpressureStalls = c.Stalls
	s.BackgroundErrors = db.stats.bgErrors.Load()
	if d := db.degraded.Load(); d != nil {
		s.Degraded = (*d).Error()
	}
	if db.wal != nil {
		ws := db.wal.Stats()
		s.WAL = WALStats{
			Bytes:          uint64(ws.Bytes),
			Records:        uint64(ws.Records),
			Syncs:          uint64(ws.Syncs),
			SyncLatency:    ws.SyncLatency,
			RecordsPerSync: ws.RecordsPerSync,
			Gathers:        uint64(ws.Gathers),
			GatherWait:     ws.GatherWait,
			SegmentsReused: uint64(ws.ReusedSegments),
			Spares:         ws.SpareSegments,
		}
	}
	s.Txn = db.txnStats()
	return s
}

// txnStats is Stats' transaction part.
func (db *DB) txnStats() TxnStats {
	s := TxnStats{
		Commits:   db.stats.commits.Load(),
		Aborts:    db.stats.aborts.Load(),
		Conflicts: db.stats.conflicts.Load(),
		TooOld:    db.stats.tooOld.Load(),

		Deadlocks:    db.stats.deadlocks.Load(),
		LockTimeouts: db.stats.lockTimeouts.Load(),
		Requeued:     db.stats.hotRestarts.Load(),
	}
	s.Open = db.txns.len()
	if t := db.mv.Oldest(); !t.IsZero() {
		s.OldestTxnAge = time.Since(t)
	}
	if t := db.mv.Registry().OldestSince(); !t.IsZero() {
		s.OldestSnapshotAge = time.Since(t)
	}
	return s
}

// Sub returns the activity between prev and s (s taken later): counters
// (commits, bytes written, rounds, ...) are differences, while gauges
// (sizes, ages, the tree's shape, the frontier, the last recovery) keep
// s's values. Ratios are recomputed over the interval.
func (s Stats) Sub(prev Stats) Stats {
	d := s
	d.WAL.Bytes -= prev.WAL.Bytes
	d.WAL.Records -= prev.WAL.Records
	d.WAL.Syncs -= prev.WAL.Syncs
	d.WAL.SyncLatency -= prev.WAL.SyncLatency
	d.WAL.Gathers -= prev.WAL.Gathers
	d.WAL.GatherWait -= prev.WAL.GatherWait
	d.WAL.SegmentsReused -= prev.WAL.SegmentsReused
	d.WAL.RecordsPerSync = 0
	if d.WAL.Syncs > 0 {
		d.WAL.RecordsPerSync = float64(d.WAL.Records) / float64(d.WAL.Syncs)
	}
	c, pc := &d.Checkpoint, prev.Checkpoint
	c.Count -= pc.Count
	c.Bytes -= pc.Bytes
	c.FramesWritten -= pc.FramesWritten
	c.FramesSkipped -= pc.FramesSkipped
	c.FramesPlain -= pc.FramesPlain
	c.InstalledBytes -= pc.InstalledBytes
	c.Duration -= pc.Duration
	g, pg := &d.GC, prev.GC
	g.FilesRewritten -= pg.FilesRewritten
	g.FilesRetired -= pg.FilesRetired
	g.FilesDeleted -= pg.FilesDeleted
	g.BytesReclaimed -= pg.BytesReclaimed
	g.BytesWritten -= pg.BytesWritten
	g.Rounds -= pg.Rounds
	t, pt := &d.Tree, prev.Tree
	t.Consolidations -= pt.Consolidations
	t.Carried -= pt.Carried
	t.Splits -= pt.Splits
	t.RootSplits -= pt.RootSplits
	t.Merges -= pt.Merges
	ca, pca := &d.Cache, prev.Cache
	ca.Hits -= pca.Hits
	ca.Misses -= pca.Misses
	ca.Peeks -= pca.Peeks
	ca.Evictions -= pca.Evictions
	ca.Compactions -= pca.Compactions
	ca.Shortened -= pca.Shortened
	x, px := &d.Txn, prev.Txn
	x.Commits -= px.Commits
	x.Aborts -= px.Aborts
	x.Conflicts -= px.Conflicts
	x.TooOld -= px.TooOld
	x.Deadlocks -= px.Deadlocks
	x.LockTimeouts -= px.LockTimeouts
	x.Requeued -= px.Requeued
	d.BackpressureStalls -= prev.BackpressureStalls
	d.BackgroundErrors -= prev.BackgroundErrors
	return d
}

// bytesIEC formats n bytes in binary units (1.5 MiB).
func bytesIEC[T int64 | uint64](n T) string {
	v := float64(n)
	const units = "KMGTPE"
	if v < 1024 && v > -1024 {
		return fmt.Sprintf("%d B", int64(n))
	}
	i := -1
	for (v >= 1024 || v <= -1024) && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}

// count formats a count with SI suffixes (12.3k, 4.5M).
func count[T int | int64 | uint64](n T) string {
	v := float64(n)
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.1fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprint(n)
}

// String prints the statistics as a table.
func (s Stats) String() string {
	var b strings.Builder
	row := func(part, name string, v any) { fmt.Fprintf(&b, "%-10s %-22s %v\n", part, name, v) }
	row("wal", "bytes", bytesIEC(s.WAL.Bytes))
	row("wal", "records", count(s.WAL.Records))
	row("wal", "syncs", count(s.WAL.Syncs))
	row("wal", "sync latency", s.WAL.SyncLatency)
	row("wal", "records/sync", fmt.Sprintf("%.1f", s.WAL.RecordsPerSync))
	row("wal", "gathers", count(s.WAL.Gathers))
	row("wal", "gather wait", s.WAL.GatherWait)
	row("wal", "segments reused", count(s.WAL.SegmentsReused))
	row("checkpoint", "count", s.Checkpoint.Count)
	row("checkpoint", "bytes", bytesIEC(s.Checkpoint.Bytes))
	row("checkpoint", "frames written", count(s.Checkpoint.FramesWritten))
	row("checkpoint", "frames skipped", count(s.Checkpoint.FramesSkipped))
	row("checkpoint", "frames plain (hot)", count(s.Checkpoint.FramesPlain))
	row("checkpoint", "installed bytes", bytesIEC(s.Checkpoint.InstalledBytes))
	row("checkpoint", "duration", s.Checkpoint.Duration)
	row("checkpoint", "frontier", s.Checkpoint.Frontier)
	row("recovery", "records replayed", count(s.Recovery.RecordsReplayed))
	row("recovery", "losers undone", s.Recovery.LosersUndone)
	row("recovery", "CLRs written", s.Recovery.CLRsWritten)
	row("recovery", "torn bytes", bytesIEC(s.Recovery.TornBytes))
	row("recovery", "damaged bytes dropped", bytesIEC(s.Recovery.DroppedBytes))
	row("recovery", "duration", s.Recovery.Duration)
	row("gc", "rounds", s.GC.Rounds)
	row("gc", "files rewritten", s.GC.FilesRewritten)
	row("gc", "files retired", s.GC.FilesRetired)
	row("gc", "files deleted", s.GC.FilesDeleted)
	row("gc", "bytes written", bytesIEC(s.GC.BytesWritten))
	row("gc", "bytes reclaimed", bytesIEC(s.GC.BytesReclaimed))
	row("gc", "data bytes", bytesIEC(s.GC.DataBytes))
	row("gc", "live bytes", bytesIEC(s.GC.LiveBytes))
	row("gc", "space amp", fmt.Sprintf("%.2f", s.GC.SpaceAmplification))
	row("gc", "pages consolidated", s.GC.PagesConsolidated)
	row("gc", "consolidate errors", s.GC.ConsolidateErrors)
	row("gc", "accounting misses", fmt.Sprintf("%d unread, %d mismatched", s.GC.AccountingUnread, s.GC.AccountingMismatched))
	row("tree", "pages", count(s.Tree.Pages))
	row("tree", "leaves", count(s.Tree.Leaves))
	row("tree", "depth", s.Tree.Depth)
	row("tree", "chain histogram", s.Tree.ChainHist)
	row("tree", "bytes", bytesIEC(s.Tree.Bytes))
	row("tree", "consolidations", count(s.Tree.Consolidations))
	row("tree", "carried", count(s.Tree.Carried))
	row("tree", "splits", count(s.Tree.Splits))
	row("tree", "root splits", s.Tree.RootSplits)
	row("tree", "merges", s.Tree.Merges)
	row("cache", "bytes", bytesIEC(s.Cache.Bytes))
	row("cache", "stub bytes", bytesIEC(s.Cache.StubBytes))
	row("cache", "inner bytes", bytesIEC(s.Cache.InnerBytes))
	row("cache", "hits", count(s.Cache.Hits))
	row("cache", "misses", count(s.Cache.Misses))
	row("cache", "peeks", count(s.Cache.Peeks))
	row("cache", "evictions", count(s.Cache.Evictions))
	row("cache", "compactions", s.Cache.Compactions)
	row("cache", "shortened", s.Cache.Shortened)
	row("txn", "commits", count(s.Txn.Commits))
	row("txn", "aborts", count(s.Txn.Aborts))
	row("txn", "conflicts", count(s.Txn.Conflicts))
	row("txn", "too old", s.Txn.TooOld)
	row("txn", "deadlocks", s.Txn.Deadlocks)
	row("txn", "lock timeouts", s.Txn.LockTimeouts)
	row("txn", "requeued", count(s.Txn.Requeued))
	row("txn", "open", s.Txn.Open)
	row("txn", "oldest txn age", s.Txn.OldestTxnAge)
	row("txn", "oldest snapshot age", s.Txn.OldestSnapshotAge)
	row("engine", "backpressure stalls", s.BackpressureStalls)
	row("engine", "background errors", s.BackgroundErrors)
	if s.Degraded != "" {
		row("engine", "degraded (read-only)", s.Degraded)
	}
	return b.String()
}
