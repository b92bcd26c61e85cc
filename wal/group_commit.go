package wal

import (
	"fmt"
	"time"

	"github.com/bwkv/bwkv/failpoints"
	"github.com/bwkv/bwkv/vfs"
)

// Group commit
//
// Sync is leader/follower. A caller whose LSN is not yet durable becomes the
// leader if no sync is in flight, and otherwise waits on syncCond. The
// leader takes every pending byte (swapping the double buffer under the
// append mutex, so appenders are held up only for the swap), writes it,
// fsyncs once, publishes the new durable LSN and wakes every waiter. A
// waiter whose LSN is now durable returns without an fsync; of the others,
// one becomes the next leader and covers everything appended during the
// previous fsync. One fsync thus covers every record appended before it was
// issued, and the batch grows with the number of concurrent committers.
//
// Waking all waiters, rather than handing a lock from one to the next,
// matters: with a lock hand-off a committer whose record is already durable
// can queue behind a later leader's unrelated fsync.
//
// The leader holds writeMu only while it writes, and fsyncs under fsyncMu
// alone, so appenders can keep writing to the file during the fsync (which
// in relaxed mode may cover many megabytes). Rotation takes fsyncMu too: it
// waits for an in-flight fsync before it closes the segment.

// Sync returns once every byte below upTo is written and fsynced (upTo is
// clamped to Head). The durable LSN always lies on a record boundary, so
// Sync(lsn+1) suffices for the record at lsn; Sync(Head()) covers
// everything appended so far. Concurrent callers share fsyncs. After a
// failure Sync returns the writer's failure without touching the file.
func (w *Writer) Sync(upTo LSN) error {
	if err := w.failure(); err != nil {
		return err
	}
	if w.DurableLSN() >= upTo {
		return nil
	}
	w.syncMu.Lock()
	for {
		if err := w.failure(); err != nil {
			w.syncMu.Unlock()
			return err
		}
		if w.DurableLSN() >= upTo {
			w.syncMu.Unlock()
			return nil // a leader's fsync covered it
		}
		if !w.syncing {
			break
		}
		w.syncCond.Wait()
	}
	w.syncing = true
	w.syncMu.Unlock()

	w.gatherCommits()
	err := w.lead()
	if err == ErrClosed && w.DurableLSN() >= upTo {
		err = nil // Close's final fsync covered it
	}

	w.syncMu.Lock()
	w.syncing = false
	w.syncCond.Broadcast()
	w.syncMu.Unlock()
	return err
}

// lead writes every pending byte and fsyncs it, holding writeMu only for
// the write.
func (w *Writer) lead() error {
	w.writeMu.Lock()
	if w.file == nil {
		w.writeMu.Unlock()
		if err := w.failure(); err != nil {
			return err
		}
		return ErrClosed
	}
	if err := w.flushLocked(); err != nil {
		w.writeMu.Unlock()
		return err
	}
	if w.written <= w.DurableLSN() {
		w.writeMu.Unlock()
		return nil
	}
	f, start, end, recs := w.file, w.fileStart, w.written, w.writtenRecs
	// Taking fsyncMu before releasing writeMu keeps a rotation from
	// closing f under the fsync (lock order: writeMu, then fsyncMu).
	w.fsyncMu.Lock()
	w.writeMu.Unlock()
	defer w.fsyncMu.Unlock()
	return w.fsync(f, start, end, recs)
}

// Flush writes every buffered record to its segment without an fsync.
func (w *Writer) Flush() error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if w.file == nil {
		if err := w.failure(); err != nil {
			return err
		}
		return ErrClosed
	}
	return w.flushLocked()
}

// syncAllLocked writes every pending byte and fsyncs the current segment if
// that makes anything new durable. writeMu is held (Close).
func (w *Writer) syncAllLocked() error {
	if err := w.flushLocked(); err != nil {
		return err
	}
	if w.written <= w.DurableLSN() {
		return nil
	}
	w.fsyncMu.Lock()
	defer w.fsyncMu.Unlock()
	return w.fsync(w.file, w.fileStart, w.written, w.writtenRecs)
}

// flushLocked moves the pending bytes to the files, rotating segments at
// the bounds Append recorded. writeMu is held; the append mutex only for
// the buffer swap.
func (w *Writer) flushLocked() error {
	_, err := w.flush(true)
	return err
}

// flush is flushLocked; with rotate false it never fsyncs: when the
// pending bytes cross a segment boundary it writes nothing and reports
// them deferred (for the background goroutine to rotate).
func (w *Writer) flush(rotate bool) (deferred bool, err error) {
	if err := w.failure(); err != nil {
		return false, err
	}
	w.mu.Lock()
	if !rotate && len(w.bounds) > 0 {
		w.mu.Unlock()
		return true, nil
	}
	data, bounds, start, recs := w.buf, w.bounds, w.bufStart, w.records
	w.buf, w.bounds = w.spare[:0], w.spareBounds[:0]
	if w.due.Load() {
		w.due.Store(false)
	}
	w.bufStart = LSN(w.head.Load())
	w.mu.Unlock()

	err = w.writeOut(data, bounds, start)
	w.spare, w.spareBounds = data[:0], bounds[:0]
	if cap(data) > hardFlushBytes+overLimitSlack {
		// A record larger than the bound passed through (or appenders
		// raced past it): do not keep its buffer.
		w.spare = nil
	}
	if err != nil {
		return false, err
	}
	w.written = start + LSN(len(data))
	w.writtenRecs = recs
	return false, nil
}

// writeOut writes data, the log bytes from start on, rotating at bounds.
func (w *Writer) writeOut(data []byte, bounds []bound, start LSN) error {
	pos := start
	for _, b := range bounds {
		if err := w.writeAt(data[pos-start:b.lsn-start], pos); err != nil {
			return err
		}
		pos = b.lsn
		w.written, w.writtenRecs = pos, b.records
		if err := w.rotateLocked(b); err != nil {
			return err
		}
	}
	return w.writeAt(data[pos-start:], pos)
}

// writeAt writes p, the log bytes from lsn on, into the current segment.
func (w *Writer) writeAt(p []byte, lsn LSN) error {
	if len(p) == 0 {
		return nil
	}
	if w.trimmed {
		// The first write after TrimTail preallocates the segment again,
		// so that commits' fdatasyncs flush no size change.
		if err := vfs.Preallocate(w.file, w.segBytes); err != nil {
			return w.setFailed(fmt.Errorf("wal: preallocate %s: %w", segmentPath(w.dir, w.fileStart), err))
		}
		w.trimmed = false
	}
	if _, err := w.file.WriteAt(p, int64(lsn-w.fileStart)); err != nil {
		return w.setFailed(fmt.Errorf("wal: write %s at %d: %w",
			segmentPath(w.dir, w.fileStart), lsn-w.fileStart, err))
	}
	return nil
}

// fsync fsyncs f, the segment starting at start, which holds every byte
// below end (and the records below recs), and publishes end as durable.
// fsyncMu is held, which orders the fsyncs and keeps durable monotonic.
func (w *Writer) fsync(f vfs.File, start, end LSN, recs int64) error {
	t0 := time.Now()
	err := failpoints.Hit(failpoints.WALBeforeSync)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = failpoints.Hit(failpoints.WALAfterSync)
	}
	if err != nil {
		return w.setFailed(fmt.Errorf("wal: sync %s: %w", segmentPath(w.dir, start), err))
	}
	d := time.Since(t0)
	w.stats.syncNanos.Add(int64(d))
	w.gather.timed(d)
	w.stats.syncs.Add(1)
	if recs > w.syncedRecs {
		w.stats.syncedRecords.Add(recs - w.syncedRecs)
		w.syncedRecs = recs
	}
	if end > w.DurableLSN() {
		w.durable.Store(uint64(end))
	}
	return nil
}

// rotateLocked closes the current segment and starts the one at b.
// writeMu is held.
//
// Segment N is fsynced before N+1 is created: the reader treats a bad
// record in any segment but the last as corruption, so once N+1 can exist
// on disk N must be complete there. The directory is fsynced right after
// the create, before any byte goes into N+1, so a segment that holds an
// acknowledged commit always has a durable directory entry.
func (w *Writer) rotateLocked(b bound) error {
	w.fsyncMu.Lock() // also waits out a leader's fsync of this file
	defer w.fsyncMu.Unlock()
	// A preallocated segment is cut back to its records before it stops
	// being the last one: the reader takes zeros in an older segment for
	// corruption. The fsync below makes the new size durable.
	if err := w.file.Truncate(int64(b.lsn - w.fileStart)); err != nil {
		return w.setFailed(fmt.Errorf("wal: truncate %s at %d: %w", segmentPath(w.dir, w.fileStart), b.lsn-w.fileStart, err))
	}
	if err := w.fsync(w.file, w.fileStart, b.lsn, b.records); err != nil {
		return err
	}
	old := segmentPath(w.dir, w.fileStart)
	err := w.file.Close()
	w.file = nil
	if err != nil {
		return w.setFailed(fmt.Errorf("wal: close %s: %w", old, err))
	}
	path := segmentPath(w.dir, b.lsn)
	f, reused, err := w.newSegment(path)
	if err != nil {
		return w.setFailed(fmt.Errorf("wal: create %s: %w", path, err))
	}
	if reused {
		w.stats.reused.Add(1)
	}
	w.file, w.fileStart, w.trimmed = f, b.lsn, false
	err = vfs.Preallocate(f, w.segBytes)
	if err == nil {
		err = failpoints.Hit(failpoints.WALRotate)
	}
	if err == nil {
		err = w.fs.SyncDir(w.dir)
	}
	if err != nil {
		return w.setFailed(fmt.Errorf("wal: sync dir %s after creating %s: %w", w.dir, path, err))
	}
	w.stats.rotations.Add(1)
	return nil
}

// loop is the writer's background goroutine. It rotates: when Append
// kicks it (the pending bytes past the soft flush threshold cross a
// segment boundary, or pass twice the threshold) it writes them out,
// fsyncing the full segment and creating the next, so that appenders,
// which may hold a page lock and the cut gate, never wait for that fsync
// (below the hard limit). In relaxed mode it is also the flusher: every
// interval it writes and fsyncs whatever was appended. A failure is
// sticky in the writer and is reported by the next Append, Sync or Close,
// so the loop ignores it.
func (w *Writer) loop(relaxed bool, interval time.Duration) {
	defer close(w.done)
	var tick <-chan time.Time
	if relaxed {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-w.stop:
			return
		case <-tick:
			_ = w.Sync(w.Head())
		case <-w.rotKick:
			w.writeMu.Lock()
			if w.file != nil {
				_ = w.flushLocked()
			}
			w.writeMu.Unlock()
		}
	}
}
