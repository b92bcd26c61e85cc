package bwkv

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bwkv/bwkv/vfs"
)

// Durability selects when Commit returns relative to the log fsync.
type Durability int

const (
	// DurabilitySync (default): Commit returns after its record is durable;
	// concurrent commits share one fsync (group commit).
	DurabilitySync Durability = iota
	// DurabilityRelaxed: no fsync at commit. The log is flushed and synced
	// in the background every FlushInterval, at segment rotation and by
	// DB.Sync. A crash loses at most the commits since the last sync and
	// never corrupts the database.
	DurabilityRelaxed
)

func (d Durability) String() string {
	switch d {
	case DurabilitySync:
		return "sync"
	case DurabilityRelaxed:
		return "relaxed"
	}
	return fmt.Sprintf("Durability(%d)", int(d))
}

// WALRecovery says what Open does with a damaged log (the package doc's
// crash-safety section describes what counts as damage).
type WALRecovery int

const (
	// WALRecoveryStrict (default): a damaged log fails Open with an error
	// matching ErrCorruption (a *CorruptionError naming the segment file
	// and offset), and Open changes nothing. Only a torn tail, the
	// partly written end of the log a crash leaves, is cut off silently
	// (Stats.Recovery.TornBytes).
	WALRecoveryStrict WALRecovery = iota
	// WALRecoveryTruncateDamaged keeps the longest valid prefix of a
	// damaged log and drops the rest, commits acknowledged after the
	// damage included: an explicit way out of a failing Open. What was
	// dropped is reported in Stats.Recovery (Damage, DroppedBytes) and
	// logged at error level. A log damaged below the last checkpoint's
	// frontier still fails Open: its records are partly in the data files.
	WALRecoveryTruncateDamaged
)

func (r WALRecovery) String() string {
	switch r {
	case WALRecoveryStrict:
		return "strict"
	case WALRecoveryTruncateDamaged:
		return "truncate-damaged"
	}
	return fmt.Sprintf("WALRecovery(%d)", int(r))
}

// Compression selects the codec of data-file frames. It is a format
// option: the codec stored when the database was created wins on reopen
// (a differing request is logged). Every frame records its own codec, so
// a reader never needs this option to read one. A checkpoint stores the
// frames of a hot page (one written again within about two seconds of
// its previous checkpoint) uncompressed, since the next checkpoint
// supersedes them; the idle settle rewrites such pages compressed once
// writes stop, and Stats.Checkpoint.FramesPlain counts them. A database
// closed right after a burst of writes keeps those frames plain until
// their pages are written again.
type Compression int

const (
	// CompressionNone (default) stores frames as they are.
	CompressionNone Compression = iota
	// CompressionS2 compresses frames with S2 (klauspost/compress): fast,
	// a modest ratio.
	CompressionS2
	// CompressionZstd compresses frames with Zstandard at ZstdLevel.
	CompressionZstd
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionS2:
		return "s2"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// Blob thresholds (Options.BlobThreshold).
const (
	// DefaultBlobThreshold is the BlobThreshold a zero Options field
	// means.
	DefaultBlobThreshold = 4096
	// MinBlobThreshold is the smallest positive BlobThreshold Validate
	// accepts.
	MinBlobThreshold = 64
)

// walRecordOverhead bounds a log record's header and framing bytes.
const walRecordOverhead = 64

// Options configure a DB. A nil *Options means all defaults. Zero fields
// take their defaults (EnsureDefaults); Validate reports every bad field.
type Options struct {
	// Durability of commits; default DurabilitySync.
	Durability Durability
	// CheckpointBytes of dirty page data trigger a checkpoint; default 64
	// MiB. A page rewritten many times between checkpoints counts about
	// once (the checkpoint writes it once), so CheckpointBytes of log
	// written since the last checkpoint trigger one too (which bounds the
	// redo after a crash). Writers wait for the checkpointer at twice
	// either (Stats.BackpressureStalls).
	CheckpointBytes int64
	// CacheBytes is the memory budget for clean leaf pages; default 256
	// MiB. Past it, clean leaves are evicted (see the package Caveats).
	// Outside it: dirty pages (bounded by CheckpointBytes backpressure),
	// the log's append buffers (at most 2 x 16 MiB while the log's file
	// lags behind the writes, plus 64 KiB and the records of writers
	// racing to that limit) and inner pages, which stay resident
	// (Stats.Cache.InnerBytes). Inner pages
	// hold one separator per page below them: about (separator key bytes
	// + 40) per leaf at the default PageSplitEntries (measured: 51 bytes
	// per leaf, 0.2 MiB for 300k 16-byte keys), more with small pages,
	// whose inner pages' fence keys weigh more. Each resident page (stubs
	// included) also has a GC ledger entry: about 64 bytes plus 16 per
	// durable frame of its chain (under 6x DeltaChainMax). While the data
	// files hold more than twice CacheBytes of live data (until they fall
	// below 1.5 times), leaves split at 8 KiB instead of 32 KiB: most
	// reads then load their leaf from disk, and a smaller leaf is a
	// smaller read per miss (docs/architecture.md).
	CacheBytes int64
	// WALSegmentBytes is the log segment size; default 64 MiB. It must be at
	// least 2*MaxValueSize + MaxKeySize + 64 (a record never spans segments);
	// Open raises it to fit the stored MaxValueSize and MaxKeySize.
	WALSegmentBytes int64
	// DataFileBytes is the target size of a data file; default 64 MiB.
	// A GC rewrite copies about this much live data into one file, and a
	// GC round reads at most 4x max(this, CheckpointBytes) of victims.
	// (Today a checkpoint writes one file, whatever its size.)
	DataFileBytes int64
	// MaxOpenFiles bounds the data files kept open; default 500, minimum
	// 8. Least recently used files are closed past it and reopened (footer
	// and table read again) on their next read. Only files that readers
	// hold at the same moment can take the count above it.
	MaxOpenFiles int
	// MaxKeySize in bytes; default 4096. Persisted: the stored value wins.
	MaxKeySize int
	// MaxValueSize in bytes; default 4 MiB. Persisted: the stored value
	// wins, so an update or delete of any stored value can always be
	// logged with its full old value.
	MaxValueSize int
	// PageSplitEntries is the number of distinct keys above which a page
	// splits; default 128. Persisted.
	PageSplitEntries int
	// DeltaChainMax is the delta-chain length that triggers consolidation;
	// default 12. A chain holding more value bytes than a leaf may (32
	// KiB) consolidates sooner. While the cache is over CacheBytes, a page in steady
	// use (read before each of the evictor's last two passes over it) is
	// consolidated at a third of it instead
	// (its superseded versions leave memory, its reads walk a short
	// chain): the long chain suits pages written as often as read.
	DeltaChainMax int
	// BlobThreshold: a value of this many bytes or more is written once,
	// by the checkpoint that first writes it, as a blob frame of its own,
	// and the page's frames on disk hold a 16-byte reference to it (so
	// consolidating or GC-copying the page does not copy the value). 0
	// means the default, 4096; a negative value turns blobs off; a
	// positive value below 64 is refused. Persisted (0 for off): the
	// stored value wins on reopen, and a database created with blobs off
	// keeps them off. Blob frames are stored uncompressed. Pages in
	// memory hold their values: reading a page from disk reads its blobs
	// (one read each). docs/formats.md describes the format.
	BlobThreshold int
	// Compression is the codec of data-file frames: base pages, and
	// deltas when that pays (a frame is stored compressed only if it
	// shrinks by 1/16 or more). Default CompressionNone. Persisted: the
	// stored codec wins. The log is not compressed.
	Compression Compression
	// ZstdLevel is the Zstandard level (1-22; 0: the default, 3) with
	// CompressionZstd, mapped to the nearest level the encoder implements
	// (about 1, 3, 7 and 11). It must be 0 with another codec. Not
	// persisted: it affects only how new frames are written.
	ZstdLevel int
	// MaxTxnLag is the number of log bytes a transaction may fall behind
	// the head before the engine aborts it (ErrTxnTooOld, returned by its
	// next call; each call checks, as each checkpoint does for every open
	// transaction); default 512 MiB.
	MaxTxnLag int64
	// FlushInterval is Relaxed mode's background flush period; default 10 ms.
	FlushInterval time.Duration
	// GCLiveRatio: a data file whose live bytes fall below this fraction
	// of its frame bytes is rewritten by the data-file GC (its live frames
	// copied to a new file, the old one deleted); default 0.5, at most 1.
	// While writes go on, the rounds after each checkpoint use an eighth
	// of this ratio (and 6 times GCSpaceAmp's slack, below): the GC copies
	// less per byte it reclaims while the data keeps changing, and an idle
	// database (or DB.Checkpoint) brings the files back within both.
	GCLiveRatio float64
	// GCSpaceAmp: while the data files hold more than this multiple of
	// their live bytes, the GC also rewrites the least-live files
	// (those below 90% live), whatever GCLiveRatio says; default 1.25,
	// at least 1. While writes go on the rounds let the data files reach
	// 1 + 6 x (GCSpaceAmp - 1) (2.5 at the default) before they rewrite
	// files for the amplification alone; once writes stop for a few
	// seconds the database settles back within GCSpaceAmp. A database
	// that must stay smaller while it is written lowers GCSpaceAmp (1.1
	// gives 1.6 while writing).
	GCSpaceAmp float64
	// LockTimeout bounds how long a write waits for another transaction's
	// uncommitted version of its key to end (then ErrConflict); default
	// 1 s. A negative value fails at once, without waiting.
	LockTimeout time.Duration
	// MaxUpdateRetries is how many times Update and UpdateContext re-run
	// fn after ErrConflict (jittered exponential backoff); default 32. A
	// negative value disables retries.
	MaxUpdateRetries int
	// EventListener, if set, receives background events (checkpoints,
	// GC rounds, stalls, background errors, recovery); see its doc.
	EventListener *EventListener
	// WALRecovery says what Open does with a damaged log; default
	// WALRecoveryStrict.
	WALRecovery WALRecovery
	// ReadOnly opens without writing a byte: recovery's redo and undo run
	// in memory only (the next read-write open repeats them for good), no
	// orphan file is deleted, no log is truncated or recycled, the
	// manifest is not touched, and the directory lock is taken shared, so
	// any number of read-only handles coexist while a read-write open
	// fails with ErrLocked. No background work runs; writes return
	// ErrReadOnly.
	ReadOnly bool
	// ErrorIfNotExist makes Open fail if the database does not exist.
	ErrorIfNotExist bool
	// Logger receives the engine's log; nil is silent.
	Logger *slog.Logger
	// FS is the file system; nil means the OS.
	FS vfs.FS

	// testHooks carries test knobs to Open (hooks.go); set only by the
	// package's tests.
	testHooks *testHooks
}

// Clone returns a copy of o (nil: a zero Options).
func (o *Options) Clone() *Options {
	if o == nil {
		return &Options{}
	}
	c := *o
	return &c
}

// EnsureDefaults fills every zero field with its default and returns o.
// On a nil *Options (which Open reads as all defaults) it returns new
// Options holding the defaults.
func (o *Options) EnsureDefaults() *Options {
	if o == nil {
		o = &Options{}
	}
	if o.CheckpointBytes == 0 {
		o.CheckpointBytes = 64 << 20
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = 256 << 20
	}
	if o.MaxKeySize == 0 {
		o.MaxKeySize = 4096
	}
	if o.MaxValueSize == 0 {
		o.MaxValueSize = 4 << 20
	}
	if o.WALSegmentBytes == 0 {
		o.WALSegmentBytes = 64 << 20
		if min := o.minSegment(); o.WALSegmentBytes < min {
			o.WALSegmentBytes = min
		}
	}
	if o.DataFileBytes == 0 {
		o.DataFileBytes = 64 << 20
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = 500
	}
	if o.PageSplitEntries == 0 {
		o.PageSplitEntries = 128
	}
	if o.BlobThreshold == 0 {
		o.BlobThreshold = DefaultBlobThreshold
	}
	if o.DeltaChainMax == 0 {
		o.DeltaChainMax = 12
	}
	if o.MaxTxnLag == 0 {
		o.MaxTxnLag = 512 << 20
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = 10 * time.Millisecond
	}
	if o.GCLiveRatio == 0 {
		o.GCLiveRatio = 0.5
	}
	if o.GCSpaceAmp == 0 {
		o.GCSpaceAmp = 1.25
	}
	if o.LockTimeout == 0 {
		o.LockTimeout = time.Second
	}
	if o.MaxUpdateRetries == 0 {
		o.MaxUpdateRetries = 32
	}
	if o.FS == nil {
		o.FS = vfs.Default()
	}
	return o
}

func (o *Options) minSegment() int64 {
	return 2*int64(o.MaxValueSize) + int64(o.MaxKeySize) + walRecordOverhead
}

// Validate reports every invalid field at once. A nil *Options is the
// defaults.
func (o *Options) Validate() error {
	if o == nil { // nil means the defaults
		return o.EnsureDefaults().Validate()
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("bwkv: options: "+format, a...)) }
	if o.Durability != DurabilitySync && o.Durability != DurabilityRelaxed {
		bad("Durability %d is not DurabilitySync or DurabilityRelaxed", int(o.Durability))
	}
	if o.WALRecovery != WALRecoveryStrict && o.WALRecovery != WALRecoveryTruncateDamaged {
		bad("WALRecovery %d is not WALRecoveryStrict or WALRecoveryTruncateDamaged", int(o.WALRecovery))
	}
	if o.CheckpointBytes < 4096 {
		bad("CheckpointBytes %d < 4096", o.CheckpointBytes)
	}
	if o.CacheBytes < 0 {
		bad("CacheBytes %d < 0", o.CacheBytes)
	}
	if o.MaxKeySize < 1 || o.MaxKeySize > 1<<16 {
		bad("MaxKeySize %d not in [1, 65536]", o.MaxKeySize)
	}
	if o.MaxValueSize < 1 || o.MaxValueSize > 1<<30 {
		bad("MaxValueSize %d not in [1, 1 GiB]", o.MaxValueSize)
	}
	if o.WALSegmentBytes < o.minSegment() {
		bad("WALSegmentBytes %d < 2*MaxValueSize + MaxKeySize + %d = %d", o.WALSegmentBytes, walRecordOverhead, o.minSegment())
	}
	if o.DataFileBytes < 4096 {
		bad("DataFileBytes %d < 4096", o.DataFileBytes)
	}
	if o.MaxOpenFiles < 8 {
		bad("MaxOpenFiles %d < 8", o.MaxOpenFiles)
	}
	if o.PageSplitEntries < 4 {
		bad("PageSplitEntries %d < 4", o.PageSplitEntries)
	}
	if o.DeltaChainMax < 1 {
		bad("DeltaChainMax %d < 1", o.DeltaChainMax)
	}
	if o.Compression < CompressionNone || o.Compression > CompressionZstd {
		bad("Compression %d is not CompressionNone, CompressionS2 or CompressionZstd", int(o.Compression))
	}
	if o.ZstdLevel < 0 || o.ZstdLevel > 22 {
		bad("ZstdLevel %d not in [0, 22]", o.ZstdLevel)
	} else if o.ZstdLevel != 0 && o.Compression != CompressionZstd {
		bad("ZstdLevel %d without CompressionZstd", o.ZstdLevel)
	}
	if o.BlobThreshold > 0 && o.BlobThreshold < MinBlobThreshold {
		bad("BlobThreshold %d < %d (a blob reference takes 16 bytes and a blob frame 48 more; use a negative value to turn blobs off)", o.BlobThreshold, MinBlobThreshold)
	}
	if o.MaxTxnLag < 1 {
		bad("MaxTxnLag %d < 1", o.MaxTxnLag)
	}
	if o.FlushInterval < 0 {
		bad("FlushInterval %v < 0", o.FlushInterval)
	}
	if !(o.GCLiveRatio >= 0 && o.GCLiveRatio <= 1) {
		bad("GCLiveRatio %v not in [0, 1]", o.GCLiveRatio)
	}
	if !(o.GCSpaceAmp >= 1) {
		bad("GCSpaceAmp %v < 1", o.GCSpaceAmp)
	}
	if o.FS == nil {
		bad("FS is nil (call EnsureDefaults)")
	}
	return errors.Join(errs...)
}

// Options returns the options in effect: the requested ones with their
// defaults, where the stored format options (PageSplitEntries,
// BlobThreshold, MaxKeySize, MaxValueSize, Compression) replace the
// requested ones. Safe
// for concurrent use.
func (db *DB) Options() Options { return db.opts }
