package bwkv_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/bwkv/bwkv"
)

// benchBackupData returns BWKV_BENCH_BACKUP_KEYS (default 100k) entries of
// 100-byte values, in key order.
func benchBackupData(b *testing.B) []bkEntry {
	n := 100_000
	if s := os.Getenv("BWKV_BENCH_BACKUP_KEYS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	out := make([]bkEntry, n)
	for i := range out {
		out[i] = bkEntry{backupKey(i), bytes.Repeat([]byte{byte(i)}, 100)}
	}
	return out
}

func benchSourceDB(b *testing.B, data []bkEntry) *bwkv.DB {
	db, err := bwkv.Open(filepath.Join(b.TempDir(), "src"), &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(data); i += 1000 {
		if err := db.Update(func(tx *bwkv.Txn) error {
			for _, e := range data[i:min(i+1000, len(data))] {
				if err := tx.Put(e.k, e.v); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkBackup: MB/s of Snapshot.WriteTo (stream bytes per second).
func BenchmarkBackup(b *testing.B) {
	data := benchBackupData(b)
	db := benchSourceDB(b, data)
	defer db.Close()
	var size int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err := db.View(func(s *bwkv.Snapshot) error {
			n, err := s.WriteTo(io.Discard)
			size = n
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(size)
}

func benchStream(b *testing.B, data []bkEntry) []byte {
	db := benchSourceDB(b, data)
	defer db.Close()
	var buf bytes.Buffer
	if err := db.View(func(s *bwkv.Snapshot) error { _, err := s.WriteTo(&buf); return err }); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkRestore: MB/s of Restore (stream bytes per second), including
// the final checkpoint and syncs.
func BenchmarkRestore(b *testing.B) {
	stream := benchStream(b, benchBackupData(b))
	dir := b.TempDir()
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := bwkv.Restore(filepath.Join(dir, fmt.Sprint(i)), bytes.NewReader(stream), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestorePuts is Restore's baseline: the same data loaded with
// db.Put (Relaxed durability, one Sync and a checkpoint at the end, so the
// result is as durable as a restore's). SetBytes uses the stream size so
// the MB/s compare directly.
func BenchmarkRestorePuts(b *testing.B) {
	data := benchBackupData(b)
	stream := benchStream(b, data)
	dir := b.TempDir()
	b.SetBytes(int64(len(stream)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		db, err := bwkv.Open(filepath.Join(dir, fmt.Sprint(i)), &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range data {
			if err := db.Put(e.k, e.v); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Sync(); err != nil {
			b.Fatal(err)
		}
		if err := db.Checkpoint(); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
}
