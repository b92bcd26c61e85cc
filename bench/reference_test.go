package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/tidwall/btree"
)

// The read-path floor: bwkv's point reads and 100-entry scans beside an
// in-memory B-tree (tidwall/btree, no locks) doing the same lookups and
// copying the bytes out. The gap between the two is what the engine's own
// machinery (snapshots, visibility, delta chains) costs.
//
//	cd bench && go test -run XXX -bench 'Reference' -benchmem .

const refValueSize = 100

func refKey(buf []byte, i int) []byte {
	buf = append(buf[:0], "key"...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(i)*0x9e3779b97f4a7c15)
	return buf[:16]
}

type refItem struct{ k, v []byte }

func refBTree(n int) *btree.BTreeG[refItem] {
	t := btree.NewBTreeGOptions(func(a, b refItem) bool { return bytes.Compare(a.k, b.k) < 0 }, btree.Options{NoLocks: true})
	val := bytes.Repeat([]byte("v"), refValueSize)
	for i := 0; i < n; i++ {
		t.Set(refItem{refKey(nil, i), val})
	}
	return t
}

func refDB(b *testing.B, n int) *bwkv.DB {
	db, err := bwkv.Open(b.TempDir(), &bwkv.Options{Durability: bwkv.DurabilityRelaxed})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	val := bytes.Repeat([]byte("v"), refValueSize)
	var kb []byte
	for i := 0; i < n; i += 1000 {
		err := db.Update(func(tx *bwkv.Txn) error {
			for j := i; j < i+1000 && j < n; j++ {
				kb = refKey(kb, j)
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
	return db
}

func BenchmarkReferenceGet(b *testing.B) {
	const n = 100_000
	b.Run(fmt.Sprintf("bwkv/keys=%d", n), func(b *testing.B) {
		db := refDB(b, n)
		rng := rand.New(rand.NewPCG(1, 2))
		kb, dst := make([]byte, 0, 16), make([]byte, 0, 256)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			kb = refKey(kb, rng.IntN(n))
			s, err := db.NewSnapshot()
			if err != nil {
				b.Fatal(err)
			}
			dst, err = s.GetAppend(dst[:0], kb)
			s.Close()
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run(fmt.Sprintf("btree/keys=%d", n), func(b *testing.B) {
		t := refBTree(n)
		rng := rand.New(rand.NewPCG(1, 2))
		kb, dst := make([]byte, 0, 16), make([]byte, 0, 256)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			kb = refKey(kb, rng.IntN(n))
			it, ok := t.Get(refItem{k: kb})
			if !ok {
				b.Fatal("missing")
			}
			dst = append(dst[:0], it.v...)
		}
	})
}

func BenchmarkReferenceScan100(b *testing.B) {
	const n = 100_000
	b.Run(fmt.Sprintf("bwkv/keys=%d", n), func(b *testing.B) {
		db := refDB(b, n)
		rng := rand.New(rand.NewPCG(5, 6))
		kb := make([]byte, 0, 16)
		var dst []byte
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			kb = refKey(kb, rng.IntN(n))
			s, err := db.NewSnapshot()
			if err != nil {
				b.Fatal(err)
			}
			it, err := s.NewIter(nil)
			if err != nil {
				b.Fatal(err)
			}
			c := 0
			for ok := it.SeekGE(kb); ok && c < 100; ok = it.Next() {
				dst = append(dst[:0], it.Key()...)
				dst = append(dst, it.Value()...)
				c++
			}
			it.Close()
			s.Close()
		}
	})
	b.Run(fmt.Sprintf("btree/keys=%d", n), func(b *testing.B) {
		t := refBTree(n)
		rng := rand.New(rand.NewPCG(5, 6))
		kb := make([]byte, 0, 16)
		var dst []byte
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			kb = refKey(kb, rng.IntN(n))
			c := 0
			t.Ascend(refItem{k: kb}, func(it refItem) bool {
				dst = append(dst[:0], it.k...)
				dst = append(dst, it.v...)
				c++
				return c < 100
			})
		}
	})
}
