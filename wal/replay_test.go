package wal_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// writeLog writes n random records across segments of segBytes and closes
// the writer.
func writeLog(t *testing.T, segBytes int64, n int) (wal.Options, *hookFS, []logged, wal.LSN) {
	t.Helper()
	o, h := newLog(t, segBytes)
	w := openWriter(t, o, 0)
	recs := appendRandom(t, w, newRand(t), n)
	head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return o, h, recs, head
}

// snapshotFiles returns the contents of every file in the log directory.
func snapshotFiles(t *testing.T, fs vfs.FS, dir string) map[string][]byte {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, name := range names {
		m[name] = readFile(t, fs, filepath.Join(dir, name))
	}
	return m
}

// replayReadOnly replays with every mutation forbidden and checks that no
// file changed.
func replayReadOnly(t *testing.T, o wal.Options, h *hookFS, from, frontier wal.LSN) ([]logged, wal.ReplayResult, error) {
	t.Helper()
	before := snapshotFiles(t, h, o.Dir)
	h.readOnly.Store(true)
	got, res, err := replayAll(t, h, o.Dir, from, frontier)
	h.readOnly.Store(false)
	if errors.Is(err, errMutation) {
		t.Fatalf("Replay tried to modify the log: %v", err)
	}
	after := snapshotFiles(t, h, o.Dir)
	if len(before) != len(after) {
		t.Fatalf("Replay changed the directory")
	}
	for name, b := range before {
		if !bytes.Equal(b, after[name]) {
			t.Fatalf("Replay changed %s", name)
		}
	}
	return got, res, err
}

func lastSegment(t *testing.T, o wal.Options) string {
	t.Helper()
	files := segmentFiles(t, o)
	return files[len(files)-1]
}

func TestTornTail(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, fs vfs.FS, path string, last logged, size int64)
		lost   int                      // records lost at the end
		torn   func(lastSize int) int64 // torn bytes
		zero   int64                    // zero bytes ending the segment cleanly
	}{
		{name: "garbage appended", lost: 0, torn: func(int) int64 { return 7 },
			damage: func(t *testing.T, fs vfs.FS, path string, _ logged, _ int64) {
				appendToFile(t, fs, path, []byte("garbage"))
			}},
		// A preallocated segment: a zero tail is a clean end, not torn.
		{name: "zeroes appended", lost: 0, torn: func(int) int64 { return 0 }, zero: 4096,
			damage: func(t *testing.T, fs vfs.FS, path string, _ logged, _ int64) {
				appendToFile(t, fs, path, make([]byte, 4096))
			}},
		{name: "last record cut, then zeroes", lost: 1, torn: func(n int) int64 { return int64(n-5) + 4096 },
			damage: func(t *testing.T, fs vfs.FS, path string, _ logged, size int64) {
				truncateFile(t, fs, path, size-5)
				appendToFile(t, fs, path, make([]byte, 4096))
			}},
		{name: "last record cut", lost: 1, torn: func(n int) int64 { return int64(n - 5) },
			damage: func(t *testing.T, fs vfs.FS, path string, _ logged, size int64) {
				truncateFile(t, fs, path, size-5)
			}},
		{name: "last record header cut", lost: 1, torn: func(int) int64 { return 10 },
			damage: func(t *testing.T, fs vfs.FS, path string, last logged, _ int64) {
				truncateFile(t, fs, path, int64(last.lsn-segStart(t, path))+10)
			}},
		{name: "bit flip in last record", lost: 1, torn: func(n int) int64 { return int64(n) },
			damage: func(t *testing.T, fs vfs.FS, path string, last logged, _ int64) {
				flipBit(t, fs, path, int64(last.lsn-segStart(t, path))+9) // in the txid
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, h, recs, head := writeLog(t, 16<<10, 400)
			path := lastSegment(t, o)
			last := recs[len(recs)-1]
			tc.damage(t, o.FS, path, last, fileSize(t, o.FS, path))
			keep := recs[:len(recs)-tc.lost]
			wantEnd := head
			if tc.lost > 0 {
				wantEnd = last.lsn
			}
			// The frontier may sit anywhere up to the first bad record.
			for _, frontier := range []wal.LSN{0, keep[len(keep)/2].lsn, wantEnd} {
				got, res, err := replayReadOnly(t, o, h, 0, frontier)
				if err != nil {
					t.Fatalf("frontier %d: %v", frontier, err)
				}
				checkRecords(t, got, keep)
				wantTorn := tc.torn(int(head - last.lsn))
				if res.End != wantEnd || res.TornBytes != wantTorn || res.ZeroBytes != tc.zero {
					t.Fatalf("End %d, TornBytes %d, ZeroBytes %d; want %d, %d, %d", res.End, res.TornBytes, res.ZeroBytes, wantEnd, wantTorn, tc.zero)
				}
			}
			// A frontier past the damage makes the same bytes corruption.
			if tc.lost > 0 {
				_, _, err := replayReadOnly(t, o, h, 0, head)
				var c *base.CorruptionError
				if !errors.As(err, &c) || c.File != path || c.Offset != int64(last.lsn-segStart(t, path)) {
					t.Fatalf("frontier past a torn record: %v", err)
				}
			}

			// The writer truncates the tail and continues; the log is whole.
			w := openWriter(t, o, wantEnd)
			more := appendRandom(t, w, newRand(t), 50)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			got, res, err := replayReadOnly(t, o, h, 0, wantEnd)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, got, append(keep, more...))
			if res.TornBytes != 0 {
				t.Fatalf("%d torn bytes after reopening", res.TornBytes)
			}
		})
	}
}

func TestCorruption(t *testing.T) {
	cases := []struct {
		name     string
		damage   func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (from, frontier wal.LSN, file string, off int64)
		contains string
	}{
		{name: "bit flip in last segment below frontier", contains: "frontier",
			damage: func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (wal.LSN, wal.LSN, string, int64) {
				path := files[len(files)-1]
				base := segStart(t, path)
				var victim logged
				for _, r := range recs {
					if r.lsn >= base {
						victim = r // the first record of the last segment
						break
					}
				}
				flipBit(t, fs, path, int64(victim.lsn-base)+9) // in the txid
				return 0, head, path, int64(victim.lsn - base)
			}},
		{name: "bit flip in older segment", contains: "not the last",
			damage: func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (wal.LSN, wal.LSN, string, int64) {
				path := files[1]
				flipBit(t, fs, path, 3) // the first record's length
				return 0, 0, path, 0
			}},
		{name: "cut older segment", contains: "not the last",
			damage: func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (wal.LSN, wal.LSN, string, int64) {
				path := files[2]
				truncateFile(t, fs, path, fileSize(t, fs, path)-1)
				var last logged
				for _, r := range recs {
					if r.lsn < segStart(t, files[3]) {
						last = r
					}
				}
				return 0, 0, path, int64(last.lsn - segStart(t, path))
			}},
		{name: "missing middle segment", contains: "missing segment",
			damage: func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (wal.LSN, wal.LSN, string, int64) {
				if err := fs.Remove(files[3]); err != nil {
					t.Fatal(err)
				}
				return 0, 0, files[2], fileSize(t, fs, files[2])
			}},
		{name: "missing segment holding from", contains: "missing log",
			damage: func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (wal.LSN, wal.LSN, string, int64) {
				from := segStart(t, files[2]) + 10
				for _, f := range files[:3] {
					if err := fs.Remove(f); err != nil {
						t.Fatal(err)
					}
				}
				return from, head, files[3], 0
			}},
		{name: "log ends below frontier", contains: "below the frontier",
			damage: func(t *testing.T, fs vfs.FS, files []string, recs []logged, head wal.LSN) (wal.LSN, wal.LSN, string, int64) {
				last := files[len(files)-1]
				return 0, head + 1, last, int64(head - segStart(t, last))
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, h, recs, head := writeLog(t, wal.MinSegmentBytes, 400)
			files := segmentFiles(t, o)
			if len(files) < 6 {
				t.Fatalf("only %d segments", len(files))
			}
			from, frontier, file, off := tc.damage(t, o.FS, files, recs, head)
			_, _, err := replayReadOnly(t, o, h, from, frontier)
			var c *base.CorruptionError
			if !errors.As(err, &c) {
				t.Fatalf("Replay = %v, want a CorruptionError", err)
			}
			if c.File != file || c.Offset != off || !strings.Contains(c.Reason, tc.contains) {
				t.Fatalf("got %v\nwant file %s offset %d reason containing %q", err, file, off, tc.contains)
			}
		})
	}
}

// TestObsoleteSegmentsSkipGapCheck: segments wholly below from are not
// read, so a hole or damage among them is no error.
func TestObsoleteSegmentsSkipGapCheck(t *testing.T) {
	o, h, recs, head := writeLog(t, wal.MinSegmentBytes, 400)
	files := segmentFiles(t, o)
	if err := o.FS.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	flipBit(t, o.FS, files[2], 5)
	from := segStart(t, files[3])
	got, res, err := replayReadOnly(t, o, h, from, from)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for recs[i].lsn < from {
		i++
	}
	checkRecords(t, got, recs[i:])
	if res.Obsolete != 2 || res.End != head {
		t.Fatalf("Obsolete %d End %d, want 2, %d", res.Obsolete, res.End, head)
	}
}

func TestReplayEmpty(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/db/wal"
	res, err := wal.Replay(fs, dir, 0, 0, nil)
	if err != nil || res.End != 0 || len(res.Segments) != 0 {
		t.Fatalf("missing directory: %+v, %v", res, err)
	}
	var c *base.CorruptionError
	if _, err := wal.Replay(fs, dir, 0, 10, nil); !errors.As(err, &c) {
		t.Fatalf("empty log below frontier: %v", err)
	}
	if _, err := wal.Replay(fs, dir, 20, 10, nil); err == nil {
		t.Fatalf("from beyond frontier accepted")
	}
}

func TestReplayCallbackError(t *testing.T) {
	o, _, recs, head := writeLog(t, wal.MinSegmentBytes, 100)
	stop := errors.New("stop")
	n := 0
	res, err := wal.Replay(o.FS, o.Dir, 0, head, func(lsn wal.LSN, r *wal.Record) error {
		if n++; n == 50 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || !strings.Contains(err.Error(), "wal: replay") {
		t.Fatalf("Replay = %v, want the callback's error with context", err)
	}
	if res.Records != 49 || len(recs) != 100 {
		t.Fatalf("%d records before the error", res.Records)
	}
}

func TestRecycle(t *testing.T) {
	o, h := newLog(t, wal.MinSegmentBytes)
	w := openWriter(t, o, 0)
	defer w.Close()
	recs := appendRandom(t, w, newRand(t), 400)
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	segs, _ := wal.Segments(o.FS, o.Dir)
	if len(segs) < 6 {
		t.Fatalf("only %d segments", len(segs))
	}
	// A record inside segment 3: segments 0-2 are wholly below it.
	var below wal.LSN
	for _, r := range recs {
		if r.lsn > segs[3] {
			below = r.lsn
			break
		}
	}
	h.mu.Lock()
	h.record, h.ops = true, nil
	h.mu.Unlock()
	if err := w.Recycle(below); err != nil {
		t.Fatal(err)
	}
	ops := h.opsLog()
	wantOps := []string{"remove " + wal.SegmentName(segs[0]), "remove " + wal.SegmentName(segs[1]),
		"remove " + wal.SegmentName(segs[2]), "syncdir ."}
	if strings.Join(ops, ",") != strings.Join(wantOps, ",") {
		t.Fatalf("ops %v, want %v (oldest first, then the directory)", ops, wantOps)
	}
	left, _ := wal.Segments(o.FS, o.Dir)
	if left[0] != segs[3] || len(left) != len(segs)-3 {
		t.Fatalf("left %v of %v", left, segs)
	}
	i := 0
	for recs[i].lsn < below {
		i++
	}
	got, _, err := replayAll(t, o.FS, o.Dir, below, below)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs[i:])

	// Everything durable: all but the newest segment go.
	if err := w.Recycle(w.Head() + 1000); err != nil {
		t.Fatal(err)
	}
	left, _ = wal.Segments(o.FS, o.Dir)
	if len(left) != 1 || left[0] != segs[len(segs)-1] {
		t.Fatalf("left %v, want only %v", left, segs[len(segs)-1])
	}
	if st := w.Stats(); st.RecycledSegments != int64(len(segs)-1) {
		t.Fatalf("RecycledSegments %d", st.RecycledSegments)
	}
	if err := w.Recycle(w.Head()); err != nil {
		t.Fatal(err)
	}
}

// TestPreallocatedSegments: the writer preallocates each segment to its
// full size (on a file system that can), the reader takes the zero tail of
// the last one for the end of the log (no torn bytes, nothing lost), a
// segment is cut back to its records when the next one starts, and a
// writer reopened at the end continues over the zeros.
func TestPreallocatedSegments(t *testing.T) {
	fs := vfs.NewMem()
	o := wal.Options{FS: fs, Dir: "/db/wal", SegmentBytes: wal.MinSegmentBytes}
	w, err := wal.Open(o, 0)
	if err != nil {
		t.Fatal(err)
	}
	rng := newRand(t)
	recs := appendRandom(t, w, rng, 3)
	if err := w.Sync(w.Head()); err != nil {
		t.Fatal(err)
	}
	first := segmentFiles(t, o)[0]
	if got := fileSize(t, fs, first); got != wal.MinSegmentBytes {
		t.Fatalf("segment of %d bytes, want it preallocated to %d", got, wal.MinSegmentBytes)
	}
	// A crash now: the zero tail is the end of the log.
	got, res, err := replayAll(t, fs.CrashClone(vfs.CrashOptions{}), o.Dir, 0, w.DurableLSN())
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	if res.End != w.Head() || res.TornBytes != 0 {
		t.Fatalf("End %d, TornBytes %d; want %d, 0", res.End, res.TornBytes, w.Head())
	}
	// Grow into more segments: every one but the last holds only records.
	for len(segmentFiles(t, o)) < 3 {
		recs = append(recs, appendRandom(t, w, rng, 20)...)
	}
	head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := segmentFiles(t, o)
	lastFile := files[len(files)-1]
	if got, want := fileSize(t, fs, lastFile), int64(head-segStart(t, lastFile)); got != want {
		t.Fatalf("after Close the last segment has %d bytes, want %d (its tail cut)", got, want)
	}
	for i, f := range files[:len(files)-1] {
		want := int64(segStart(t, files[i+1]) - segStart(t, f))
		if got := fileSize(t, fs, f); got != want {
			t.Fatalf("%s: %d bytes, want %d (cut back to its records)", f, got, want)
		}
	}
	got, res, err = replayAll(t, fs, o.Dir, 0, head)
	if err != nil {
		t.Fatal(err)
	}
	checkRecords(t, got, recs)
	if res.End != head || res.TornBytes != 0 {
		t.Fatalf("after close: End %d, TornBytes %d; want %d, 0", res.End, res.TornBytes, head)
	}
	w = openWriter(t, o, head)
	recs = append(recs, appendRandom(t, w, rng, 5)...)
	head = w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, res, err = replayAll(t, fs, o.Dir, 0, head)
	if err != nil || res.End != head || res.TornBytes != 0 {
		t.Fatalf("after reopen: %v, End %d, TornBytes %d; want nil, %d, 0", err, res.End, res.TornBytes, head)
	}
	checkRecords(t, got, recs)
}
