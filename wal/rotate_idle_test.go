package wal_test

import (
	"testing"
)

// TestRotateIdle: Rotate ends a segment holding records (only past its
// threshold), the old segment is durable and Recycle at the head deletes
// it, leaving one empty segment; appends continue in the new segment and
// everything replays.
func TestRotateIdle(t *testing.T) {
	rng := newRand(t)
	o, _ := newOSLog(t, 1<<20)
	w := openWriter(t, o, 0)
	appendRandom(t, w, rng, 200)
	head := w.Head()
	if ok, err := w.Rotate(int64(head) + 1); ok || err != nil {
		t.Fatalf("Rotate below its threshold: %v, %v", ok, err)
	}
	if ok, err := w.Rotate(int64(head)); !ok || err != nil {
		t.Fatalf("Rotate: %v, %v", ok, err)
	}
	if d := w.DurableLSN(); d != head {
		t.Fatalf("durable %d after a rotation at %d", d, head)
	}
	if ok, err := w.Rotate(0); ok || err != nil {
		t.Fatalf("Rotate of an empty segment: %v, %v", ok, err)
	}
	if n := len(segmentFiles(t, o)); n != 2 {
		t.Fatalf("%d segments after a rotation, want 2", n)
	}
	if err := w.Recycle(head); err != nil {
		t.Fatal(err)
	}
	segs := segmentFiles(t, o)
	if len(segs) != 1 || segStart(t, segs[0]) != head || fileSize(t, o.FS, segs[0]) != 0 {
		t.Fatalf("after recycle: %v, want one empty segment at %d", segs, head)
	}
	more := appendRandom(t, w, rng, 50)
	end := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := replayAll(t, o.FS, o.Dir, head, end)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, more)
}
