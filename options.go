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

// walRecordOverhead bounds a log record's header and framing bytes.
const walRecordOverhead = 64

// Options configure a DB. A nil *Options means all defaults. Zero fields
// take their defaults (EnsureDefaults); Validate reports every bad field.
type Options struct {
	// Durability of commits; default DurabilitySync.
	Durability Durability
	// CheckpointBytes of dirty page data trigger a checkpoint; default 64 MiB.
	CheckpointBytes int64
	// CacheBytes is the memory budget for clean pages; default 256 MiB.
	// Past it, clean leaves are evicted (see the package Caveats).
	CacheBytes int64
	// WALSegmentBytes is the log segment size; default 64 MiB. It must be at
	// least 2*MaxValueSize + MaxKeySize + 64 (a record never spans segments).
	WALSegmentBytes int64
	// DataFileBytes is the target size of a data file; default 64 MiB.
	// A GC rewrite copies about this much live data into one file, and a
	// GC round reads at most 4x max(this, CheckpointBytes) of victims.
	// (Today a checkpoint writes one file, whatever its size.)
	DataFileBytes int64
	// MaxKeySize in bytes; default 4096. Persisted: the stored value wins.
	MaxKeySize int
	// MaxValueSize in bytes; default 4 MiB.
	MaxValueSize int
	// PageSplitEntries is the number of distinct keys above which a page
	// splits; default 128. Persisted.
	PageSplitEntries int
	// DeltaChainMax is the delta-chain length that triggers consolidation;
	// default 12.
	DeltaChainMax int
	// BlobThreshold: values above it go to blob files; default 8192.
	// Persisted. Blob files are not built yet: values stay in pages.
	BlobThreshold int
	// Compression enables zstd per frame in data files. Persisted; not
	// applied yet (frames are written uncompressed).
	Compression bool
	// MaxTxnLag is the number of log bytes a transaction may fall behind
	// the head before the engine aborts it (ErrTxnTooOld); default 512 MiB.
	MaxTxnLag int64
	// FlushInterval is Relaxed mode's background flush period; default 10 ms.
	FlushInterval time.Duration
	// GCLiveRatio: a data file whose live bytes fall below this fraction
	// of its frame bytes is rewritten by the data-file GC (its live frames
	// copied to a new file, the old one deleted); default 0.5, at most 1.
	GCLiveRatio float64
	// GCSpaceAmp: while the data files hold more than this multiple of
	// their live bytes, the GC also rewrites the least-live files
	// (those below 90% live), whatever GCLiveRatio says; default 1.25,
	// at least 1. With the log and the manifest this keeps the directory
	// within about 1.5x the live data under steady updates.
	GCSpaceAmp float64
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
func (o *Options) EnsureDefaults() *Options {
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
	if o.PageSplitEntries == 0 {
		o.PageSplitEntries = 128
	}
	if o.DeltaChainMax == 0 {
		o.DeltaChainMax = 12
	}
	if o.BlobThreshold == 0 {
		o.BlobThreshold = 8192
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
	if o.FS == nil {
		o.FS = vfs.Default()
	}
	return o
}

func (o *Options) minSegment() int64 {
	return 2*int64(o.MaxValueSize) + int64(o.MaxKeySize) + walRecordOverhead
}

// Validate reports every invalid field at once.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("bwkv: options: "+format, a...)) }
	if o.Durability != DurabilitySync && o.Durability != DurabilityRelaxed {
		bad("Durability %d is not DurabilitySync or DurabilityRelaxed", int(o.Durability))
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
	if o.PageSplitEntries < 4 {
		bad("PageSplitEntries %d < 4", o.PageSplitEntries)
	}
	if o.DeltaChainMax < 1 {
		bad("DeltaChainMax %d < 1", o.DeltaChainMax)
	}
	if o.BlobThreshold < 1 {
		bad("BlobThreshold %d < 1", o.BlobThreshold)
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
