package bwkv_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// TestCompressionAB is a paired A/B of CompressionNone against S2 (and
// zstd) on JSON-like values with a cache far below the data, so most
// reads load and decompress pages: random gets, 100-key scans and random
// overwrites, the codecs alternating in each of BWKV_AB_ROUNDS rounds so
// that machine noise hits both alike. It reports each codec's median time
// relative to none; it asserts nothing (timing), and runs only with
// BWKV_AB=1. BWKV_AB_CACHE_MIB sets the cache (default 1 MiB, an
// eighth of the data; 64 keeps every page resident, so only checkpoints
// compress and only loads after Open decompress).
func TestCompressionAB(t *testing.T) {
	if envInt("BWKV_AB", 0) == 0 {
		t.Skip("set BWKV_AB=1")
	}
	const keys, valSize = 20_000, 400
	rounds := envInt("BWKV_AB_ROUNDS", 5)
	codecs := []bwkv.Compression{bwkv.CompressionNone, bwkv.CompressionS2, bwkv.CompressionZstd}
	key := func(i int) []byte { return fmt.Appendf(nil, "doc%08d", i) }
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([][]byte, 512)
	for i := range vals {
		vals[i] = []byte(textValue(rng, i, valSize))
	}
	dbs := map[bwkv.Compression]*bwkv.DB{}
	for _, c := range codecs {
		dir := t.TempDir()
		db, err := bwkv.Open(dir, &bwkv.Options{Durability: bwkv.DurabilityRelaxed, Compression: c,
			CacheBytes: int64(envInt("BWKV_AB_CACHE_MIB", 1)) << 20, CheckpointBytes: 4 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for i := 0; i < keys; i++ {
			if err := db.Put(key(i), vals[i%len(vals)]); err != nil {
				t.Fatal(err)
			}
		}
		if err := bwkv.CollectGarbage(db); err != nil {
			t.Fatal(err)
		}
		data, _ := dataDirSize(t, dir)
		t.Logf("%v: data files %d bytes", c, data)
		dbs[c] = db
	}
	ops := map[string]func(db *bwkv.DB, r *rand.Rand){
		"get x5000": func(db *bwkv.DB, r *rand.Rand) {
			var dst []byte
			for range 5000 {
				s, _ := db.NewSnapshot()
				var err error
				dst, err = s.GetAppend(dst[:0], key(r.IntN(keys)))
				s.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
		},
		"scan100 x500": func(db *bwkv.DB, r *rand.Rand) {
			for range 500 {
				s, _ := db.NewSnapshot()
				it, _ := s.NewIter(&bwkv.IterOptions{LowerBound: key(r.IntN(keys - 100))})
				n := 0
				for ok := it.First(); ok && n < 100; ok = it.Next() {
					_ = it.Value()
					n++
				}
				if err := it.Error(); err != nil {
					t.Fatal(err)
				}
				it.Close()
				s.Close()
			}
		},
		"put x5000": func(db *bwkv.DB, r *rand.Rand) {
			for i := range 5000 {
				if err := db.Put(key(r.IntN(keys)), vals[i%len(vals)]); err != nil {
					t.Fatal(err)
				}
			}
			if err := db.Checkpoint(); err != nil { // the compression cost is in the checkpoint
				t.Fatal(err)
			}
		},
	}
	for _, name := range []string{"get x5000", "scan100 x500", "put x5000"} {
		times := map[bwkv.Compression][]time.Duration{}
		for r := 0; r < rounds; r++ {
			order := slices.Clone(codecs)
			if r%2 == 1 {
				slices.Reverse(order)
			}
			for _, c := range order {
				start := time.Now()
				ops[name](dbs[c], rand.New(rand.NewPCG(uint64(r), 9)))
				times[c] = append(times[c], time.Since(start))
			}
		}
		med := func(d []time.Duration) time.Duration { slices.Sort(d); return d[len(d)/2] }
		base := med(times[bwkv.CompressionNone])
		for _, c := range codecs {
			m := med(times[c])
			t.Logf("%-12s %-5v median %v (%.2fx none)", name, c, m.Round(time.Microsecond), float64(m)/float64(base))
		}
	}
}
