package bwkv_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/bwkv/bwkv"
)

// TestPeekKeepsLedgerChain: a peek reads the whole durable chain of an
// evicted leaf, and the stub it leaves in memory keeps that chain in the
// GC's ledger, as a load does. The chains the ledger holds agree with the
// disk (addresses, sizes and blob references), and the checkpoint of
// writes to the peeked leaves reads no chain from disk to account their
// junk (before, it read every such leaf's chain again, each frame decoded
// whole).
func TestPeekKeepsLedgerChain(t *testing.T) {
	dir := t.TempDir()
	// Every third value is stored in a blob file, so base and delta frames
	// hold blob references.
	val := func(i, round int) []byte {
		n := 5
		if i%3 == 0 {
			n = 40
		}
		return bytes.Repeat(fmt.Appendf(nil, "%06d.%d|", i, round), n)
	}
	const n = peekKeys
	o := &bwkv.Options{CacheBytes: 512 << 10, CheckpointBytes: 256 << 10, BlobThreshold: 256, Durability: bwkv.DurabilityRelaxed}
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetTestGCPaused(true)
	write := func(keys []int, round int) {
		t.Helper()
		for _, i := range keys {
			if err := db.Put(peekKey(i), val(i, round)); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
	}
	all := rand.New(rand.NewPCG(3, 4)).Perm(n)
	write(all, 0)
	// Delta frames over the bases: a second round on a third of the keys.
	write(all[:n/3], 1)
	// Nothing of a dropped leaf stays in memory, nor in the ledger: what
	// it holds now is the inner pages' chains and those of leaves not
	// dropped.
	bwkv.EvictAll(db)
	inner, err := db.LedgerChainsAgree()
	if err != nil {
		t.Fatal(err)
	}

	// Point reads of evicted leaves peek and leave stubs.
	before := db.Stats().Cache.Peeks
	sample := all[n/2 : n/2+n/10]
	for _, i := range sample {
		if _, err := db.Get(peekKey(i)); err != nil {
			t.Fatal(err)
		}
	}
	peeks := db.Stats().Cache.Peeks - before
	held, err := db.LedgerChainsAgree()
	if err != nil {
		t.Fatal(err)
	}
	leaves := db.Stats().Tree.Leaves
	t.Logf("%d reads: %d peeks, %d -> %d ledger chains, %d leaves", len(sample), peeks, inner, held, leaves)
	if peeks < uint64(len(sample))/2 {
		t.Fatalf("%d of %d reads of evicted leaves peeked", peeks, len(sample))
	}
	// The sample touches nearly every leaf.
	if held-inner < int(leaves)/2 {
		t.Fatalf("the ledger holds %d chains of %d leaves after %d peeks", held, leaves, peeks)
	}

	// Writes to the peeked leaves, then their checkpoint: its accounting
	// finds every old chain in the ledger.
	walks := db.LedgerWalks()
	write(sample, 2)
	t.Logf("the ledger read %d chains", db.LedgerWalks()-walks)
	if w := db.LedgerWalks() - walks; w != 0 {
		t.Fatalf("after %d writes to peeked leaves, the ledger read %d chains from disk", len(sample), w)
	}
	if held, err := db.LedgerChainsAgree(); err != nil || held == 0 {
		t.Fatalf("after the checkpoint: %d ledger chains, %v", held, err)
	}
	if st := db.Stats().GC; st.AccountingUnread != 0 || st.AccountingMismatched != 0 {
		t.Fatalf("accounting misses: %d unread, %d mismatched", st.AccountingUnread, st.AccountingMismatched)
	}
	round := make(map[int]int)
	for _, i := range all[:n/3] {
		round[i] = 1
	}
	for _, i := range sample {
		round[i] = 2
	}
	for i := range n {
		if got, err := db.Get(peekKey(i)); err != nil || !bytes.Equal(got, val(i, round[i])) {
			t.Fatalf("Get(%s) = %.20q, %v; want %.20q", peekKey(i), got, err, val(i, round[i]))
		}
	}
}
