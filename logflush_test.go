package bwkv_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// logHolds reports whether one of dir's log segments holds run.
func logHolds(t *testing.T, fs vfs.FS, dir string, run []byte) bool {
	t.Helper()
	names, err := fs.List(filepath.Join(dir, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if !strings.HasSuffix(n, ".log") {
			continue
		}
		f, err := fs.Open(filepath.Join(dir, "wal", n))
		if err != nil {
			t.Fatal(err)
		}
		size, err := f.Size()
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, size)
		_, err = f.ReadAt(b, 0)
		_ = f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if bytes.Contains(b, run) {
			return true
		}
	}
	return false
}

// TestLogWrittenWhenTxnEnds: in relaxed mode a transaction whose records
// take the log's buffer past its soft limit (256 KiB) finds them written
// to the log file (not fsynced) when it returns, whichever way it ended,
// though the flush interval is an hour away; the write happens after the
// transaction released its locks (wal.Writer.FlushDue).
func TestLogWrittenWhenTxnEnds(t *testing.T) {
	fs := vfs.NewMem()
	db, err := bwkv.Open("db", &bwkv.Options{FS: fs, Durability: bwkv.DurabilityRelaxed, FlushInterval: time.Hour,
		MaxValueSize: 512 << 10, WALSegmentBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	value := func(b byte) []byte { return bytes.Repeat([]byte{b}, 300<<10) }
	ends := []struct {
		name string
		run  func(v []byte) error
	}{
		{"DB.Put", func(v []byte) error { return db.Put([]byte("put"), v) }},
		{"DB.Update", func(v []byte) error {
			return db.Update(func(tx *bwkv.Txn) error { return tx.Put([]byte("update"), v) })
		}},
		{"Txn.Commit", func(v []byte) error { return inTxn(db, []byte("commit"), v, (*bwkv.Txn).Commit) }},
		{"Txn.Rollback", func(v []byte) error { return inTxn(db, []byte("rollback"), v, (*bwkv.Txn).Rollback) }},
	}
	for i, e := range ends {
		// Nothing pending before: past twice the soft limit the log's
		// background goroutine would write the bytes anyway.
		if err := db.Sync(); err != nil {
			t.Fatal(err)
		}
		v := value(byte(0xA0 + i))
		if err := e.run(v); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		if !logHolds(t, fs, "db", v[:64<<10]) {
			t.Errorf("%s returned with its log record still buffered", e.name)
		}
	}
}

// inTxn puts key in a new transaction and ends it with end.
func inTxn(db *bwkv.DB, key, value []byte, end func(*bwkv.Txn) error) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	if err := tx.Put(key, value); err != nil {
		return err
	}
	return end(tx)
}
