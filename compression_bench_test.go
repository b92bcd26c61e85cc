package bwkv_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv"
)

// BenchmarkCompressionText compares the codecs on JSON-like values with a
// cache far smaller than the data, so most reads load (and decompress)
// pages from the data files: random Get, a 100-key scan, and a random
// overwrite. Paired A/B: run with -count N and compare codec rows.
func BenchmarkCompressionText(b *testing.B) {
	const keys, valSize = 50_000, 400
	for _, c := range []bwkv.Compression{bwkv.CompressionNone, bwkv.CompressionS2, bwkv.CompressionZstd} {
		db, err := bwkv.Open(b.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed, Compression: c,
			CacheBytes: 2 << 20, CheckpointBytes: 4 << 20})
		if err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		vals := make([][]byte, 1024)
		for i := range vals {
			vals[i] = []byte(textValue(rng, i, valSize))
		}
		key := func(i int) []byte { return fmt.Appendf(nil, "doc%08d", i) }
		for i := 0; i < keys; i++ {
			if err := db.Put(key(i), vals[i%len(vals)]); err != nil {
				b.Fatal(err)
			}
		}
		if err := db.Checkpoint(); err != nil {
			b.Fatal(err)
		}
		b.Run(c.String()+"/get", func(b *testing.B) {
			var dst []byte
			for b.Loop() {
				s, _ := db.NewSnapshot()
				dst, err = s.GetAppend(dst[:0], key(rng.IntN(keys)))
				s.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.String()+"/scan100", func(b *testing.B) {
			for b.Loop() {
				s, _ := db.NewSnapshot()
				it, _ := s.NewIter(&bwkv.IterOptions{LowerBound: key(rng.IntN(keys - 100))})
				n := 0
				for ok := it.First(); ok && n < 100; ok = it.Next() {
					_ = it.Value()
					n++
				}
				if err := it.Error(); err != nil {
					b.Fatal(err)
				}
				it.Close()
				s.Close()
			}
		})
		b.Run(c.String()+"/put", func(b *testing.B) {
			i := 0
			for b.Loop() {
				if err := db.Put(key(rng.IntN(keys)), vals[i%len(vals)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		db.Close()
	}
}
