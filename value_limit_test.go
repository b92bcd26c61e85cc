package bwkv_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/bwkv/bwkv"
)

// TestStoredMaxValueSizeWins: a value written under a large MaxValueSize
// can still be updated and deleted after a reopen that asks for a small
// one (and a log segment sized for it). MaxValueSize is stored with the
// format options and wins, and the log segments are sized from the stored
// limits, so the update and delete records, which carry the full old
// value, fit. Before, the update's record did not fit in a segment and the
// failed append turned the whole DB read-only.
func TestStoredMaxValueSizeWins(t *testing.T) {
	dir := t.TempDir()
	big := bytes.Repeat([]byte("v"), 60<<10)
	db, err := bwkv.Open(dir, &bwkv.Options{MaxKeySize: 64, MaxValueSize: 64 << 10, WALSegmentBytes: 2*(64<<10) + 64 + 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"big1", "big2"} {
		if err := db.Put([]byte(k), big); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	small := &bwkv.Options{MaxKeySize: 64, MaxValueSize: 1 << 10, WALSegmentBytes: 4 << 10}
	db, err = bwkv.Open(dir, small)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("big1"), []byte("small")); err != nil {
		t.Fatalf("update of a big value: %v", err)
	}
	if err := db.Delete([]byte("big2")); err != nil {
		t.Fatalf("delete of a big value: %v", err)
	}
	// (A value over the requested 1 KiB is accepted: the stored limit is
	// the one in effect.)
	if err := db.Put([]byte("big3"), make([]byte, 2<<10)); err != nil {
		t.Fatalf("a 2 KiB value under the stored 64 KiB limit: %v", err)
	}
	if err := db.Put([]byte("other"), []byte("x")); err != nil {
		t.Fatalf("a later write: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bwkv.Open(dir, small)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, err := db.Get([]byte("big1")); err != nil || string(v) != "small" {
		t.Fatalf("big1 = %q, %v", v, err)
	}
	if _, err := db.Get([]byte("big2")); !errors.Is(err, bwkv.ErrNotFound) {
		t.Fatalf("big2: %v, want ErrNotFound", err)
	}
}

// TestUnloggableWriteFailsAlone: a write whose log record cannot fit in a
// segment (possible only for a database whose manifest predates the
// stored MaxValueSize) fails with ErrValueTooLarge, and nothing else: the
// transaction, other writes and the DB go on. Before, the failed append
// degraded the whole DB to read-only.
func TestUnloggableWriteFailsAlone(t *testing.T) {
	dir := t.TempDir()
	db, err := bwkv.Open(dir, &bwkv.Options{MaxKeySize: 64, MaxValueSize: 1 << 10, WALSegmentBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	bwkv.SetMaxValueSizeForTest(db, 1<<20)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte("huge"), make([]byte, 100<<10)); !errors.Is(err, bwkv.ErrValueTooLarge) || errors.Is(err, bwkv.ErrReadOnly) {
		t.Fatalf("unloggable put: %v, want ErrValueTooLarge (and not ErrReadOnly)", err)
	}
	if err := tx.Put([]byte("b"), []byte("2")); err != nil {
		t.Fatalf("the txn goes on: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("c"), []byte("3")); err != nil {
		t.Fatalf("the DB goes on: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bwkv.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k, want := range map[string]string{"a": "1", "b": "2", "c": "3"} {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != want {
			t.Fatalf("%s = %q, %v; want %q", k, v, err, want)
		}
	}
	if _, err := db.Get([]byte("huge")); !errors.Is(err, bwkv.ErrNotFound) {
		t.Fatalf("huge: %v, want ErrNotFound", err)
	}
}
