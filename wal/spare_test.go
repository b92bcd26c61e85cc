package wal_test

import (
	"strings"
	"testing"

	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// spareFiles returns the names of the spare files in dir.
func spareFiles(t testing.TB, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".spare") {
			out = append(out, n)
		}
	}
	return out
}

// TestSparesReused: with Spares, Recycle keeps retired segments (at most
// Spares of them) and rotations write over them; every record replays,
// the stale records behind the newest segment's end read as a torn tail
// after a crash, and Close leaves no spare.
func TestSparesReused(t *testing.T) {
	mem := vfs.NewMem()
	o := wal.Options{FS: mem, Dir: "/db/wal", SegmentBytes: wal.MinSegmentBytes, BindLSN: true, Spares: 2}
	w := openWriter(t, o, 0)
	rng := newRand(t)
	var all []logged
	var from wal.LSN
	for round := range 30 {
		all = append(all, appendRandom(t, w, rng, 20)...)
		if err := w.Sync(w.Head()); err != nil {
			t.Fatal(err)
		}
		from = all[len(all)-5].lsn
		if err := w.Recycle(from); err != nil {
			t.Fatal(err)
		}
		if n := len(spareFiles(t, mem, o.Dir)); n > 2 {
			t.Fatalf("round %d: %d spare files, Spares is 2", round, n)
		}
	}
	st := w.Stats()
	if st.ReusedSegments == 0 || st.Rotations < 10 {
		t.Fatalf("%d rotations, %d reused: want spares reused", st.Rotations, st.ReusedSegments)
	}
	if st.SpareSegments != len(spareFiles(t, mem, o.Dir)) {
		t.Fatalf("Stats.SpareSegments %d, %d spare files", st.SpareSegments, len(spareFiles(t, mem, o.Dir)))
	}
	want := all
	for len(want) > 0 && want[0].lsn < from {
		want = want[1:]
	}

	// A crash now: the newest segment was a spare, so stale records lie
	// behind its last record. They read as a torn tail, never as records.
	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
	got, res, err := replayBound(t, crashed, o.Dir, from, w.DurableLSN(), true)
	if err != nil {
		t.Fatalf("replay after a crash: %v", err)
	}
	checkRecords(t, got, want)
	if res.TornBytes == 0 && res.ZeroBytes == 0 {
		t.Fatalf("no torn or zero tail after the last record (res %+v)", res)
	}
	// Read without the binding, no record passes its CRC: a reader never
	// takes one layout's records for the other's.
	if _, _, err := replayBound(t, crashed, o.Dir, from, w.DurableLSN(), false); err == nil {
		t.Fatal("a bound log replayed as a plain one")
	}

	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := spareFiles(t, mem, o.Dir); len(n) != 0 {
		t.Fatalf("spares left after Close: %v", n)
	}
	got, _, err = replayBound(t, mem, o.Dir, from, all[len(all)-1].lsn, true)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, want)
}

// TestSparesOpen: Open keeps at most Spares of the spare files it finds
// (none without Spares) and reuses them.
func TestSparesOpen(t *testing.T) {
	mem := vfs.NewMem()
	o := wal.Options{FS: mem, Dir: "/db/wal", SegmentBytes: wal.MinSegmentBytes, BindLSN: true, Spares: 3}
	w := openWriter(t, o, 0)
	all := appendRandom(t, w, newRand(t), 200)
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	if err := w.Recycle(all[len(all)-1].lsn); err != nil {
		t.Fatal(err)
	}
	if n := len(spareFiles(t, mem, o.Dir)); n != 3 {
		t.Fatalf("%d spares, want 3", n)
	}
	// A crash keeps them (Close would drop them).
	crashed := mem.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
	_ = w.Close()
	res, err := wal.ReplayWith(crashed, o.Dir, wal.ReplayOptions{From: all[len(all)-1].lsn, Frontier: all[len(all)-1].lsn, BindLSN: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.FS, o.Spares = crashed, 1
	w = openWriter(t, o, res.End)
	if n := len(spareFiles(t, crashed, o.Dir)); n != 1 {
		t.Fatalf("Open with Spares 1 kept %d spares", n)
	}
	appendRandom(t, w, newRand(t), 100)
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.ReusedSegments != 1 {
		t.Fatalf("%d segments reused, want the one spare", st.ReusedSegments)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := wal.Open(wal.Options{FS: crashed, Dir: o.Dir, Spares: 1}, 0); err == nil || !strings.Contains(err.Error(), "BindLSN") {
		t.Fatalf("Spares without BindLSN: %v", err)
	}
	if _, err := wal.Open(wal.Options{FS: crashed, Dir: o.Dir, BindLSN: true, Spares: wal.MaxSpares + 1}, 0); err == nil || !strings.Contains(err.Error(), "Spares") {
		t.Fatalf("Spares above MaxSpares: %v", err)
	}
}
