package bench

import (
	"encoding/binary"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
	bolt "go.etcd.io/bbolt"
)

// The hot counter: 16 goroutines increment one key through each engine's
// managed update (bwkv DB.Update, which waits on the key's writer and
// retries a conflict; bbolt DB.Update, one writer at a time), relaxed
// durability in both (bwkv DurabilityRelaxed, bbolt NoSync). ops/s is
// committed increments per second; the final value is checked, so a lost
// increment fails the benchmark.
//
//	go test -run XXX -bench BenchmarkHotCounter -benchtime 80000x -count 5 .
const hotWorkers = 16

func BenchmarkHotCounter(b *testing.B) {
	key := []byte("counter")
	b.Run("engine=bwkv", func(b *testing.B) {
		db, err := bwkv.Open(b.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		hotRun(b, func() error {
			return db.Update(func(tx *bwkv.Txn) error {
				v, err := tx.Get(key)
				if err != nil && !errors.Is(err, bwkv.ErrNotFound) {
					return err
				}
				return tx.Put(key, counterNext(v))
			})
		}, func() ([]byte, error) { return db.Get(key) })
		b.ReportMetric(float64(db.Stats().Txn.Conflicts)/float64(b.N), "conflicts/op")
	})
	b.Run("engine=bbolt", func(b *testing.B) {
		db, err := bolt.Open(filepath.Join(b.TempDir(), "bbolt.db"), 0o644, &bolt.Options{
			NoSync: true, NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
		})
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket(bboltBucket); return err }); err != nil {
			b.Fatal(err)
		}
		hotRun(b, func() error {
			return db.Update(func(tx *bolt.Tx) error {
				bk := tx.Bucket(bboltBucket)
				return bk.Put(key, counterNext(bk.Get(key)))
			})
		}, func() (v []byte, err error) {
			err = db.View(func(tx *bolt.Tx) error { v = append(v, tx.Bucket(bboltBucket).Get(key)...); return nil })
			return v, err
		})
	})
}

// counterNext returns the big-endian successor of the stored counter (nil
// is zero), in a new slice: neither engine lets a put's value alias the
// bytes a get returned.
func counterNext(v []byte) []byte {
	var n uint64
	if len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), n+1)
}

// hotRun splits b.N increments over hotWorkers goroutines, reports ops/s
// and checks the final value.
func hotRun(b *testing.B, inc func() error, get func() ([]byte, error)) {
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := range hotWorkers {
		n := b.N / hotWorkers
		if w < b.N%hotWorkers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				if err := inc(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
	b.StopTimer()
	v, err := get()
	if err != nil || len(v) != 8 || binary.BigEndian.Uint64(v) != uint64(b.N) {
		b.Fatalf("counter = %x (%v), want %d increments", v, err, b.N)
	}
}
