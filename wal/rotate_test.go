package wal_test

import (
	"testing"
	"time"

	"github.com/bwkv/bwkv/wal"
)

// TestAppendNeverWaitsForRotation: Append runs under a page lock and the
// cut gate, so it must not run a rotation's fsync. With every fsync slowed
// to 50 ms and 4 KiB segments, 600 KiB of appends cross ~150 segment
// boundaries; no Append may wait for them (the background goroutine
// rotates). Before, the appender that took the buffer past the soft flush
// threshold wrote it out itself, fsyncing each full segment: seconds in
// one Append. The bound below is a generous hang detector. The rotation
// protocol still holds: every segment but the newest is durable, and the
// log replays whole.
func TestAppendNeverWaitsForRotation(t *testing.T) {
	o, h := newLog(t, wal.MinSegmentBytes)
	w := openWriter(t, o, 0)
	h.syncDelay.Store(int64(50 * time.Millisecond))
	rng := newRand(t)
	var recs []logged
	var slowest time.Duration
	for n := 0; n < 600<<10; {
		r := genRecord(rng, len(recs))
		if r.Type == wal.Update { // keep records small: many per segment
			continue
		}
		start := time.Now()
		lsn, err := w.Append(&r)
		if d := time.Since(start); d > slowest {
			slowest = d
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, logged{lsn, r})
		n += wal.EncodedSize(&r)
	}
	if slowest > time.Second {
		t.Fatalf("an Append took %v: it waited for a rotation's fsync", slowest)
	}
	t.Logf("%d appends, slowest %v, %d fsyncs so far", len(recs), slowest, h.syncs.Load())
	// Let the background catch up a little, then check the protocol:
	// every segment but the newest was fsynced before its successor was
	// created, so the durable LSN has reached each older one's end.
	time.Sleep(200 * time.Millisecond)
	segs := segmentFiles(t, o)
	if len(segs) < 2 {
		t.Fatalf("%d segments, want rotations", len(segs))
	}
	if d := w.DurableLSN(); d < segStart(t, segs[len(segs)-1]) {
		t.Fatalf("durable LSN %d below the newest segment's start %d", d, segStart(t, segs[len(segs)-1]))
	}
	h.syncDelay.Store(int64(0))
	head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, res, err := replayAll(t, o.FS, o.Dir, 0, 0)
	if err != nil || res.End != head {
		t.Fatalf("replay: %v, End %d, want %d", err, res.End, head)
	}
	checkRecords(t, got, recs)
}
