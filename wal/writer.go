package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/vfs"
)

// Errors returned by the Writer. Failures wrap ErrFailed and the first
// underlying error, so errors.Is works for both.
var (
	// ErrClosed is returned by calls on a closed Writer.
	ErrClosed = errors.New("wal: closed")
	// ErrFailed marks a Writer that stopped after a failed write or fsync.
	// A failed fsync is never retried: the kernel may have dropped the
	// dirty pages, so a later success would prove nothing.
	ErrFailed = errors.New("wal: writer failed")
	// ErrRecordTooLarge is returned by Append for a record that does not
	// fit in one segment (a record never spans segments).
	ErrRecordTooLarge = errors.New("wal: record too large")
	// ErrInvalidRecord is returned by Append for an unknown record type.
	ErrInvalidRecord = errors.New("wal: invalid record")
)

// Defaults and limits for Options.
const (
	DefaultSegmentBytes  = 64 << 20
	DefaultFlushInterval = 20 * time.Millisecond
	MinSegmentBytes      = 4 << 10
)

// Past softFlushBytes the buffered bytes are due for a write-out
// (FlushDue), which the engine makes once the appending transaction ended
// and holds no lock another writer may wait for; past twice that the
// background goroutine is asked to write them; past hardFlushBytes an
// appender writes them itself, which bounds the append buffer (and is the
// log's backpressure) when the file cannot keep up.
//
// hardFlushBytes is the headroom appenders have while a write-out holds
// the file, above all while a rotation fsyncs the full segment and the
// directory: tens of milliseconds when checkpoints keep the device busy.
// At 4 MiB, updates of 16 KiB values (about 450 MB/s of log, old values
// included) reached it during each rotation and waited for it under their
// page locks, 14% of the writers' time; at 16 MiB they did not (4
// alternated pairs: p99 -48%, ops +6%; 1 KiB values unchanged). The
// append buffer and its spare are each bounded by it (plus one record):
// at most 32 MiB of memory outside the cache budget, plus the records of
// appenders that raced to the limit (growAppendBuffer). A buffer that
// grew past it (those racing appenders, or one record larger than the
// limit) is dropped once written out, not kept as the spare (flush).
const (
	softFlushBytes = 256 << 10
	hardFlushBytes = 16 << 20
)

// overLimitSlack is the least room an append buffer gains when an
// appender grows it past hardFlushBytes. Every appender past the limit
// then writes the buffer out itself; the room saves a copy of the whole
// buffer for each further appender that raced to the limit.
const overLimitSlack = 64 << 10

// growAppendBuffer returns buf with room for need bytes. It doubles the
// capacity, up to hardFlushBytes, instead of leaving the growth to
// append: append grows a large slice by a quarter, so a record crossing
// the limit could leave a buffer of 20 MiB, and both the buffer and its
// spare keep their capacity. Past the limit the buffer gets the bytes
// needed and as much again as they are over the limit (at least
// overLimitSlack): appenders racing past the limit while a write-out
// holds the file then cost a copy of the whole buffer each time their
// bytes over the limit double, not every overLimitSlack bytes, and the
// buffer stays within twice the bytes over the limit.
func growAppendBuffer(buf []byte, need int) []byte {
	c := min(2*cap(buf), hardFlushBytes)
	if c < need {
		c = need
		if need > hardFlushBytes {
			c += max(overLimitSlack, need-hardFlushBytes)
		}
	}
	nb := make([]byte, len(buf), c)
	copy(nb, buf)
	return nb
}

// Options configures a Writer. The zero value of a field selects its
// default.
type Options struct {
	FS  vfs.FS // required
	Dir string // required; created if missing

	// SegmentBytes caps a segment file: a record that would make the
	// segment larger starts a new one. Default DefaultSegmentBytes; at
	// least MinSegmentBytes.
	SegmentBytes int64
	// Relaxed: commits do not fsync; a background goroutine writes and
	// fsyncs every FlushInterval (default DefaultFlushInterval). Sync
	// still works and is the caller's flush point.
	Relaxed       bool
	FlushInterval time.Duration
	// BindLSN binds every record to its position: its CRC covers its LSN
	// first (codec.go), so a record reads back only at the LSN it was
	// written at. Replay must be told the same (ReplayOptions.BindLSN).
	BindLSN bool
	// Spares is how many retired segment files Recycle keeps, renamed
	// to spare names, for rotations to reuse (at most MaxSpares; 0: it
	// deletes them). A reused file's blocks are already written, so a
	// commit's fdatasync there commits no extent conversion of fallocated
	// blocks (on ext4 the first write into one journals it). Its stale
	// records stay behind the new ones until they are overwritten, so
	// Spares needs BindLSN: a stale record then fails its CRC where it
	// lies and reads as the end of the log, never as a record.
	Spares int
}

// MaxSpares bounds Options.Spares: each spare is a segment's worth of
// disk the log holds beyond its live segments.
const MaxSpares = 8

// validate fills in defaults and reports every bad field at once.
func (o *Options) validate() error {
	if o.SegmentBytes == 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	var errs []error
	if o.FS == nil {
		errs = append(errs, errors.New("wal: Options.FS is nil"))
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("wal: Options.Dir is empty"))
	}
	if o.SegmentBytes < MinSegmentBytes {
		errs = append(errs, fmt.Errorf("wal: Options.SegmentBytes %d is below %d", o.SegmentBytes, MinSegmentBytes))
	}
	if o.FlushInterval < 0 {
		errs = append(errs, fmt.Errorf("wal: Options.FlushInterval %v is negative", o.FlushInterval))
	}
	if o.Spares < 0 || o.Spares > MaxSpares {
		errs = append(errs, fmt.Errorf("wal: Options.Spares %d is outside [0, %d]", o.Spares, MaxSpares))
	}
	if o.Spares > 0 && !o.BindLSN {
		errs = append(errs, errors.New("wal: Options.Spares needs BindLSN (a reused file's stale records would read as valid)"))
	}
	return errors.Join(errs...)
}

// Writer appends records to the log and makes them durable with group
// commit. All methods are safe for concurrent use.
type Writer struct {
	// The locks: mu, the append mutex, covers encoding a record into the
	// pending buffer and nothing else; it is never held across a file write
	// or an fsync. writeMu is held by the one goroutine moving pending bytes
	// to the files (writes, rotation): the group-commit leader, Flush, an
	// appender relieving a full buffer, or Close. fsyncMu is held across
	// every fsync, which runs outside writeMu. syncMu and syncCond elect the
	// group-commit leader (group_commit.go). Lock order: writeMu, fsyncMu,
	// mu; syncMu is never held while taking another lock.

	fs       vfs.FS
	dir      string
	segBytes int64
	bind     bool // Options.BindLSN
	// spareMu guards spareFiles, the spare files' paths (at most maxSpares),
	// oldest first. Taken after recycleMu or writeMu and fsyncMu, and
	// never with another lock after it.
	spareMu    sync.Mutex
	spareFiles []string
	maxSpares  int

	mu       sync.Mutex // the append mutex
	buf      []byte     // mu: encoded records [bufStart, head) not yet taken by a flusher
	bounds   []bound    // mu: segment starts in [bufStart, head), ascending
	bufStart LSN        // mu
	segLen   int64      // mu: bytes appended to the newest segment
	records  int64      // mu: records appended since Open
	closed   bool       // mu

	head    atomic.Uint64 // written under mu: just past the last appended record
	durable atomic.Uint64 // written under fsyncMu: every byte below is fsynced
	fail    atomic.Pointer[failure]
	// due (written under mu): Append found softFlushBytes or more
	// pending; the flush that takes the buffer clears it (FlushDue).
	due atomic.Bool

	writeMu   sync.Mutex
	file      vfs.File // writeMu: the newest segment; nil after Close
	fileStart LSN      // writeMu: its first LSN
	written   LSN      // writeMu: every byte below is written to a file
	// trimmed (writeMu): TrimTail cut the current segment's preallocated
	// zeros; the next write preallocates the segment again.
	trimmed     bool
	writtenRecs int64   // writeMu: records below written
	spare       []byte  // writeMu: the other half of the double buffer
	spareBounds []bound // writeMu

	fsyncMu    sync.Mutex // held across every segment fsync; see group_commit.go
	syncedRecs int64      // fsyncMu: records below durable

	syncMu   sync.Mutex
	syncCond sync.Cond // L = &syncMu; broadcast when a leader finishes
	syncing  bool      // syncMu: a Sync leader is writing and fsyncing

	recycleMu sync.Mutex // serializes Recycle calls

	// The background goroutine (loop): the relaxed-mode flusher and the
	// rotator, which moves pending bytes that cross a segment boundary to
	// the files, so that no appender runs a rotation's fsync below the
	// hard limit (appenders call Append under a page lock).
	stop    chan struct{} // closed by Close to stop the background goroutine
	done    chan struct{} // closed by the background goroutine when it exits
	rotKick chan struct{} // capacity 1: pending bytes cross a segment boundary

	startLSN LSN
	stats    counters
	// gather holds back a Sync leader for the writers about to commit
	// (gather.go).
	gather gatherer
}

// bound marks where a new segment starts inside the pending bytes, and how
// many records were appended before it.
type bound struct {
	lsn     LSN
	records int64
}

type failure struct{ err error }

// Open opens the log in o.Dir for appending at at, the end of valid data
// that Replay reported (ReplayResult.End), or the start LSN of a new log.
// If the newest segment holds at, it is truncated there (dropping the torn
// tail Replay counted) and fsynced; if there is no segment, one named at is
// created and the directory fsynced. Any other layout (a segment beyond at,
// or a gap before it) is an error, because it means at did not come from
// Replay over this directory.
func Open(o Options, at LSN) (*Writer, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := mkdirDurable(o.FS, o.Dir); err != nil {
		return nil, err
	}
	segs, err := Segments(o.FS, o.Dir)
	if err != nil {
		return nil, err
	}
	spares, err := openSpares(o)
	if err != nil {
		return nil, err
	}
	w := &Writer{fs: o.FS, dir: o.Dir, segBytes: o.SegmentBytes, startLSN: at,
		bind: o.BindLSN, maxSpares: o.Spares, spareFiles: spares,
		// Sized so a steady stream fits without growing the buffers.
		buf:   make([]byte, 0, 2*softFlushBytes),
		spare: make([]byte, 0, 2*softFlushBytes),
	}
	w.syncCond.L = &w.syncMu
	if len(segs) == 0 {
		if err := w.createSegment(at); err != nil {
			return nil, err
		}
	} else if err := w.continueSegment(segs[len(segs)-1], at); err != nil {
		return nil, err
	}
	w.bufStart, w.written = at, at
	w.segLen = int64(at - w.fileStart)
	w.head.Store(uint64(at))
	w.durable.Store(uint64(at))
	w.stop, w.done, w.rotKick = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
	w.gather.wake = make(chan struct{}, 1)
	go w.loop(o.Relaxed, o.FlushInterval)
	return w, nil
}

// mkdirDurable creates dir and its missing parents and fsyncs the parent of
// each directory it created, so that the directory survives a power loss
// along with the segments synced into it.
func mkdirDurable(fs vfs.FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("wal: stat %s: %w", d, err)
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("wal: create %s: %w", dir, err)
	}
	for _, d := range created {
		if parent := filepath.Dir(d); parent != d {
			if err := fs.SyncDir(parent); err != nil {
				return fmt.Errorf("wal: sync dir %s after creating %s: %w", parent, d, err)
			}
		}
	}
	return nil
}

// createSegment creates the segment starting at lsn, makes its directory
// entry durable and makes it the current file.
func (w *Writer) createSegment(lsn LSN) error {
	path := segmentPath(w.dir, lsn)
	f, err := w.fs.Create(path)
	if err != nil {
		return fmt.Errorf("wal: create %s: %w", path, err)
	}
	if err := vfs.Preallocate(f, w.segBytes); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: preallocate %s: %w", path, err)
	}
	if err := w.fs.SyncDir(w.dir); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: sync dir %s after creating %s: %w", w.dir, path, err)
	}
	w.file, w.fileStart = f, lsn
	return nil
}

// continueSegment opens the newest segment, which starts at last, for
// appending at at.
func (w *Writer) continueSegment(last, at LSN) error {
	path := segmentPath(w.dir, last)
	if at < last {
		return fmt.Errorf("wal: open at %d: segment %s starts beyond it", at, path)
	}
	f, err := w.fs.OpenReadWrite(path)
	if err != nil {
		return fmt.Errorf("wal: open %s: %w", path, err)
	}
	size, err := f.Size()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: size of %s: %w", path, err)
	}
	off := int64(at - last)
	if off > size {
		_ = f.Close()
		return fmt.Errorf("wal: open at %d: %s ends at %d", at, path, uint64(last)+uint64(size))
	}
	if off < size {
		if err := f.Truncate(off); err != nil {
			_ = f.Close()
			return fmt.Errorf("wal: truncate %s at %d: %w", path, off, err)
		}
	}
	if err := vfs.Preallocate(f, w.segBytes); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: preallocate %s: %w", path, err)
	}
	// The bytes Replay read may still be only in the page cache (a crashed
	// process, not a lost machine), and a truncation is durable only after
	// a sync: make both durable before anything is appended after them.
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("wal: sync %s: %w", path, err)
	}
	w.file, w.fileStart = f, last
	return nil
}

// Append encodes r at the head of the log and returns its LSN. The record
// is buffered: Sync makes it durable, Flush writes it to the file. r is not
// retained. In steady state Append allocates nothing.
func (w *Writer) Append(r *Record) (lsn LSN, err error) {
	if err := failpoints.Hit(failpoints.WALAppend); err != nil {
		return 0, fmt.Errorf("wal: append: %w", err)
	}
	if !r.Type.Valid() {
		return 0, fmt.Errorf("%w: type %d", ErrInvalidRecord, r.Type)
	}
	size := EncodedSize(r)
	if int64(size) > w.segBytes || int64(size) > MaxRecordBytes {
		return 0, fmt.Errorf("%w: %d bytes, segment size %d", ErrRecordTooLarge, size, w.segBytes)
	}

	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return 0, ErrClosed
	}
	if f := w.fail.Load(); f != nil {
		w.mu.Unlock()
		return 0, f.err
	}
	lsn = LSN(w.head.Load())
	if w.segLen+int64(size) > w.segBytes && w.segLen > 0 {
		w.bounds = append(w.bounds, bound{lsn: lsn, records: w.records})
		w.segLen = 0
	}
	if need := len(w.buf) + size; need > cap(w.buf) {
		w.buf = growAppendBuffer(w.buf, need)
	}
	w.buf = appendEncode(w.buf, r, size, seedAt(lsn, w.bind))
	w.segLen += int64(size)
	w.records++
	w.head.Store(uint64(lsn) + uint64(size))
	pending, boundary := len(w.buf), len(w.bounds) > 0
	if pending >= softFlushBytes && !w.due.Load() {
		w.due.Store(true)
	}
	w.mu.Unlock()

	// The caller may hold a page lock, the cut gate and its
	// transaction's key locks: below the hard limit it never waits for
	// the file, and never rotates (a rotation fsyncs the full segment,
	// then creates the next and fsyncs the directory). Past the soft
	// limit the bytes are due: the engine writes them out with FlushDue
	// once the transaction ended. (Appenders once wrote them themselves
	// here, and every writer queued on the transaction's keys or its
	// page waited for that write too.) Bytes that cross a segment
	// boundary, or that pile up to twice the soft limit (a long
	// transaction), go to the background goroutine.
	switch {
	case pending >= hardFlushBytes:
		// The log's backpressure: the files cannot keep up, and this
		// appender writes (and rotates) itself.
		w.writeMu.Lock()
		_, err = w.flush(true)
		w.writeMu.Unlock()
	case pending >= softFlushBytes && (boundary || pending >= 2*softFlushBytes):
		w.kickRotation()
	}
	if err != nil {
		return 0, err
	}
	return lsn, nil
}

// FlushDue writes the pending bytes to the file if they are due (an
// Append found softFlushBytes or more) and no other goroutine is writing
// them out; it never fsyncs, never rotates (bytes that cross a segment
// boundary go to the background goroutine) and never waits for the
// file. The engine calls it when a transaction has ended, outside every
// lock. O(1) when nothing is due.
func (w *Writer) FlushDue() error {
	if !w.due.Load() || !w.writeMu.TryLock() {
		return nil
	}
	var deferred bool
	var err error
	if w.file != nil { // nil: closed
		deferred, err = w.flush(false)
	}
	w.writeMu.Unlock()
	if deferred {
		w.kickRotation()
	}
	return err
}

// kickRotation asks the background goroutine to write out the pending
// bytes, rotating where they cross a segment boundary.
func (w *Writer) kickRotation() {
	select {
	case w.rotKick <- struct{}{}:
	default:
	}
}

// Head returns the LSN just past the last appended record.
func (w *Writer) Head() LSN { return LSN(w.head.Load()) }

// DurableLSN returns the LSN below which every byte is fsynced.
func (w *Writer) DurableLSN() LSN { return LSN(w.durable.Load()) }

// failure returns the error that failed the writer, or nil.
func (w *Writer) failure() error {
	if f := w.fail.Load(); f != nil {
		return f.err
	}
	return nil
}

// setFailed records err as the writer's failure unless an earlier one is
// recorded, and returns the recorded failure.
func (w *Writer) setFailed(err error) error {
	w.fail.CompareAndSwap(nil, &failure{err: fmt.Errorf("%w: %w", ErrFailed, err)})
	return w.fail.Load().err
}

// Recycle deletes the segments that lie wholly below below, oldest first,
// or keeps them as spares (Options.Spares, spare.go), then fsyncs the
// directory. Only bytes already durable are eligible, and the newest
// segment is never deleted.
func (w *Writer) Recycle(below LSN) error {
	w.recycleMu.Lock()
	defer w.recycleMu.Unlock()
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if d := w.DurableLSN(); below > d {
		below = d
	}
	segs, err := Segments(w.fs, w.dir)
	if err != nil {
		return err
	}
	// Segment i ends where segment i+1 starts: it is wholly below below
	// iff its successor starts at or below it.
	n := 0
	for n+1 < len(segs) && segs[n+1] <= below {
		if err := w.retire(segs[n]); err != nil {
			return err
		}
		w.stats.recycled.Add(1)
		n++
	}
	if n > 0 {
		if err := w.fs.SyncDir(w.dir); err != nil {
			return fmt.Errorf("wal: sync dir %s after recycle: %w", w.dir, err)
		}
	}
	return nil
}

// Close writes and fsyncs every appended record, stops the background
// goroutine and closes the segment. It returns the writer's failure, if any.
// Later calls return ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return ErrClosed
	}
	w.closed = true
	w.mu.Unlock()
	if w.stop != nil {
		close(w.stop)
		<-w.done
	}

	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	err := w.syncAllLocked()
	if err == nil && w.file != nil {
		// A clean close cuts the preallocated tail, so the next Open
		// reads no zeros (after a crash it reads them once).
		path := segmentPath(w.dir, w.fileStart)
		if terr := w.file.Truncate(int64(w.written - w.fileStart)); terr != nil {
			err = fmt.Errorf("wal: truncate %s on close: %w", path, terr)
		} else if serr := w.file.Sync(); serr != nil {
			err = fmt.Errorf("wal: sync %s on close: %w", path, serr)
		}
	}
	if w.file != nil { // nil only if a rotation failed halfway
		if cerr := w.file.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("wal: close %s: %w", segmentPath(w.dir, w.fileStart), cerr)
		}
		w.file = nil
	}
	if err == nil {
		err = w.DropSpares()
	}
	return err
}

// TrimTail writes and fsyncs every appended record, then cuts the current
// segment's preallocated zeros back to its records and fsyncs the new
// size, so that an idle database keeps no preallocated log on disk (the
// settle step calls it). The next write preallocates the segment again.
func (w *Writer) TrimTail() error {
	w.mu.Lock()
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return ErrClosed
	}
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if w.file == nil {
		if err := w.failure(); err != nil {
			return err
		}
		return ErrClosed
	}
	if err := w.syncAllLocked(); err != nil {
		return err
	}
	if w.trimmed {
		return nil
	}
	w.fsyncMu.Lock()
	defer w.fsyncMu.Unlock()
	path := segmentPath(w.dir, w.fileStart)
	if err := w.file.Truncate(int64(w.written - w.fileStart)); err != nil {
		return w.setFailed(fmt.Errorf("wal: truncate %s: %w", path, err))
	}
	if err := w.file.Sync(); err != nil {
		return w.setFailed(fmt.Errorf("wal: sync %s: %w", path, err))
	}
	w.trimmed = true
	return nil
}

// Rotate ends the current segment if it holds at least minBytes (and at
// least one record): the segment is written out, fsynced and a new empty
// one started at the head (the rotation protocol of the package doc), so
// that once a checkpoint covers the old segment Recycle can delete it. An
// idle database thus keeps no large log. It reports whether it rotated.
func (w *Writer) Rotate(minBytes int64) (bool, error) {
	w.mu.Lock()
	switch {
	case w.closed:
		w.mu.Unlock()
		return false, ErrClosed
	case w.fail.Load() != nil:
		w.mu.Unlock()
		return false, w.failure()
	case w.segLen == 0 || w.segLen < minBytes:
		w.mu.Unlock()
		return false, nil
	}
	w.bounds = append(w.bounds, bound{lsn: LSN(w.head.Load()), records: w.records})
	w.segLen = 0
	w.mu.Unlock()

	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if w.file == nil {
		if err := w.failure(); err != nil {
			return false, err
		}
		return false, ErrClosed
	}
	if err := w.flushLocked(); err != nil {
		return false, err
	}
	return true, nil
}
