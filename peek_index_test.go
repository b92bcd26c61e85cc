package bwkv_test

import (
	"fmt"
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

// TestPeekCarriedIndex: a leaf whose writers' consolidations were carried
// (its base stands for delta frames on disk, delta.Carry) is stubbed with
// every delta frame of its durable chain indexed, the carried ones
// included, so a point access of one key on disk reads that key's delta
// frames and the base, as for any other stub. A stub that indexed only
// the deltas in memory above the carried base read every carried frame
// of the chain for each key.
func TestPeekCarriedIndex(t *testing.T) {
	dir := t.TempDir()
	o, _ := chainOpts(bwkv.Options{}, false)
	o.CacheBytes = 64 << 20 // no evictor at work: the test makes the stub
	// Consolidations every fifth delta, carried up to eight frames deep.
	o.DeltaChainMax = 4
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// writeChain's fillers and first five writes end in a split that
	// leaves the three keys in a leaf with a written base and no chain;
	// of the next seven, the fifth consolidation is carried (five delta
	// frames on disk) and two deltas stay above it.
	const first, writes = 5, 12
	versions := writeChain(t, db, 3, writes, 0, nil)
	if n := bwkv.CarriedConsolidations(db); n == 0 {
		t.Fatal("no consolidation was carried: the test covers nothing")
	}
	deltas := map[string]int{} // each key's delta frames in the chain
	for i := first; i < writes; i++ {
		deltas[fmt.Sprintf("key%02d", i%3)]++
	}
	pid, chain := leafChain(t, frameMap(t, dir))
	if len(chain) != writes-first+1 || chain[len(chain)-1].h.Kind != delta.KindBase {
		t.Fatalf("page %d's chain on disk has %d frames; want %d delta frames and a base", pid, len(chain), writes-first)
	}
	retireAll(t, db)
	if bwkv.StubAll(db) == 0 {
		t.Fatal("no leaf stubbed")
	}
	if n := bwkv.StubIndexed(db, pid); n != len(chain)-1 {
		t.Fatalf("the stub indexes %d delta frames; its chain on disk has %d", n, len(chain)-1)
	}
	for k, vs := range versions {
		got, ok, frames, err := bwkv.PeekStub(db, pid, []byte(k), false)
		if err != nil || !ok || string(got) != vs[len(vs)-1] {
			t.Fatalf("indexed peek of %s = %.30q, %v, %v; want %.30q", k, got, ok, err, vs[len(vs)-1])
		}
		if frames != deltas[k]+1 {
			t.Fatalf("indexed peek of %s read %d frames; want its %d deltas and the base", k, frames, deltas[k])
		}
		if got, frames, err := bwkv.PeekStubVersions(db, pid, []byte(k), false, true); err != nil || len(got) == 0 || string(got[0]) != vs[len(vs)-1] || frames != 1 {
			t.Fatalf("settled peek of %s = %d versions, %v after %d frames; want the newest after 1", k, len(got), err, frames)
		}
	}
}

// TestPeekSettles: an indexed peek ends at the newest version of its key
// that every reader sees and every writer's check stops at (a retired
// txid, no CLR above it): one delta frame for a key updated since the
// base, where the whole read takes the key's deltas and the base. A
// snapshot open since before the newest version holds the read back to
// the version the snapshot sees, and that version is in the result.
func TestPeekSettles(t *testing.T) {
	dir := t.TempDir()
	db, versions, pid, _ := openChain(t, dir, 64<<20)
	retireAll(t, db) // or a version not retired yet holds a peek back
	if bwkv.StubAll(db) == 0 {
		t.Fatal("no leaf stubbed")
	}
	for k, vs := range versions {
		got, frames, err := bwkv.PeekStubVersions(db, pid, []byte(k), false, true)
		if err != nil || len(got) == 0 || string(got[0]) != vs[len(vs)-1] {
			t.Fatalf("settled peek of %s = %d versions, %v; want the newest, %.30q", k, len(got), err, vs[len(vs)-1])
		}
		if frames != 1 {
			t.Fatalf("settled peek of %s read %d frames; want its newest delta only", k, frames)
		}
		if all, _, _ := bwkv.PeekStubVersions(db, pid, []byte(k), false, false); len(all) != len(vs) {
			t.Fatalf("whole peek of %s found %d versions; want %d", k, len(all), len(vs))
		}
	}

	db.Close()

	// The same chain with a snapshot taken before each key's last write:
	// the peek reads on to the version the snapshot sees.
	dir = t.TempDir()
	paused, _ := chainOpts(bwkv.Options{}, false)
	paused.CacheBytes = 64 << 20
	db, err := bwkv.Open(dir, paused)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const keys, writes = 8, 30
	var snap *bwkv.Snapshot
	versions = writeChain(t, db, keys, writes, 0, func(i int, _ map[string][]string) {
		if i == writes-keys-1 {
			if snap, err = db.NewSnapshot(); err != nil {
				t.Fatal(err)
			}
		}
	})
	defer snap.Close()
	pid, _ = leafChain(t, frameMap(t, dir))
	// The writes' reads referenced the page: a first pass may only clear
	// that.
	for i := 0; i < 3 && bwkv.StubIndexed(db, pid) < 0; i++ {
		bwkv.StubAll(db)
	}
	if bwkv.StubIndexed(db, pid) < 0 {
		t.Fatalf("page %d not stubbed", pid)
	}
	for k, vs := range versions {
		got, frames, err := bwkv.PeekStubVersions(db, pid, []byte(k), false, true)
		last, seen := vs[len(vs)-1], vs[len(vs)-2]
		if err != nil || len(got) != 2 || string(got[0]) != last || string(got[1]) != seen || frames != 2 {
			t.Fatalf("settled peek of %s under a snapshot = %d versions, %v after %d frames; want %.30q and %.30q after 2",
				k, len(got), err, frames, last, seen)
		}
	}
	for k, vs := range versions {
		if v, err := snap.Get([]byte(k)); err != nil || string(v) != vs[len(vs)-2] {
			t.Fatalf("snapshot Get(%s) = %.30q, %v; want %.30q", k, v, err, vs[len(vs)-2])
		}
	}
}

// TestPeekSettlesNotUnderCLR: a rolled-back txn's version and its CLR,
// each in its own delta frame under a stub. Once the txn is retired, the
// version's txid is below the lowest unretired one, but the CLR read
// before it masks it, so the peek reads on to the committed version under
// it. The mutant that settles on a masked version stops there.
func TestPeekSettlesNotUnderCLR(t *testing.T) {
	dir := t.TempDir()
	db, versions, pid, _ := openChain(t, dir, 64<<20)
	const k = "key03"
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Put([]byte(k), []byte("rolled back")); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil { // the version's frame
		t.Fatal(err)
	}
	id := bwkv.TxnID(tx)
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(); err != nil { // the CLR's frame
		t.Fatal(err)
	}
	retirePast(t, db, id)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3 && bwkv.StubIndexed(db, pid) < 0; i++ {
		bwkv.StubAll(db)
	}
	if bwkv.StubIndexed(db, pid) < 0 {
		t.Fatalf("page %d not stubbed", pid)
	}
	vs := versions[k]
	got, frames, err := bwkv.PeekStubVersions(db, pid, []byte(k), false, true)
	if err != nil || len(got) != 3 || string(got[1]) != "rolled back" || string(got[2]) != vs[len(vs)-1] {
		t.Fatalf("settled peek of %s = %d versions, %v after %d frames; want the CLR, the rolled-back version and %.30q", k, len(got), err, frames, vs[len(vs)-1])
	}
	if v, err := db.Get([]byte(k)); err != nil || string(v) != vs[len(vs)-1] {
		t.Fatalf("Get(%s) = %.30q, %v; want %.30q", k, v, err, vs[len(vs)-1])
	}
}

// TestBlindWriteSettles: a write that did not read its key first peeks at
// the key's versions on disk itself, for its conflict check and its old
// value, and that peek also ends at the newest version every reader sees:
// each key's write reads its newest delta frame, not the key's older
// frames and the base (the mutant that never settles a write's peek reads
// them: several times the bytes). The old value is still right: a
// rolled-back write restores it, and the writes survive a reopen.
func TestBlindWriteSettles(t *testing.T) {
	dir := t.TempDir()
	// A one-byte cache admits no stub (a write to it peeks), and an idle
	// evictor leaves the stub the test makes as it is (dropped, the next
	// write read the whole chain: it did, under load).
	paused, _ := chainOpts(bwkv.Options{}, false)
	db, versions, pid, _ := openChainWith(t, dir, bwkv.WithTestNoEvict(paused))
	stub := func() {
		for i := 0; i < 3 && bwkv.StubIndexed(db, pid) < 0; i++ {
			bwkv.StubAll(db)
		}
		if bwkv.StubIndexed(db, pid) < 0 {
			t.Fatalf("page %d not stubbed", pid)
		}
	}
	// ready retires every version so far (a peek may then settle at a
	// key's newest version), makes them durable and stubs the leaf: an
	// indexed stub with nothing in memory.
	ready := func() {
		t.Helper()
		retireAll(t, db)
		if err := db.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		stub()
	}
	// One frame: the newest version's, whose value and header take about
	// 100 bytes more than the value.
	oneFrame := func(v string) int64 { return int64(len(v) + 128) }
	ready()
	for k, vs := range versions {
		_, frames, err := bwkv.PeekStubVersions(db, pid, []byte(k), false, false)
		if err != nil || frames < 3 {
			t.Fatalf("whole peek of %s read %d frames, %v; want its %d deltas and the base", k, frames, err, len(vs))
		}
		before := bwkv.TreeMissedBytes(db)
		if err := db.Put([]byte(k), []byte(k+" new")); err != nil {
			t.Fatal(err)
		}
		if read := bwkv.TreeMissedBytes(db) - before; read == 0 || read > oneFrame(vs[len(vs)-1]) {
			t.Fatalf("blind Put of %s read %d bytes from disk; want its newest delta frame (at most %d)", k, read, oneFrame(vs[len(vs)-1]))
		}
	}
	// The blind writes' versions are durable, retired and in the stub's
	// chain in memory.
	ready()
	for k, vs := range versions {
		// A transaction's write, rolled back: its peek gave the old
		// value the rollback restores, and read one delta frame.
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		before := bwkv.TreeMissedBytes(db)
		if err := tx.Put([]byte(k), []byte("rolled back")); err != nil {
			t.Fatal(err)
		}
		if read := bwkv.TreeMissedBytes(db) - before; read == 0 || read > oneFrame(vs[len(vs)-1]) {
			t.Fatalf("write of %s read %d bytes from disk; want one delta frame (at most %d)", k, read, oneFrame(vs[len(vs)-1]))
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if v, err := db.Get([]byte(k)); err != nil || string(v) != k+" new" {
			t.Fatalf("Get(%s) after a rollback = %q, %v; want %q", k, v, err, k+" new")
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bwkv.Open(dir, paused)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for k := range versions {
		if v, err := db.Get([]byte(k)); err != nil || string(v) != k+" new" {
			t.Fatalf("Get(%s) after reopening = %q, %v; want %q", k, v, err, k+" new")
		}
	}
}

// retireAll returns once every txn db began so far is retired (retirePast
// of a txn begun now). A loaded machine can leave the last commits of a
// test's setup unretired.
func retireAll(t *testing.T, db *bwkv.DB) {
	t.Helper()
	probe, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	id := bwkv.TxnID(probe)
	if err := probe.Rollback(); err != nil {
		t.Fatal(err)
	}
	retirePast(t, db, id)
}

// retirePast returns once txn id is retired: other txns commit (a filler
// key, below the test leaf's keys) until id is below the lowest
// unretired txid. Retirement waits for the log.
func retirePast(t *testing.T, db *bwkv.DB, id uint64) {
	t.Helper()
	for i := 0; bwkv.LowestUnretired(db) <= id; i++ {
		if i == 1000 {
			t.Fatalf("txn %d not retired: lowest unretired %d", id, bwkv.LowestUnretired(db))
		}
		if err := db.Put([]byte("a000"), []byte("filler")); err != nil {
			t.Fatal(err)
		}
		if err := db.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}
