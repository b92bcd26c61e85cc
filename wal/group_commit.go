package wal

import (
	"fmt"
	"time"

	"github.com/bwkv/bwkv/failpoints"
)

// Group commit
//
// Sync is a leader/follower protocol on writeMu. A caller whose LSN is not
// yet durable queues on writeMu; the one that gets it (the leader) takes
// every pending byte (swapping the double buffer under the append mutex, so
// appenders are held up only for the swap), writes it, fsyncs once and
// publishes the new durable LSN. The callers that queued behind it find
// their LSN durable when they get the lock and return without an fsync, so
// one fsync covers every record appended before it was issued, and the
// batch grows with the number of concurrent committers.

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
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	if err := w.failure(); err != nil {
		return err
	}
	if w.DurableLSN() >= upTo {
		return nil // a leader's fsync covered it
	}
	if w.file == nil {
		return ErrClosed
	}
	return w.syncAllLocked()
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
// that makes anything new durable. writeMu is held.
func (w *Writer) syncAllLocked() error {
	if err := w.flushLocked(); err != nil {
		return err
	}
	if w.written > w.DurableLSN() {
		return w.syncLocked(w.written, w.writtenRecs)
	}
	return nil
}

// flushLocked moves the pending bytes to the files, rotating segments at
// the bounds Append recorded. writeMu is held; the append mutex only for
// the buffer swap.
func (w *Writer) flushLocked() error {
	if err := w.failure(); err != nil {
		return err
	}
	w.mu.Lock()
	data, bounds, start, recs := w.buf, w.bounds, w.bufStart, w.records
	w.buf, w.bounds = w.spare[:0], w.spareBounds[:0]
	w.bufStart = LSN(w.head.Load())
	w.mu.Unlock()

	err := w.writeOut(data, bounds, start)
	w.spare, w.spareBounds = data[:0], bounds[:0]
	if err != nil {
		return err
	}
	w.written = start + LSN(len(data))
	w.writtenRecs = recs
	return nil
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
	if _, err := w.file.WriteAt(p, int64(lsn-w.fileStart)); err != nil {
		return w.setFailed(fmt.Errorf("wal: write %s at %d: %w",
			segmentPath(w.dir, w.fileStart), lsn-w.fileStart, err))
	}
	return nil
}

// syncLocked fsyncs the current segment, which holds every byte below end
// (records below recs), and publishes end as durable.
func (w *Writer) syncLocked(end LSN, recs int64) error {
	failpoints.Hit(failpoints.WALBeforeSync)
	t0 := time.Now()
	if err := w.file.Sync(); err != nil {
		return w.setFailed(fmt.Errorf("wal: sync %s: %w", segmentPath(w.dir, w.fileStart), err))
	}
	w.stats.syncNanos.Add(int64(time.Since(t0)))
	failpoints.Hit(failpoints.WALAfterSync)
	w.stats.syncs.Add(1)
	w.stats.syncedRecords.Add(recs - w.syncedRecs)
	w.syncedRecs = recs
	w.durable.Store(uint64(end))
	return nil
}

// rotateLocked closes the current segment and starts the one at b.
//
// Segment N is fsynced before N+1 is created: the reader treats a bad
// record in any segment but the last as corruption, so once N+1 can exist
// on disk N must be complete there. The directory is fsynced right after
// the create, before any byte goes into N+1, so a segment that holds an
// acknowledged commit always has a durable directory entry.
func (w *Writer) rotateLocked(b bound) error {
	if w.DurableLSN() < b.lsn {
		if err := w.syncLocked(b.lsn, b.records); err != nil {
			return err
		}
	}
	old := segmentPath(w.dir, w.fileStart)
	err := w.file.Close()
	w.file = nil
	if err != nil {
		return w.setFailed(fmt.Errorf("wal: close %s: %w", old, err))
	}
	path := segmentPath(w.dir, b.lsn)
	f, err := w.fs.Create(path)
	if err != nil {
		return w.setFailed(fmt.Errorf("wal: create %s: %w", path, err))
	}
	w.file, w.fileStart = f, b.lsn
	failpoints.Hit(failpoints.WALRotate)
	if err := w.fs.SyncDir(w.dir); err != nil {
		return w.setFailed(fmt.Errorf("wal: sync dir %s after creating %s: %w", w.dir, path, err))
	}
	w.stats.rotations.Add(1)
	return nil
}

// flushLoop is the relaxed-mode flusher: every interval it writes and
// fsyncs whatever was appended. A failure is sticky in the writer and is
// reported by the next Append, Sync or Close, so the loop ignores it.
func (w *Writer) flushLoop(interval time.Duration) {
	defer close(w.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Sync(w.Head())
		}
	}
}
