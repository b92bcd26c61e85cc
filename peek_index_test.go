package bwkv_test

import (
	"testing"

	"github.com/bwkv/bwkv"
	"github.com/bwkv/bwkv/delta"
)

// TestPeekChainIndex: a stub indexes its leaf's durable chain, so a point
// access of one key on disk reads the delta frames that hold that key and
// the base, not the whole chain, and finds what a read of the whole chain
// finds. Once a GC rewrite has consolidated the chain at the stub's head,
// the frames the index names are gone, and the read goes through the
// chain from its head again. Each half has its mutant, which the test
// catches: skipping the indexed frames loses the keys' versions, and
// returning the indexed read's error instead of reading again fails reads
// after the GC.
func TestPeekChainIndex(t *testing.T) {
	dir := t.TempDir()
	db, versions, pid, chain := openChain(t, dir, 64<<20) // no evictor at work: the test makes the stub
	if bwkv.StubAll(db) == 0 {
		t.Fatal("no leaf stubbed")
	}
	if n := bwkv.StubIndexed(db, pid); n != len(chain)-1 {
		t.Fatalf("the stub indexes %d delta frames; its chain on disk has %d", n, len(chain)-1)
	}
	newest := func(k string) string { vs := versions[k]; return vs[len(vs)-1] }
	for k, vs := range versions {
		got, ok, frames, err := bwkv.PeekStub(db, pid, []byte(k), false)
		if err != nil || !ok || string(got) != newest(k) {
			t.Fatalf("indexed peek of %s = %.30q, %v, %v; want %.30q", k, got, ok, err, newest(k))
		}
		if frames != len(vs)+1 {
			t.Fatalf("indexed peek of %s read %d frames; want its %d deltas and the base", k, frames, len(vs))
		}
		got, ok, frames, err = bwkv.PeekStub(db, pid, []byte(k), true)
		if err != nil || !ok || string(got) != newest(k) || frames != len(chain) {
			t.Fatalf("unindexed peek of %s = %.30q, %v, %v after %d frames; want %.30q after %d", k, got, ok, err, frames, newest(k), len(chain))
		}
	}
	// Mutant: the index's frames for the key are skipped.
	db.SetTestPeekMutants(true, false)
	wrong := 0
	for k := range versions {
		if got, ok, _, err := bwkv.PeekStub(db, pid, []byte(k), false); err != nil || !ok || string(got) != newest(k) {
			wrong++
		}
	}
	db.SetTestPeekMutants(false, false)
	if wrong == 0 {
		t.Fatal("a peek that skips the indexed frames found every key's newest value")
	}

	// The GC consolidates the chain at the stub's head and drops the
	// frames below it.
	db.SetTestGCPaused(false)
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	frames := frameMap(t, dir)
	if after := pageChain(t, frames, pid); len(after) != 1 || after[0].h.Kind != delta.KindBase || after[0].h.Addr != chain[0].h.Addr {
		t.Fatalf("after the GC, page %d's chain has %d frames from %d; want one base at %d", pid, len(after), after[0].h.Addr, chain[0].h.Addr)
	}
	gone := 0
	for _, f := range chain[1:] {
		if _, ok := frames[f.h.Addr]; !ok {
			gone++
		}
	}
	if gone == 0 {
		t.Fatal("every frame below the consolidated head is still on disk: nothing tests the read again")
	}
	// Mutant: an indexed read that fails is not read again.
	db.SetTestPeekMutants(false, true)
	failed := 0
	for k := range versions {
		if _, _, _, err := bwkv.PeekStub(db, pid, []byte(k), false); err != nil {
			failed++
		}
	}
	db.SetTestPeekMutants(false, false)
	if failed == 0 {
		t.Fatal("no indexed peek failed after the GC dropped the frames it names")
	}
	before := bwkv.PeekRereads(db)
	for k := range versions {
		got, ok, _, err := bwkv.PeekStub(db, pid, []byte(k), false)
		if err != nil || !ok || string(got) != newest(k) {
			t.Fatalf("peek of %s after the GC = %.30q, %v, %v; want %.30q", k, got, ok, err, newest(k))
		}
	}
	if n := bwkv.PeekRereads(db) - before; n == 0 {
		t.Fatal("no peek read the chain again after the GC dropped its indexed frames")
	} else {
		t.Logf("%d of %d frames below the head gone; %d of %d peeks read again", gone, len(chain)-1, n, len(versions))
	}
}
