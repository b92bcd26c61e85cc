package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/cockroachdb/pebble/v2"
	bolt "go.etcd.io/bbolt"
)

// Backup and restore throughput against the peers' own mechanisms:
// bwkv Snapshot.WriteTo + Restore + Open, pebble Checkpoint + Open, bbolt
// Tx.WriteTo + Open. MB/s are logical key+value bytes per second, the
// same for every engine. BWKV_BENCH_BACKUP_KEYS sets the key count
// (default 200k keys of 16 B with 100 B values).
func backupBenchKeys() int {
	if n, err := strconv.Atoi(os.Getenv("BWKV_BENCH_BACKUP_KEYS")); err == nil && n > 0 {
		return n
	}
	return 200_000
}

func backupBenchKV(i int) ([]byte, []byte) {
	k := fmt.Appendf(nil, "key%013d", i)
	v := make([]byte, 100)
	for j := range v {
		v[j] = byte(i*31 + j)
	}
	return k, v
}

func syncFile(b *testing.B, path string) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	f.Close()
}

// seq makes every output path of the benchmarks unique (a benchmark body
// runs more than once).
var seq atomic.Int64

func unique(dir, name string) string {
	return filepath.Join(dir, fmt.Sprintf("%s%d", name, seq.Add(1)))
}

func BenchmarkBackupRestore(b *testing.B) {
	n := backupBenchKeys()
	logical := int64(n) * (16 + 100)

	b.Run("bwkv", func(b *testing.B) {
		dir := b.TempDir()
		db, err := bwkv.Open(filepath.Join(dir, "db"), &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for i := 0; i < n; i += 1000 {
			if err := db.Update(func(tx *bwkv.Txn) error {
				for j := i; j < min(i+1000, n); j++ {
					k, v := backupBenchKV(j)
					if err := tx.Put(k, v); err != nil {
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
		b.Run("backup", func(b *testing.B) {
			b.SetBytes(logical)
			for i := 0; i < b.N; i++ {
				path := unique(dir, "backup")
				f, err := os.Create(path)
				if err != nil {
					b.Fatal(err)
				}
				w := bufio.NewWriterSize(f, 1<<20)
				if err := db.View(func(s *bwkv.Snapshot) error { _, err := s.WriteTo(w); return err }); err != nil {
					b.Fatal(err)
				}
				if err := w.Flush(); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
		src := unique(dir, "backup")
		{
			f, err := os.Create(src)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			if err := db.View(func(s *bwkv.Snapshot) error { _, err := s.WriteTo(w); return err }); err != nil {
				b.Fatal(err)
			}
			w.Flush()
			f.Close()
		}
		b.Run("restore+open", func(b *testing.B) {
			b.SetBytes(logical)
			for i := 0; i < b.N; i++ {
				f, err := os.Open(src)
				if err != nil {
					b.Fatal(err)
				}
				target := unique(dir, "restored")
				if err := bwkv.Restore(target, bufio.NewReaderSize(f, 1<<20), nil); err != nil {
					b.Fatal(err)
				}
				f.Close()
				rdb, err := bwkv.Open(target, nil)
				if err != nil {
					b.Fatal(err)
				}
				rdb.Close()
			}
		})
	})

	b.Run("pebble", func(b *testing.B) {
		dir := b.TempDir()
		db, err := pebble.Open(filepath.Join(dir, "db"), &pebble.Options{Logger: quietLogger{}})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		for i := 0; i < n; i += 1000 {
			bt := db.NewBatch()
			for j := i; j < min(i+1000, n); j++ {
				k, v := backupBenchKV(j)
				bt.Set(k, v, nil)
			}
			if err := bt.Commit(pebble.NoSync); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			b.Fatal(err)
		}
		b.Run("checkpoint", func(b *testing.B) {
			b.SetBytes(logical)
			for i := 0; i < b.N; i++ {
				if err := db.Checkpoint(unique(dir, "ckpt")); err != nil {
					b.Fatal(err)
				}
			}
		})
		ckpt := unique(dir, "ckpt")
		if err := db.Checkpoint(ckpt); err != nil {
			b.Fatal(err)
		}
		b.Run("open", func(b *testing.B) {
			b.SetBytes(logical)
			for i := 0; i < b.N; i++ {
				cdb, err := pebble.Open(ckpt, &pebble.Options{Logger: quietLogger{}})
				if err != nil {
					b.Fatal(err)
				}
				cdb.Close()
			}
		})
	})

	b.Run("bbolt", func(b *testing.B) {
		dir := b.TempDir()
		db, err := bolt.Open(filepath.Join(dir, "db"), 0o644, &bolt.Options{NoSync: true})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		bucket := []byte("kv")
		for i := 0; i < n; i += 1000 {
			if err := db.Update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists(bucket)
				if err != nil {
					return err
				}
				for j := i; j < min(i+1000, n); j++ {
					k, v := backupBenchKV(j)
					if err := bk.Put(k, v); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Sync(); err != nil {
			b.Fatal(err)
		}
		b.Run("writeto", func(b *testing.B) {
			b.SetBytes(logical)
			for i := 0; i < b.N; i++ {
				path := unique(dir, "backup")
				if err := db.View(func(tx *bolt.Tx) error { return tx.CopyFile(path, 0o644) }); err != nil {
					b.Fatal(err)
				}
				syncFile(b, path)
			}
		})
		boltCopy := unique(dir, "backup")
		if err := db.View(func(tx *bolt.Tx) error { return tx.CopyFile(boltCopy, 0o644) }); err != nil {
			b.Fatal(err)
		}
		b.Run("open", func(b *testing.B) {
			b.SetBytes(logical)
			for i := 0; i < b.N; i++ {
				cdb, err := bolt.Open(boltCopy, 0o644, nil)
				if err != nil {
					b.Fatal(err)
				}
				cdb.Close()
			}
		})
	})
}

// quietLogger silences pebble's informational log in benchmark output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)  {}
func (quietLogger) Errorf(string, ...any) {}
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf(format, args...))
}
