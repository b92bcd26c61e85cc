package bwkv_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwkv/bwkv"
)

func countKeys(t *testing.T, db *bwkv.DB, n int) int {
	t.Helper()
	got := 0
	for i := 0; i < n; i++ {
		switch _, err := db.Get([]byte(fmt.Sprintf("k%04d", i))); {
		case err == nil:
			got++
		case !errors.Is(err, bwkv.ErrNotFound):
			t.Fatalf("get k%04d: %v", i, err)
		}
	}
	return got
}

// TestDamagedNewestSegment is the reproduction: 400 sync puts, a
// byte flipped at 25% of the newest segment. Open used to take the flip
// for a torn tail and drop the 300 commits after it silently; now it fails
// with a *CorruptionError naming the segment and the damaged record's
// offset, and changes nothing. WALRecoveryTruncateDamaged then opens it,
// keeping the prefix and reporting what it dropped (Stats, logger).
func TestDamagedNewestSegment(t *testing.T) {
	opts := func() *bwkv.Options {
		return &bwkv.Options{WALSegmentBytes: 1 << 20, MaxValueSize: 1 << 10}
	}
	dir := t.TempDir()
	db, err := bwkv.Open(dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segments(t, dir)
	newest := segs[len(segs)-1]
	// A segment may be preallocated: its records end at the last non-zero
	// byte, and the flip goes a quarter of the way into them.
	flipAt := recordsExtent(t, newest) / 4
	flipByte(t, newest, flipAt)
	fi, err := os.Stat(newest)
	if err != nil {
		t.Fatal(err)
	}

	before := dirFingerprint(t, dir)
	_, err = bwkv.Open(dir, opts())
	var ce *bwkv.CorruptionError
	if !errors.Is(err, bwkv.ErrCorruption) || !errors.As(err, &ce) {
		t.Fatalf("open of a log damaged mid-segment: %v, want a *CorruptionError", err)
	}
	// The offset is the start of the damaged record: at most one record
	// (about 200 bytes for these puts) before the flipped byte.
	if ce.File != newest || ce.Offset > flipAt || ce.Offset < flipAt-512 {
		t.Fatalf("corruption names %s at %d, want %s at the record holding offset %d", ce.File, ce.Offset, newest, flipAt)
	}
	if after := dirFingerprint(t, dir); after != before {
		t.Fatal("a failed open changed the directory")
	}

	var logged bytes.Buffer
	o := opts()
	o.WALRecovery = bwkv.WALRecoveryTruncateDamaged
	o.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatalf("open with WALRecoveryTruncateDamaged: %v", err)
	}
	rs := db.Stats().Recovery
	if rs.DroppedBytes != uint64(fi.Size()-ce.Offset) || !strings.Contains(rs.Damage, filepath.Base(newest)) {
		t.Fatalf("Stats.Recovery = %+v, want %d dropped bytes and the damage named", rs, fi.Size()-ce.Offset)
	}
	if !strings.Contains(logged.String(), "damaged log truncated") {
		t.Fatalf("nothing logged about the dropped log: %q", logged.String())
	}
	n := countKeys(t, db, 400)
	if n < 80 || n > 120 {
		t.Fatalf("%d keys kept, want the ~100 before the damage", n)
	}
	// The kept prefix is a clean log: writes go on, and a strict reopen
	// sees everything.
	if err := db.Put([]byte("after"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bwkv.Open(dir, opts())
	if err != nil {
		t.Fatalf("strict reopen after the truncation: %v", err)
	}
	defer db.Close()
	if got := countKeys(t, db, 400); got != n {
		t.Fatalf("%d keys after reopen, want %d", got, n)
	}
	if _, err := db.Get([]byte("after")); err != nil {
		t.Fatal(err)
	}
}

// TestLostNewestSegment: the manifest records how far the last publish
// synced the log; a newest segment that is missing or cut short below it
// is damage, even above the checkpoint frontier. (Commits logged between
// the cut and the publish lie above the frontier but below that LSN.)
func TestLostNewestSegment(t *testing.T) {
	opts := func() *bwkv.Options {
		return &bwkv.Options{WALSegmentBytes: 16 << 10, MaxValueSize: 1 << 10}
	}
	put := func(db *bwkv.DB, from, to int) {
		for i := from; i < to; i++ {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), make([]byte, 100)); err != nil {
				t.Error(err)
				return
			}
		}
	}
	build := func(t *testing.T) string {
		dir := t.TempDir()
		db, err := bwkv.Open(dir, opts())
		if err != nil {
			t.Fatal(err)
		}
		put(db, 0, 100)
		db.SetTestCutHook(func() { put(db, 100, 400) })
		err = db.Checkpoint()
		db.SetTestCutHook(nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, newest string)
	}{
		{"missing", func(t *testing.T, newest string) {
			if err := os.Remove(newest); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, newest string) {
			if err := os.Truncate(newest, 100); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := build(t)
			segs := segments(t, dir)
			tc.damage(t, segs[len(segs)-1])
			before := dirFingerprint(t, dir)
			_, err := bwkv.Open(dir, opts())
			var ce *bwkv.CorruptionError
			if !errors.Is(err, bwkv.ErrCorruption) || !errors.As(err, &ce) || ce.File == "" {
				t.Fatalf("open: %v, want a *CorruptionError naming a file", err)
			}
			if dirFingerprint(t, dir) != before {
				t.Fatal("a failed open changed the directory")
			}
			o := opts()
			o.WALRecovery = bwkv.WALRecoveryTruncateDamaged
			db, err := bwkv.Open(dir, o)
			if err != nil {
				t.Fatalf("open with WALRecoveryTruncateDamaged: %v", err)
			}
			if rs := db.Stats().Recovery; rs.DroppedBytes == 0 || rs.Damage == "" {
				t.Fatalf("Stats.Recovery = %+v, want the loss reported", rs)
			}
			if n := countKeys(t, db, 400); n < 100 || n >= 400 {
				t.Fatalf("%d keys, want the checkpointed 100 and some more, not all", n)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err = bwkv.Open(dir, opts())
			if err != nil {
				t.Fatalf("strict reopen after the truncation: %v", err)
			}
			db.Close()
		})
	}
}

// recordsExtent returns the length of path without its zero-filled tail
// (the preallocated space past the last record).
func recordsExtent(t *testing.T, path string) int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return int64(len(bytes.TrimRight(b, "\x00")))
}

// TestTruncateDamagedOlderSegment: damage in a segment that is not the
// newest fails a strict Open; WALRecoveryTruncateDamaged keeps the log up
// to the damaged record and drops it and every later segment, and the
// directory then opens strictly, with writes going on.
func TestTruncateDamagedOlderSegment(t *testing.T) {
	opts := func() *bwkv.Options {
		return &bwkv.Options{WALSegmentBytes: 16 << 10, MaxValueSize: 1 << 10}
	}
	dir := t.TempDir()
	db, err := bwkv.Open(dir, opts())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segments(t, dir)
	if len(segs) < 4 {
		t.Fatalf("%d segments, want at least 4", len(segs))
	}
	flipByte(t, segs[1], 1000)
	if _, err := bwkv.Open(dir, opts()); !errors.Is(err, bwkv.ErrCorruption) {
		t.Fatalf("strict open: %v, want ErrCorruption", err)
	}
	o := opts()
	o.WALRecovery = bwkv.WALRecoveryTruncateDamaged
	db, err = bwkv.Open(dir, o)
	if err != nil {
		t.Fatalf("open with WALRecoveryTruncateDamaged: %v", err)
	}
	if rs := db.Stats().Recovery; rs.DroppedBytes == 0 || !strings.Contains(rs.Damage, filepath.Base(segs[1])) {
		t.Fatalf("Stats.Recovery = %+v, want the damage in %s reported", rs, segs[1])
	}
	n := countKeys(t, db, 400)
	if n == 0 || n >= 400 {
		t.Fatalf("%d keys kept, want the prefix before the damage", n)
	}
	if got := len(segments(t, dir)); got != 2 {
		t.Fatalf("%d segments after the truncation, want the 2 up to the damage", got)
	}
	if err := db.Put([]byte("after"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bwkv.Open(dir, opts())
	if err != nil {
		t.Fatalf("strict reopen: %v", err)
	}
	defer db.Close()
	if got := countKeys(t, db, 400); got != n {
		t.Fatalf("%d keys after reopen, want %d", got, n)
	}
}
