package manifest

import "github.com/bwkv/bwkv/internal/base"

// FormatVersion is the newest on-disk format version this code understands.
// An Edit may record it (HasFormatVersion); a larger recorded value makes
// Open fail with base.ErrVersion. Version 2 added blob frames and blob
// references (docs/formats.md); a version-1 database holds neither (its
// stored BlobThreshold is 0) and is read as it is. Version 3 binds each log
// record to its LSN (the record's CRC covers it first), so the log can
// reuse its retired segment files; a database of version 1 or 2 keeps
// its log's layout. Version 4 logs an update's or delete's old value
// apart from the write, in a before-image at the next cut while the
// transaction is open (wal.Image); a database of an older version logs
// old values in the write records, as before.
const FormatVersion = 4

// LogBoundFormat is the first format version whose log binds each record
// to its LSN (wal.Options.BindLSN).
const LogBoundFormat = 3

// DeferredOldFormat is the first format version whose writes may log
// their old value in a before-image (wal.Record.OldDeferred).
const DeferredOldFormat = 4

// Blob frames have logical addresses of their own (docs/formats.md): the
// checkpoint that writes data file f gives its i-th blob the address
// BlobAddr(f, i), with the top bit set, so blob addresses never meet the
// page frames' counter (NextAddr) and need no counter of their own. A GC
// rewrite moves a blob with its address, like any frame.
const (
	// BlobAddrBit is set in every blob address and in no other.
	BlobAddrBit = 1 << 63
	// MaxBlobsPerFile bounds the blobs one checkpoint writes.
	MaxBlobsPerFile = 1 << blobFileShift
	blobFileShift   = 24
	// maxBlobFile is the largest file id whose blob addresses fit.
	maxBlobFile = 1<<(63-blobFileShift) - 1
)

// BlobAddr returns the address of the i-th blob written with data file f
// (i < MaxBlobsPerFile, f <= 2^39-1).
func BlobAddr(f FileID, i uint64) uint64 {
	return BlobAddrBit | uint64(f)<<blobFileShift | i
}

// IsBlobAddr reports whether a is a blob frame's address.
func IsBlobAddr(a uint64) bool { return a&BlobAddrBit != 0 }

// FileID names a data file (base.FileID). IDs come from the NextFileID
// counter and are never reused; NoFile (0) is never a file.
type FileID = base.FileID

// NoFile is the zero FileID: "no file" (e.g. no GC rewrite staged).
const NoFile FileID = 0

// PageEntry maps a page ID to the logical address of its newest durable
// frame.
type PageEntry struct {
	PID  uint64
	Addr uint64
}

// Range maps the logical addresses [Lo, Hi) to the data file that holds
// them.
type Range struct {
	Lo, Hi uint64
	File   FileID
}

// FileMeta is a data file's identity and byte accounting: Total bytes
// written, Live bytes still reachable (Total-Live is junk).
type FileMeta struct {
	ID    FileID
	Total int64
	Live  int64
}

// FormatOptions are the format-defining options persisted at creation
// (docs/guarantees.md): on reopen the stored values win. The zero value means
// "never recorded".
type FormatOptions struct {
	PageSplitEntries int
	BlobThreshold    int
	MaxKeySize       int
	// Compression names the frame codec: "" for none, "s2" or "zstd".
	Compression string
	// MaxValueSize bounds a value (0: not recorded, from a manifest
	// written before it was persisted). It is format-defining because the
	// log must be able to hold an update or delete record carrying the
	// full old value of any stored value: WAL segments are sized from it.
	MaxValueSize int
}

// Field is a set of presence flags for the optional scalar fields of an
// Edit. Slice fields need no flag: they are present when non-empty.
type Field uint32

// The presence flags; each names the Edit field it guards.
const (
	HasFormatVersion Field = 1 << iota
	HasOptions
	HasNextPID
	HasNextAddr
	HasNextFileID
	HasOracle
	HasNextManifest
	HasFrontier
	HasAnalysisStart
	HasStageFile
	HasLogSynced

	allFields = HasLogSynced<<1 - 1
)

// Edit is one manifest record: a change to the State. Scalars are applied
// only when their flag is in Has; slices are applied when non-empty. Within
// one edit the parts apply in this order: scalars, AddFiles, RemoveRanges,
// AddRanges, RemovePages, SetPages, FileStats, PendingDeletes,
// DeletedFiles. State.Apply documents what makes an edit valid.
//
// An Edit is plain data: the caller owns it, and Commit neither keeps nor
// modifies it.
type Edit struct {
	// Has says which scalar fields below are present.
	Has Field

	// FormatVersion is the on-disk format version (HasFormatVersion).
	FormatVersion uint64
	// Options are the format-defining options (HasOptions).
	Options FormatOptions

	// Counters; each only moves forward.
	NextPID    uint64 // next page ID to allocate (HasNextPID)
	NextAddr   uint64 // next logical address to draw (HasNextAddr)
	NextFileID FileID // next data-file ID to allocate (HasNextFileID)
	Oracle     uint64 // timestamp oracle (HasOracle)
	// NextManifest is the number of the next MANIFEST-%06d file. It belongs
	// to the Manifest's rotation; Commit rejects edits that set it.
	NextManifest uint64 // (HasNextManifest)

	// Frontier is the WAL LSN covered by the page checkpoint (HasFrontier);
	// AnalysisStart is where recovery's analysis starts (HasAnalysisStart),
	// never above Frontier.
	Frontier      uint64
	AnalysisStart uint64

	// LogSynced is the log LSN a checkpoint publish had fsynced before
	// its manifest commit (HasLogSynced). It moves forward, except when an
	// open that truncated a damaged log lowers it to the new end. Every log
	// byte below it was durable, so a log that ends below it, or a bad
	// record below it, is damage, never a torn tail (wal package doc).
	LogSynced uint64

	// StageFile marks the data file a GC rewrite is writing (HasStageFile);
	// NoFile clears the mark. The DB's Open deletes a staged file: no range
	// names it yet (docs/crash-safety.md).
	StageFile FileID

	// Page table changes.
	SetPages    []PageEntry
	RemovePages []uint64

	// Address-range map changes. A removal names an existing range exactly.
	AddRanges    []Range
	RemoveRanges []Range

	// AddFiles registers new data files; FileStats replaces the byte
	// accounting of existing ones.
	AddFiles  []FileMeta
	FileStats []FileMeta

	// PendingDeletes retires data files (Open must finish deleting them);
	// DeletedFiles records that the deletion is done.
	PendingDeletes []FileID
	DeletedFiles   []FileID
}
