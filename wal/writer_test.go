package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bwkv/bwkv/wal"
)

func TestRoundTripAcrossRotations(t *testing.T) {
	rng := newRand(t)
	o, _ := newOSLog(t, 16<<10)
	w := openWriter(t, o, 0)
	want := appendRandom(t, w, rng, 1500)
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	want = append(want, appendRandom(t, w, rng, 500)...)
	head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	// A segment never holds more than its 16 KiB, so the log's length
	// sets how many rotations there must have been (the random record
	// sizes vary it by seed: a fixed count failed some seeds at base).
	if need := int64(head) / (16 << 10); st.Rotations < need || st.Rotations < 5 {
		t.Fatalf("only %d rotations for %d log bytes in 16 KiB segments (want >= %d)", st.Rotations, head, max(need, 5))
	}
	if st.Records != int64(len(want)) || st.Bytes != int64(head) {
		t.Fatalf("stats: %d records, %d bytes; want %d, %d", st.Records, st.Bytes, len(want), head)
	}

	got, res, err := replayAll(t, o.FS, o.Dir, 0, head)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, want)
	if res.End != head || res.TornBytes != 0 || res.Records != int64(len(want)) {
		t.Fatalf("result %+v, want End %d", res, head)
	}
	if len(res.Segments) != int(st.Rotations)+1 || res.Obsolete != 0 {
		t.Fatalf("%d segments (%d obsolete), %d rotations", len(res.Segments), res.Obsolete, st.Rotations)
	}

	// Replay from a record in a later segment: the segments before it are
	// obsolete and only the records from there on are seen.
	k := len(want) * 2 / 3
	got, res, err = replayAll(t, o.FS, o.Dir, want[k].lsn, head)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, want[k:])
	if res.Obsolete == 0 {
		t.Fatalf("no obsolete segments below %d", want[k].lsn)
	}

	// Continue the log where it ended and read it all again.
	w = openWriter(t, o, res.End)
	more := appendRandom(t, w, rng, 300)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err = replayAll(t, o.FS, o.Dir, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, append(want, more...))
}

// TestRotationProtocol checks the order of file operations: segment N is
// fsynced after its last write and before N+1 is created, and the
// directory is fsynced after the create and before N+1's first write.
func TestRotationProtocol(t *testing.T) {
	o, h := newLog(t, wal.MinSegmentBytes)
	w := openWriter(t, o, 0)
	h.mu.Lock()
	h.record = true
	h.mu.Unlock()
	rng := newRand(t)
	for range 20 {
		appendRandom(t, w, rng, 20)
		if err := w.Sync(w.Head()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	ops := h.opsLog()
	creates := 0
	for i, op := range ops {
		name, ok := strings.CutPrefix(op, "create ")
		if !ok {
			continue
		}
		creates++
		// Walk back to the previous segment's last write: a sync of that
		// segment must come after it.
		var prev string
		synced := false
		for j := i - 1; j >= 0; j-- {
			if n, ok := strings.CutPrefix(ops[j], "sync "); ok && prev == "" {
				prev, synced = n, true
				continue
			}
			if n, ok := strings.CutPrefix(ops[j], "write "); ok {
				if !synced || n != prev {
					t.Fatalf("op %d %q: previous segment's last write %q not followed by its sync", i, op, ops[j])
				}
				break
			}
		}
		next := ""
		for _, later := range ops[i+1:] {
			if strings.HasPrefix(later, "syncdir") || later == "write "+name {
				next = later
				break
			}
		}
		if !strings.HasPrefix(next, "syncdir") {
			t.Fatalf("op %d %q: followed by %q before a directory sync", i, op, next)
		}
	}
	if creates < 3 {
		t.Fatalf("only %d rotations: %v", creates, ops)
	}
}

func TestGroupCommit(t *testing.T) {
	o, h := newLog(t, 1<<20)
	h.syncDelay.Store(int64(2 * time.Millisecond)) // make overlap certain, not lucky
	w := openWriter(t, o, 0)
	const committers, each = 32, 10
	var wg sync.WaitGroup
	errs := make(chan error, committers)
	for c := range committers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := wal.Record{Type: wal.Commit, TxID: wal.TxID(c*1000 + i)}
				lsn, err := w.Append(&r)
				if err == nil {
					err = w.Sync(lsn + 1)
				}
				if err == nil && w.DurableLSN() <= lsn {
					err = errors.New("Sync returned before the record was durable")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := w.Stats()
	t.Logf("%d records, %d syncs, %.1f records/sync, %v in fsync", st.Records, st.Syncs, st.RecordsPerSync, st.SyncLatency)
	if st.SyncedRecords != committers*each || st.RecordsPerSync <= 1 {
		t.Fatalf("stats %+v: want every record synced and more than one per sync", st)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSyncFailureIsSticky(t *testing.T) {
	o, h := newLog(t, 1<<20)
	w := openWriter(t, o, 0)
	r := wal.Record{Type: wal.Put, Key: []byte("k"), Value: []byte("v")}
	lsn, err := w.Append(&r)
	if err != nil {
		t.Fatal(err)
	}
	eio := error(syscall.EIO)
	h.failSync.Store(&eio)
	err = w.Sync(lsn + 1)
	if !errors.Is(err, wal.ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Sync = %v, want ErrFailed wrapping EIO", err)
	}
	syncs := h.syncs.Load()
	h.failSync.Store(nil) // a retry would now "succeed": it must not happen
	if _, err := w.Append(&r); !errors.Is(err, wal.ErrFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append after failure = %v", err)
	}
	if err := w.Sync(w.Head()); !errors.Is(err, wal.ErrFailed) {
		t.Fatalf("Sync after failure = %v", err)
	}
	if err := w.Flush(); !errors.Is(err, wal.ErrFailed) {
		t.Fatalf("Flush after failure = %v", err)
	}
	if err := w.Close(); !errors.Is(err, wal.ErrFailed) {
		t.Fatalf("Close after failure = %v", err)
	}
	if n := h.syncs.Load(); n != syncs {
		t.Fatalf("fsync retried after the failure (%d calls, was %d)", n, syncs)
	}
	if w.DurableLSN() > lsn {
		t.Fatalf("durable LSN advanced past a failed fsync")
	}
}

func TestRelaxedFlushesInBackground(t *testing.T) {
	o, h := newLog(t, 1<<20)
	o.Relaxed, o.FlushInterval = true, 5*time.Millisecond
	w := openWriter(t, o, 0)
	want := appendRandom(t, w, newRand(t), 200)
	head := w.Head()
	// Generous hang detector, not a latency assertion.
	deadline := time.Now().Add(10 * time.Second)
	for w.DurableLSN() < head {
		if time.Now().After(deadline) {
			t.Fatalf("background flusher never made %d durable (at %d)", head, w.DurableLSN())
		}
		time.Sleep(time.Millisecond)
	}
	if h.syncs.Load() == 0 {
		t.Fatalf("durable without an fsync")
	}
	// The bytes are in the file while the writer is still open.
	got, _, err := replayAll(t, o.FS, o.Dir, 0, head)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, want)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	for _, relaxed := range []bool{false, true} {
		o, _ := newLog(t, 1<<20)
		o.Relaxed, o.FlushInterval = relaxed, time.Millisecond
		w := openWriter(t, o, 0)
		appendRandom(t, w, newRand(t), 10)
		if relaxed && len(walGoroutines()) == 0 {
			t.Fatalf("relaxed writer has no flusher goroutine")
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// The flusher signals done from a deferred call and exits right
		// after: allow it a moment (a generous bound, not a timing test).
		g := walGoroutines()
		for deadline := time.Now().Add(5 * time.Second); len(g) > 0 && time.Now().Before(deadline); g = walGoroutines() {
			time.Sleep(time.Millisecond)
		}
		if len(g) > 0 {
			t.Fatalf("relaxed=%v: goroutines left after Close:\n%s", relaxed, strings.Join(g, "\n\n"))
		}
		if err := w.Close(); !errors.Is(err, wal.ErrClosed) {
			t.Fatalf("second Close = %v", err)
		}
		r := wal.Record{Type: wal.Begin}
		if _, err := w.Append(&r); !errors.Is(err, wal.ErrClosed) {
			t.Fatalf("Append after Close = %v", err)
		}
		if err := w.Sync(w.Head()); err != nil {
			t.Fatalf("Sync of durable data after Close = %v", err)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	o, _ := newLog(t, wal.MinSegmentBytes)
	w := openWriter(t, o, 0)
	defer w.Close()
	big := wal.Record{Type: wal.Put, Key: []byte("k"), Value: make([]byte, wal.MinSegmentBytes)}
	if _, err := w.Append(&big); !errors.Is(err, wal.ErrRecordTooLarge) {
		t.Fatalf("oversized record: %v", err)
	}
	bad := wal.Record{Type: 0}
	if _, err := w.Append(&bad); !errors.Is(err, wal.ErrInvalidRecord) {
		t.Fatalf("type 0: %v", err)
	}
	if w.Head() != 0 {
		t.Fatalf("rejected records moved the head to %d", w.Head())
	}
	// The largest record that fits gets a segment of its own.
	fit := wal.Record{Type: wal.Put, Key: []byte("k")}
	fit.Value = make([]byte, wal.MinSegmentBytes-wal.EncodedSize(&fit)-1)
	if n := wal.EncodedSize(&fit); n != wal.MinSegmentBytes {
		t.Fatalf("size %d", n)
	}
	for range 3 {
		if _, err := w.Append(&fit); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Rotations != 2 {
		t.Fatalf("%d rotations, want 2", st.Rotations)
	}
}

func TestOpenRejects(t *testing.T) {
	if _, err := wal.Open(wal.Options{SegmentBytes: 10, FlushInterval: -1}, 0); err == nil ||
		!strings.Contains(err.Error(), "FS") || !strings.Contains(err.Error(), "Dir") ||
		!strings.Contains(err.Error(), "SegmentBytes") || !strings.Contains(err.Error(), "FlushInterval") {
		t.Fatalf("bad options: %v (want every field reported)", err)
	}
	o, _ := newLog(t, wal.MinSegmentBytes)
	w := openWriter(t, o, 1000)
	appendRandom(t, w, newRand(t), 5)
	end := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, at := range []wal.LSN{999, end + 1} {
		if w, err := wal.Open(o, at); err == nil {
			w.Close()
			t.Fatalf("Open at %d outside the log [1000, %d] succeeded", at, end)
		}
	}
}

// TestConcurrentStress runs committers, bulk appenders (whose large records
// make Append write the buffer out and rotate while a leader fsyncs),
// Flush and Recycle at once, then Close in the middle. Every record whose
// Sync returned nil must replay; calls after Close fail with ErrClosed.
func TestConcurrentStress(t *testing.T) {
	for _, relaxed := range []bool{false, true} {
		t.Run(map[bool]string{false: "sync", true: "relaxed"}[relaxed], func(t *testing.T) {
			o, h := newLog(t, 1<<20)
			h.syncDelay.Store(int64(100 * time.Microsecond))
			o.Relaxed, o.FlushInterval = relaxed, time.Millisecond
			w := openWriter(t, o, 0)
			var (
				mu      sync.Mutex
				durable = map[wal.LSN]bool{} // records whose Sync returned nil
				wg      sync.WaitGroup
				stop    = make(chan struct{})
			)
			worker := func(c int, big bool) {
				defer wg.Done()
				r := wal.Record{Type: wal.Commit, TxID: wal.TxID(c)}
				if big {
					r = wal.Record{Type: wal.Put, TxID: wal.TxID(c), Key: []byte("k"), Value: make([]byte, 100<<10)}
				}
				for i := 0; ; i++ {
					lsn, err := w.Append(&r)
					if errors.Is(err, wal.ErrClosed) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					if big && i%8 != 7 {
						continue
					}
					switch err := w.Sync(lsn + 1); {
					case err == nil:
						mu.Lock()
						durable[lsn] = true
						mu.Unlock()
					case errors.Is(err, wal.ErrClosed):
						return
					default:
						t.Error(err)
						return
					}
				}
			}
			for c := range 6 {
				wg.Add(1)
				go worker(c, c < 2)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if err := w.Flush(); err != nil && !errors.Is(err, wal.ErrClosed) {
						t.Error(err)
					}
					if err := w.Recycle(w.DurableLSN() / 2); err != nil && !errors.Is(err, wal.ErrClosed) {
						t.Error(err)
					}
					time.Sleep(time.Millisecond)
				}
			}()
			for w.Stats().Rotations < 8 {
				time.Sleep(time.Millisecond)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			close(stop)
			wg.Wait()
			st := w.Stats()
			if st.Durable != st.Head {
				t.Fatalf("after Close durable %d, head %d", st.Durable, st.Head)
			}
			segs, err := wal.Segments(o.FS, o.Dir)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[wal.LSN]bool{}
			res, err := wal.Replay(o.FS, o.Dir, segs[0], st.Head, func(lsn wal.LSN, _ *wal.Record) error {
				seen[lsn] = true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.End != st.Head || res.Records == 0 {
				t.Fatalf("replay %+v, head %d", res, st.Head)
			}
			for lsn := range durable {
				if lsn >= segs[0] && !seen[lsn] {
					t.Fatalf("synced record at %d not replayed", lsn)
				}
			}
			t.Logf("%d records, %d rotations, %d syncs, %d recycled", st.Records, st.Rotations, st.Syncs, st.RecycledSegments)
		})
	}
}

// writes counts the "write" operations h recorded.
func writes(h *hookFS) int {
	n := 0
	for _, op := range h.opsLog() {
		if strings.HasPrefix(op, "write ") {
			n++
		}
	}
	return n
}

// TestDueBytesWaitForFlushDue checks where the log's pending bytes are
// written below the hard limit: not by the Append that passes the soft
// limit (its caller may hold locks other writers wait for), but by
// FlushDue, which the engine calls once the transaction ended; past twice
// the soft limit, by the background goroutine.
func TestDueBytesWaitForFlushDue(t *testing.T) {
	o, h := newLog(t, 8<<20)
	w := openWriter(t, o, 0)
	defer w.Close()
	h.mu.Lock()
	h.record = true
	h.mu.Unlock()

	if err := w.FlushDue(); err != nil || writes(h) != 0 {
		t.Fatalf("FlushDue with nothing due: err %v, %d writes", err, writes(h))
	}
	big := func(i int) wal.Record {
		return wal.Record{Type: wal.Put, TxID: 1, Seq: uint32(i), Key: fmt.Appendf(nil, "k%d", i), Value: bytes.Repeat([]byte{byte(i)}, 100<<10)}
	}
	var want []logged
	for i := range 3 { // 300 KiB: past the soft limit (256 KiB), under twice it
		r := big(i)
		lsn, err := w.Append(&r)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, logged{lsn, r})
	}
	if n := writes(h); n != 0 {
		t.Fatalf("%d writes by the appends below twice the soft limit, want 0", n)
	}
	if err := w.FlushDue(); err != nil {
		t.Fatal(err)
	}
	if writes(h) == 0 {
		t.Fatalf("FlushDue wrote nothing with %d bytes due", w.Head())
	}
	got, _, err := replayAll(t, o.FS, o.Dir, 0, w.Head())
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, want)
	n := writes(h)
	if err := w.FlushDue(); err != nil || writes(h) != n {
		t.Fatalf("a second FlushDue: err %v, %d writes, want %d", err, writes(h), n)
	}

	// Nobody calls FlushDue (a long transaction): past twice the soft
	// limit the background goroutine writes the bytes.
	var more []logged
	for i := 3; i < 9; i++ { // 600 KiB
		r := big(i)
		lsn, err := w.Append(&r)
		if err != nil {
			t.Fatal(err)
		}
		more = append(more, logged{lsn, r})
	}
	head := w.Head()
	deadline := time.Now().Add(10 * time.Second) // hang detector, not a latency bound
	for {
		got, _, err = replayAll(t, o.FS, o.Dir, 0, head)
		if err == nil && len(got) == len(want)+len(more) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background goroutine never wrote the bytes past twice the soft limit: %d records in the file (err %v)", len(got), err)
		}
		time.Sleep(time.Millisecond)
	}
	checkRecords(t, got, append(want, more...))
}

// TestAppendBufferBounded: while a write-out holds the file (a rotation's
// fsync on a busy device), appenders go on into the buffer up to the hard
// limit and no further: the Append that reaches it waits to write the
// buffer itself. That bounds the log's memory outside the cache budget.
func TestAppendBufferBounded(t *testing.T) {
	o, _ := newLog(t, 128<<20)
	w := openWriter(t, o, 0)
	defer w.Close()
	const recBytes = 64 << 10
	rec := wal.Record{Type: wal.Put, TxID: 1, Key: []byte("k"), Value: bytes.Repeat([]byte{7}, recBytes)}
	n := 2 * wal.HardFlushBytes / recBytes
	release := wal.HoldWrites(w)
	done := make(chan error, 1)
	go func() {
		for range n {
			if _, err := w.Append(&rec); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	// Wait until the buffer reaches the limit (hang detector, not a
	// latency bound); the appender must then stop there.
	deadline := time.Now().Add(30 * time.Second)
	for wal.Pending(w) < wal.HardFlushBytes {
		select {
		case err := <-done:
			release()
			t.Fatalf("all %d records appended while no write-out could run, %d bytes pending (err %v)", n, wal.Pending(w), err)
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			release()
			t.Fatalf("the buffer never reached the limit: %d bytes pending", wal.Pending(w))
		}
	}
	time.Sleep(50 * time.Millisecond) // time to go past the limit, if it could
	p, c := wal.Pending(w), wal.BufferCapacity(w)
	select {
	case err := <-done:
		release()
		t.Fatalf("all %d records appended while no write-out could run, %d bytes pending (err %v)", n, p, err)
	default:
	}
	release()
	if p > wal.HardFlushBytes+recBytes+1024 {
		t.Fatalf("%d bytes pending while the file was held; want at most the hard limit %d plus one record", p, wal.HardFlushBytes)
	}
	// The buffer's capacity, not only its length, is what the process
	// holds: growth by append's quarter steps once left up to 20 MiB.
	if c > p+wal.OverLimitSlack {
		t.Fatalf("append buffer capacity %d with %d bytes pending; want at most the pending bytes plus %d", c, p, wal.OverLimitSlack)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	got, _, err := replayAll(t, o.FS, o.Dir, 0, w.Head())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("replayed %d records, want %d", len(got), n)
	}
}

// TestAppendBufferOverLimitGrowth: appenders that race past the hard
// limit while a write-out holds the file (256 records of 4 KiB, 1 MiB
// over it) cost a copy of the whole 16 MiB buffer each time their bytes
// over the limit double, not one every OverLimitSlack bytes (16 copies,
// 256 MiB of memmove under the append lock), and the buffer stays within
// twice the bytes over the limit plus the slack.
func TestAppendBufferOverLimitGrowth(t *testing.T) {
	buf := make([]byte, wal.HardFlushBytes)
	copies := 0
	for range 256 {
		need := len(buf) + 4096
		if need > cap(buf) {
			buf = wal.GrowAppendBuffer(buf, need)
			copies++
		}
		buf = buf[:need]
		if over := need - wal.HardFlushBytes; cap(buf) > wal.HardFlushBytes+2*over+wal.OverLimitSlack {
			t.Fatalf("capacity %d with %d bytes over the limit; want at most twice those plus %d", cap(buf), over, wal.OverLimitSlack)
		}
	}
	if copies > 6 {
		t.Fatalf("%d copies of the buffer for 1 MiB appended past the limit; want at most 6", copies)
	}
}

// TestAppendBufferDropsHugeRecord: a record larger than the hard limit
// grows the append buffer past it for as long as it is pending; once it
// is written out, neither the buffer nor its spare keeps that capacity,
// so the bound on the log's memory holds again.
func TestAppendBufferDropsHugeRecord(t *testing.T) {
	o, _ := newLog(t, 128<<20)
	w := openWriter(t, o, 0)
	defer w.Close()
	huge := wal.Record{Type: wal.Put, TxID: 1, Key: []byte("k"), Value: bytes.Repeat([]byte{3}, wal.HardFlushBytes+(1<<20))}
	small := wal.Record{Type: wal.Put, TxID: 1, Key: []byte("k"), Value: []byte("v")}
	bound := wal.HardFlushBytes + wal.OverLimitSlack
	for _, r := range []*wal.Record{&small, &huge, &small, &small} {
		if _, err := w.Append(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Sync(w.Head()); err != nil { // writes the buffer out
			t.Fatal(err)
		}
	}
	if b, s := wal.BufferCapacity(w), wal.SpareCapacity(w); b > bound || s > bound {
		t.Fatalf("after a %d-byte record was written out: buffer capacity %d, spare %d; want at most %d each", len(huge.Value), b, s, bound)
	}
	got, _, err := replayAll(t, o.FS, o.Dir, 0, w.Head())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || !bytes.Equal(got[1].rec.Value, huge.Value) {
		t.Fatalf("replayed %d records", len(got))
	}
}
