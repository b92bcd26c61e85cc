package wal_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bwkv/bwkv/internal/base"
	"github.com/bwkv/bwkv/vfs"
	"github.com/bwkv/bwkv/wal"
)

// writeTxnLog logs n transactions shaped as the engine logs them (begin,
// put, commit, each naming the previous record of its txn) and returns
// the records, the head and the options.
func writeTxnLog(t *testing.T, segBytes int64, n int) (wal.Options, *hookFS, []logged, wal.LSN) {
	t.Helper()
	o, h := newLog(t, segBytes)
	w := openWriter(t, o, 0)
	rng := newRand(t)
	var out []logged
	add := func(r wal.Record) wal.LSN {
		lsn, err := w.Append(&r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, logged{lsn, r})
		return lsn
	}
	for i := range n {
		id := wal.TxID(2*i + 1)
		b := add(wal.Record{Type: wal.Begin, TxID: id})
		v := make([]byte, 20+rng.IntN(60))
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		p := add(wal.Record{Type: wal.Put, TxID: id, Seq: 1, PrevLSN: b, Key: fmt.Appendf(nil, "key-%06d", i), Value: v})
		add(wal.Record{Type: wal.Commit, TxID: id, Seq: 2, PrevLSN: p})
	}
	head := w.Head()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return o, h, out, head
}

// replayOpts replays with o, with every mutation forbidden, and checks
// that no file changed.
func replayOpts(t *testing.T, o wal.Options, h *hookFS, ro wal.ReplayOptions) ([]logged, wal.ReplayResult, error) {
	t.Helper()
	before := snapshotFiles(t, h, o.Dir)
	h.readOnly.Store(true)
	var got []logged
	res, err := wal.ReplayWith(h, o.Dir, ro, func(lsn wal.LSN, r *wal.Record) error {
		c := *r
		c.Key, c.Value, c.OldValue = bytes.Clone(r.Key), bytes.Clone(r.Value), bytes.Clone(r.OldValue)
		got = append(got, logged{lsn, c})
		return nil
	})
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

// recordAt returns the index of the record holding byte lsn.
func recordAt(recs []logged, head, lsn wal.LSN) int {
	for i := range recs {
		end := head
		if i+1 < len(recs) {
			end = recs[i+1].lsn
		}
		if lsn < end {
			return i
		}
	}
	return -1
}

// TestDamageIsNotATornTail: a byte flipped at 25% of the newest segment,
// with valid records after it, is damage: strict replay fails naming the
// segment and the damaged record's offset (it used to end the log there,
// dropping three quarters of it silently); TruncateDamaged keeps the
// prefix and reports what it dropped. Each byte of a record is tried
// (length, CRC, header, payload).
func TestDamageIsNotATornTail(t *testing.T) {
	o, h, recs, head := writeTxnLog(t, 1<<20, 400)
	path := lastSegment(t, o)
	if segStart(t, path) != 0 {
		t.Fatalf("want one segment, newest is %s", path)
	}
	size := fileSize(t, o.FS, path)
	i := recordAt(recs, head, wal.LSN(size/4))
	rec := recs[i]
	recLen := int64(recs[i+1].lsn - rec.lsn)
	for k := int64(0); k < recLen; k++ {
		off := int64(rec.lsn) + k
		flipBit(t, o.FS, path, off)
		_, _, err := replayOpts(t, o, h, wal.ReplayOptions{})
		var c *base.CorruptionError
		if !errors.As(err, &c) || c.File != path || c.Offset != int64(rec.lsn) || !strings.Contains(c.Reason, "valid record follows") {
			t.Fatalf("flip at %d (byte %d of the record at %d): Replay = %v, want damage at %s offset %d", off, k, rec.lsn, err, path, rec.lsn)
		}
		got, res, err := replayOpts(t, o, h, wal.ReplayOptions{TruncateDamaged: true})
		if err != nil {
			t.Fatalf("flip at %d: TruncateDamaged: %v", off, err)
		}
		checkRecords(t, got, recs[:i])
		if res.Damage == nil || res.End != rec.lsn || res.DroppedBytes != size-int64(rec.lsn) || res.TornBytes != 0 {
			t.Fatalf("flip at %d: Damage %v End %d Dropped %d Torn %d; want damage, %d, %d, 0", off, res.Damage, res.End, res.DroppedBytes, res.TornBytes, rec.lsn, size-int64(rec.lsn))
		}
		flipBit(t, o.FS, path, off) // restore
	}
	if _, _, err := replayOpts(t, o, h, wal.ReplayOptions{}); err != nil {
		t.Fatalf("restored log: %v", err)
	}
}

// TestZeroedBlockIsDamage: a zeroed block in the middle of the last
// segment (a lost write), with records after it, is damage; zeroes to the
// end of the segment are a clean end.
func TestZeroedBlockIsDamage(t *testing.T) {
	o, h, recs, head := writeTxnLog(t, 1<<20, 400)
	path := lastSegment(t, o)
	size := fileSize(t, o.FS, path)
	at := int64(recs[recordAt(recs, head, wal.LSN(size/2))].lsn)
	editFile(t, o.FS, path, func(f vfs.File) error {
		_, err := f.WriteAt(make([]byte, 4096), at)
		return err
	})
	var c *base.CorruptionError
	if _, _, err := replayOpts(t, o, h, wal.ReplayOptions{}); !errors.As(err, &c) || c.Offset != at {
		t.Fatalf("Replay = %v, want damage at offset %d", err, at)
	}
	// Zero everything from there on: now a clean (preallocated) end.
	editFile(t, o.FS, path, func(f vfs.File) error {
		_, err := f.WriteAt(make([]byte, size-at+8192), at)
		return err
	})
	got, res, err := replayOpts(t, o, h, wal.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.End != wal.LSN(at) || res.TornBytes != 0 || res.ZeroBytes != size-at+8192 {
		t.Fatalf("End %d Torn %d Zero %d; want %d, 0, %d", res.End, res.TornBytes, res.ZeroBytes, at, size-at+8192)
	}
	checkRecords(t, got, recs[:recordAt(recs, head, wal.LSN(at))])
}

// TestTornGarbageIsNotDamage: random bytes after a torn record, however
// many, never pass for a record of the log (the resync check).
func TestTornGarbageIsNotDamage(t *testing.T) {
	o, h, recs, head := writeTxnLog(t, 1<<20, 200)
	path := lastSegment(t, o)
	size := fileSize(t, o.FS, path)
	truncateFile(t, o.FS, path, size-7) // the last record torn
	rng := rand.New(rand.NewPCG(1, 2))
	junk := make([]byte, 4<<20)
	for i := range junk {
		junk[i] = byte(rng.Uint32())
	}
	appendToFile(t, o.FS, path, junk)
	got, res, err := replayOpts(t, o, h, wal.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1].lsn
	if res.End != last || res.TornBytes != int64(head-last)-7+int64(len(junk)) {
		t.Fatalf("End %d Torn %d; want %d, %d", res.End, res.TornBytes, last, int64(head-last)-7+int64(len(junk)))
	}
	checkRecords(t, got, recs[:len(recs)-1])
}

// TestSyncedBound: the LSN the last checkpoint synced makes an early end
// of the log, or a bad record below it, damage even above the frontier.
func TestSyncedBound(t *testing.T) {
	o, h, recs, head := writeTxnLog(t, wal.MinSegmentBytes, 400)
	files := segmentFiles(t, o)
	last := files[len(files)-1]
	// The newest segment is missing: the log ends early.
	if err := o.FS.Remove(last); err != nil {
		t.Fatal(err)
	}
	var c *base.CorruptionError
	if _, _, err := replayOpts(t, o, h, wal.ReplayOptions{Synced: head}); !errors.As(err, &c) || !strings.Contains(c.Reason, "missing") {
		t.Fatalf("newest segment missing: Replay = %v, want a CorruptionError", err)
	}
	if _, _, err := replayOpts(t, o, h, wal.ReplayOptions{}); err != nil {
		t.Fatalf("without a synced LSN the shorter log is valid: %v", err)
	}
	// TruncateDamaged keeps what is left and counts the missing bytes.
	_, res, err := replayOpts(t, o, h, wal.ReplayOptions{Synced: head, TruncateDamaged: true})
	if err != nil || res.Damage == nil || res.DroppedBytes != int64(head-segStart(t, last)) {
		t.Fatalf("TruncateDamaged: %v, Damage %v Dropped %d; want %d", err, res.Damage, res.DroppedBytes, head-segStart(t, last))
	}
	// A torn-looking last record below the synced LSN is damage too.
	prev := files[len(files)-2]
	truncateFile(t, o.FS, prev, fileSize(t, o.FS, prev)-3)
	end := segStart(t, last)
	if _, _, err := replayOpts(t, o, h, wal.ReplayOptions{Synced: end}); !errors.As(err, &c) || !strings.Contains(c.Reason, "synced") {
		t.Fatalf("torn below synced: Replay = %v, want a CorruptionError", err)
	}
	_ = recs
}

// TestTruncateDamagedThenContinue: after a TruncateDamaged replay of a log
// with a missing middle segment, DiscardAfter and Open continue the log at
// the kept end, and the next replay is clean.
func TestTruncateDamagedThenContinue(t *testing.T) {
	o, h, recs, _ := writeTxnLog(t, wal.MinSegmentBytes, 400)
	files := segmentFiles(t, o)
	if err := o.FS.Remove(files[3]); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replayOpts(t, o, h, wal.ReplayOptions{}); err == nil {
		t.Fatal("a missing middle segment replayed cleanly")
	}
	_, res, err := replayOpts(t, o, h, wal.ReplayOptions{TruncateDamaged: true})
	if err != nil || res.Damage == nil || res.End != segStart(t, files[3]) {
		t.Fatalf("TruncateDamaged: %v, Damage %v End %d; want End %d", err, res.Damage, res.End, segStart(t, files[3]))
	}
	if err := wal.DiscardAfter(o.FS, o.Dir, res.End); err != nil {
		t.Fatal(err)
	}
	w := openWriter(t, o, res.End)
	if _, err := w.Append(&wal.Record{Type: wal.Begin, TxID: 9999}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := replayOpts(t, o, h, wal.ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kept := recordAt(recs, 1<<62, res.End)
	if len(got) != kept+1 || got[kept].rec.TxID != 9999 || got[kept].lsn != res.End {
		t.Fatalf("replayed %d records (last %+v), want %d kept plus the new one at %d", len(got), got[len(got)-1], kept, res.End)
	}
}
