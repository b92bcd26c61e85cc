package bwkv

import (
	"slices"
	"sync"
	"testing"
)

// TestTxnSet: transactions join the shard their hint picks, leave it once
// however often remove runs, and all/len see exactly the members, under
// concurrent joins and leaves.
func TestTxnSet(t *testing.T) {
	s := newTxnSet(4)
	txs := make([]*Txn, 10)
	for i := range txs {
		txs[i] = &Txn{}
		s.add(txs[i], i-3) // negative hints too
	}
	if s.len() != 10 || len(s.all()) != 10 {
		t.Fatalf("len %d, all %d; want 10", s.len(), len(s.all()))
	}
	for _, i := range []int{0, 4, 9, 4, 5} { // first and last added, middle, one twice
		s.remove(txs[i])
	}
	if s.len() != 6 {
		t.Fatalf("len %d after removing 4, want 6", s.len())
	}
	got := s.all()
	for i, tx := range txs {
		if in := slices.Contains(got, tx); in != (i != 0 && i != 4 && i != 5 && i != 9) {
			t.Fatalf("txn %d: in the set %v", i, in)
		}
	}
	s.remove(&Txn{}) // never added
	for _, tx := range got {
		s.remove(tx)
	}
	if s.len() != 0 || len(s.all()) != 0 {
		t.Fatalf("not empty: len %d, all %d", s.len(), len(s.all()))
	}
	for i := range s.shards {
		if s.shards[i].head != nil {
			t.Fatalf("shard %d keeps a head", i)
		}
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				tx := &Txn{}
				s.add(tx, g+i)
				if i%2 == 0 {
					s.remove(tx)
					s.remove(tx)
				}
			}
		}()
	}
	wg.Wait()
	if n, all := s.len(), len(s.all()); n != 4000 || all != 4000 {
		t.Fatalf("after concurrent use: len %d, all %d; want 4000", n, all)
	}
}

// TestOpenTxnsAcrossShards: Close rolls back the transactions of every
// shard, and Stats counts them all.
func TestOpenTxnsAcrossShards(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{Durability: DurabilityRelaxed})
	if err != nil {
		t.Fatal(err)
	}
	var txs []*Txn
	shards := map[*txnShard]bool{}
	for i := 0; len(shards) < 2 && i < 4*len(db.txns.shards)*8+8; i++ {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		txs = append(txs, tx)
		shards[tx.shard] = true
	}
	if len(shards) < 2 {
		t.Fatalf("%d open txns all joined one shard", len(txs))
	}
	if err := txs[0].Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().Txn.Open; n != len(txs) {
		t.Fatalf("Stats.Open %d, want %d", n, len(txs))
	}
	if err := txs[1].Commit(); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().Txn.Open; n != len(txs)-1 {
		t.Fatalf("Stats.Open %d after a commit, want %d", n, len(txs)-1)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for i, tx := range txs[2:] {
		if err := tx.Commit(); err == nil {
			t.Fatalf("txn %d committed after Close rolled it back", i+2)
		}
	}
	if db.txns.len() != 0 {
		t.Fatalf("%d txns left in the set after Close", db.txns.len())
	}
}
