package bwkv_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/vfs"
)

// Microbenchmarks of the hot paths. The comparison with an in-memory B-tree
// doing the same lookups (the floor for the read path) lives in the bench
// module (bench/reference_test.go), so the library's go.mod needs no
// comparison library.

var benchSizes = []int{100_000, 1_000_000}

const benchValueSize = 100

func benchKey(buf []byte, i int) []byte {
	buf = buf[:0]
	buf = append(buf, "key"...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(i)*0x9e3779b97f4a7c15)
	return buf[:16]
}

var benchDBs = map[int]*bwkv.DB{}

func loadedDB(b *testing.B, n int) *bwkv.DB {
	if db := benchDBs[n]; db != nil {
		return db
	}
	db, err := bwkv.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	fillDB(b, db, ids, benchKey, bytes.Repeat([]byte("v"), benchValueSize))
	benchDBs[n] = db
	return db
}

// fillDB puts key(id) = val for every id, 1000 to a transaction, in the
// order given, then checkpoints.
func fillDB(b *testing.B, db *bwkv.DB, ids []int, key func([]byte, int) []byte, val []byte) {
	var kb []byte
	for i := 0; i < len(ids); i += 1000 {
		err := db.Update(func(tx *bwkv.Txn) error {
			for _, id := range ids[i:min(i+1000, len(ids))] {
				kb = key(kb, id)
				if err := tx.Put(kb, val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Checkpoint(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkGetAppend(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("bwkv/keys=%d", n), func(b *testing.B) {
			snapshotReads(b, loadedDB(b, n), func(rng *rand.Rand) int { return rng.IntN(n) })
		})
	}
}

// BenchmarkGetAppendSkewed is BenchmarkGetAppend under a W2-like skew:
// 9 reads in 10 are of one key, the rest uniform.
func BenchmarkGetAppendSkewed(b *testing.B) {
	const n = 100_000
	snapshotReads(b, loadedDB(b, n), func(rng *rand.Rand) int {
		if rng.IntN(10) == 0 {
			return rng.IntN(n)
		}
		return 7
	})
}

// snapshotReads reads b.N keys, each in a fresh snapshot, the key's number
// drawn by pick.
func snapshotReads(b *testing.B, db *bwkv.DB, pick func(*rand.Rand) int) {
	rng := rand.New(rand.NewPCG(1, 2))
	kb, dst := make([]byte, 0, 16), make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		kb = benchKey(kb, pick(rng))
		s, _ := db.NewSnapshot()
		var err error
		dst, err = s.GetAppend(dst[:0], kb)
		s.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			db := loadedDB(b, n)
			rng := rand.New(rand.NewPCG(1, 2))
			kb := make([]byte, 0, 16)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				kb = benchKey(kb, rng.IntN(n))
				if _, err := db.Get(kb); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// bucketKey is kvbench's key for id: "s<id%1024 in 3 hex digits>_<id in
// 10 hex digits>" padded with 'x' to 32 bytes.
func bucketKey(buf []byte, id int) []byte {
	hex := func(buf []byte, v, digits int) []byte {
		for i := digits - 1; i >= 0; i-- {
			buf = append(buf, "0123456789abcdef"[(v>>(4*i))&15])
		}
		return buf
	}
	buf = append(buf[:0], 's')
	buf = hex(buf, id%1024, 3)
	buf = append(buf, '_')
	buf = hex(buf, id, 10)
	for len(buf) < 32 {
		buf = append(buf, 'x')
	}
	return buf
}

// BenchmarkGetBucketKeys: point reads, each in a fresh snapshot, of 200k
// keys shaped as kvbench's (bucketKey) with 1 KiB values: an inner page's
// separators share the 8 bytes after its prefix with every key of their
// bucket, which a one-word search index could not tell apart.
func BenchmarkGetBucketKeys(b *testing.B) {
	const n = 200_000
	db, err := bwkv.Open(b.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed, CacheBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte("v"), 1024)
	fillDB(b, db, rand.New(rand.NewPCG(3, 4)).Perm(n), bucketKey, val)
	rng := rand.New(rand.NewPCG(1, 2))
	var kb []byte
	dst := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		kb = bucketKey(kb, rng.IntN(n))
		s, err := db.NewSnapshot()
		if err != nil {
			b.Fatal(err)
		}
		dst, err = s.GetAppend(dst[:0], kb)
		s.Close()
		if err != nil || len(dst) != len(val) {
			b.Fatalf("get: %v, %d bytes", err, len(dst))
		}
	}
}

func BenchmarkPut(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			db := loadedDB(b, n)
			rng := rand.New(rand.NewPCG(3, 4))
			kb := make([]byte, 0, 16)
			val := bytes.Repeat([]byte("u"), benchValueSize)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				kb = benchKey(kb, rng.IntN(n))
				if err := db.Put(kb, val); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// scan100 reads up to 100 keys from the first >= from in a snapshot of
// db, and returns a sum over their first key bytes and value lengths (so
// the reads are not optimized away).
func scan100(db *bwkv.DB, from []byte) (sink int) {
	s, _ := db.NewSnapshot()
	it, _ := s.NewIter(nil)
	c := 0
	for ok := it.SeekGE(from); ok && c < 100; ok = it.Next() {
		sink += int(it.Key()[0]) + len(it.Value())
		c++
	}
	it.Close()
	s.Close()
	return sink
}

func BenchmarkScan100(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("bwkv/keys=%d", n), func(b *testing.B) {
			db := loadedDB(b, n)
			rng := rand.New(rand.NewPCG(5, 6))
			kb := make([]byte, 0, 16)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				kb = benchKey(kb, rng.IntN(n))
				scan100(db, kb)
			}
			// CPU time says more than wall time on a shared machine.
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkScanCrossing: 100-key scans over 1 KiB values (W6's shape),
// so each scan crosses several leaves. warm
// is the engine as it runs; cold turns off the warming of the caches for
// the next leaf (Iter.startAhead). Both run on one DB in one process: the
// memory layout, which moves a scan's speed between processes by more
// than the warming does on this class of VM, is the same for both.
//
//	go test -run XXX -bench BenchmarkScanCrossing -count 5 .
func BenchmarkScanCrossing(b *testing.B) {
	const n = 100_000
	db := crossingDB
	if db == nil {
		var err error
		if db, err = bwkv.Open(b.TempDir(), nil); err != nil {
			b.Fatal(err)
		}
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		fillDB(b, db, ids, benchKey, bytes.Repeat([]byte("v"), 1024))
		if err := db.Compact(context.Background()); err != nil {
			b.Fatal(err)
		}
		crossingDB = db
	}
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "warm", true: "cold"}[cold], func(b *testing.B) {
			db.SetTestNoAhead(cold)
			defer db.SetTestNoAhead(false)
			rng := rand.New(rand.NewPCG(7, 8))
			kb := make([]byte, 0, 16)
			sink := 0
			b.ReportAllocs()
			b.ResetTimer()
			cpu := cpuTime()
			for i := 0; i < b.N; i++ {
				kb = benchKey(kb, rng.IntN(n))
				sink += scan100(db, kb)
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			if sink == 0 {
				b.Fatal("the scans read nothing")
			}
		})
	}
}

var crossingDB *bwkv.DB

// BenchmarkCommitSync: durable one-key commits with 1, 8 and 64 concurrent
// committers; reports commits/s, log records per fsync and the mean fsync
// latency (group commit shares one fsync among concurrent committers).
func BenchmarkCommitSync(b *testing.B) {
	for _, c := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("committers=%d", c), func(b *testing.B) {
			db, err := bwkv.Open(b.TempDir(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			val := make([]byte, 16)
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := 0; g < c; g++ {
				wg.Add(1)
				go func(g int) {
					defer wg.Done()
					kb := make([]byte, 0, 16)
					for next.Add(1) <= int64(b.N) {
						kb = benchKey(kb, int(next.Load()))
						if err := db.Put(kb, val); err != nil {
							b.Error(err)
							return
						}
					}
				}(g)
			}
			wg.Wait()
			b.StopTimer()
			st := db.Stats().WAL
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			b.ReportMetric(st.RecordsPerSync, "records/fsync")
			if st.Syncs > 0 {
				b.ReportMetric(float64(st.SyncLatency.Microseconds())/float64(st.Syncs), "µs/fsync")
			}
		})
	}
}

// BenchmarkRelaxedAppend: one-key commits of 1 KiB values in Relaxed mode;
// MB/s is log bytes appended per second.
func BenchmarkRelaxedAppend(b *testing.B) {
	db, err := bwkv.Open(b.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 1024)
	kb := make([]byte, 0, 16)
	b.SetBytes(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		kb = benchKey(kb, i)
		if err := db.Put(kb, val); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Sync(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(db.Stats().WAL.Bytes)/b.Elapsed().Seconds()/1e6, "log-MB/s")
}

// BenchmarkPutLatencyCheckpointing reports write p50/p99 with checkpoints
// running (a cut every 1 MiB of dirty frames) and without (a threshold
// never reached): checkpoints must not stall writers.
func BenchmarkPutLatencyCheckpointing(b *testing.B) {
	for _, c := range []struct {
		name  string
		bytes int64
	}{{"checkpoints=off", 1 << 40}, {"checkpoints=on", 1 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			db, err := bwkv.Open(b.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed, CheckpointBytes: c.bytes})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			val := make([]byte, 100)
			kb := make([]byte, 0, 16)
			lat := make([]time.Duration, 0, b.N)
			rng := rand.New(rand.NewPCG(7, 8))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				kb = benchKey(kb, rng.IntN(100_000))
				t0 := time.Now()
				if err := db.Put(kb, val); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
			b.ReportMetric(float64(db.Stats().Checkpoint.Count), "checkpoints")
		})
	}
}

// BenchmarkRecoverHotKeys: Open after a crash whose log since the last
// checkpoint holds n updates of 20 keys (100-byte values), one recovery
// per iteration on a crash clone of the same in-memory directory. Before
// redo's consolidations dropped superseded versions (retention.go) this
// grew with n²: 100k updates took ~15 s.
func BenchmarkRecoverHotKeys(b *testing.B) {
	for _, n := range []int{25_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			fs := vfs.NewMem()
			o := &bwkv.Options{FS: fs, Durability: bwkv.DurabilityRelaxed}
			db, err := bwkv.Open("db", o)
			if err != nil {
				b.Fatal(err)
			}
			val := bytes.Repeat([]byte("v"), benchValueSize)
			for i := 0; i < n; i++ {
				if err := db.Put(fmt.Appendf(nil, "k%02d", i%20), val); err != nil {
					b.Fatal(err)
				}
			}
			if err := db.Sync(); err != nil {
				b.Fatal(err)
			}
			// The crash, frozen now: the live DB's idle settling would
			// checkpoint its log away while the iterations run.
			crashed := fs.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
			db.Close()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				oo := *o
				oo.FS = crashed.CrashClone(vfs.CrashOptions{KeepUnsynced: 1})
				b.StartTimer()
				rdb, err := bwkv.Open("db", &oo)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if got := rdb.Stats().Recovery.RecordsReplayed; got < uint64(n) {
					b.Fatalf("replayed %d records, want >= %d", got, n)
				}
				rdb.Close()
				b.StartTimer()
			}
		})
	}
}
