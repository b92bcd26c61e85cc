package gc

import (
	"errors"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/manifest"
)

// state returns a manifest state with files 1 ([1,100)) and 2 ([100,200)),
// each 1000 bytes total and live, and the given page heads.
func state(t *testing.T, pages map[uint64]uint64) *manifest.State {
	t.Helper()
	st := manifest.NewState()
	e := &manifest.Edit{
		Has:        manifest.HasNextFileID | manifest.HasNextAddr | manifest.HasNextPID,
		NextFileID: 3, NextAddr: 200, NextPID: 100,
		AddFiles:  []manifest.FileMeta{{ID: 1, Total: 1000, Live: 1000}, {ID: 2, Total: 1000, Live: 1000}},
		AddRanges: []manifest.Range{{Lo: 1, Hi: 100, File: 1}, {Lo: 100, Hi: 200, File: 2}},
	}
	for pid, addr := range pages {
		e.SetPages = append(e.SetPages, manifest.PageEntry{PID: pid, Addr: addr})
	}
	if err := st.Apply(e); err != nil {
		t.Fatal(err)
	}
	return st
}

func stats(p *Plan) map[manifest.FileID]int64 {
	out := map[manifest.FileID]int64{}
	for _, f := range p.FileStats {
		out[f.ID] = f.Live
	}
	return out
}

func noWalk(pid, head uint64) (Chain, error) { return nil, errors.New("no disk in this test") }

func TestPlanJunk(t *testing.T) {
	// Page 7: base 50 (file 1), deltas 120 and 150 (file 2).
	old := Chain{{150, 10, nil}, {120, 20, nil}, {50, 300, nil}}
	cases := []struct {
		name  string
		ch    Change
		live  map[manifest.FileID]int64
		junk  int64
		chain Chain // the page's chain after Apply (nil: forgotten)
		miss  int   // Plan.Mismatched
	}{
		{"new deltas on top: nothing is junk", Change{PID: 7, Written: Chain{{210, 5, nil}}, Keep: 150},
			map[manifest.FileID]int64{}, 0, Chain{{210, 5, nil}, {150, 10, nil}, {120, 20, nil}, {50, 300, nil}}, 0},
		{"new base: the whole old chain is junk", Change{PID: 7, Written: Chain{{211, 5, nil}, {210, 400, nil}}},
			map[manifest.FileID]int64{1: 700, 2: 970}, 330, Chain{{211, 5, nil}, {210, 400, nil}}, 0},
		{"removed: the whole old chain is junk", Change{PID: 7, Removed: true},
			map[manifest.FileID]int64{1: 700, 2: 970}, 330, nil, 0},
		{"keep an older frame: the newer ones are junk", Change{PID: 7, Written: Chain{{210, 5, nil}}, Keep: 120},
			map[manifest.FileID]int64{2: 990}, 10, Chain{{210, 5, nil}, {120, 20, nil}, {50, 300, nil}}, 0},
		{"keep a frame the chain lacks: nothing counted, page forgotten", Change{PID: 7, Written: Chain{{210, 5, nil}}, Keep: 99},
			map[manifest.FileID]int64{}, 0, nil, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := NewLedger(noWalk)
			l.Loaded(7, old, l.Epoch())
			st := state(t, map[uint64]uint64{7: 150})
			p := l.Plan([]Change{c.ch}, st)
			if _, mis := l.Misses(); p.Mismatched != c.miss || mis != uint64(c.miss) || p.Unknown != 0 {
				t.Fatalf("plan: %d mismatched (ledger %d), %d unknown, want %d and 0", p.Mismatched, mis, p.Unknown, c.miss)
			}
			if got := stats(p); len(got) != len(c.live) || p.Junk != c.junk {
				t.Fatalf("live %v junk %d, want %v and %d", got, p.Junk, c.live, c.junk)
			} else {
				for id, v := range c.live {
					if got[id] != v {
						t.Fatalf("file %d live %d, want %d", id, got[id], v)
					}
				}
			}
			l.Apply(p)
			got, ok := l.chains.Load(7)
			if (c.chain == nil) != !ok || (ok && !equal(got, c.chain)) {
				t.Fatalf("chain after apply %v (%v), want %v", got, ok, c.chain)
			}
		})
	}
}

func equal(a, b Chain) bool { return equalChains(a, b) }

// TestPlanStaleChain: a stored chain whose head is not the manifest's is
// not trusted: the chain is read from disk; if that fails, nothing is
// junk (a page never durable has no junk either).
func TestPlanStaleChain(t *testing.T) {
	walked := 0
	disk := Chain{{160, 40, nil}, {60, 200, nil}}
	l := NewLedger(func(pid, head uint64) (Chain, error) {
		walked++
		if pid == 7 && head == 160 {
			return disk, nil
		}
		return nil, errors.New("unreadable")
	})
	l.Loaded(7, Chain{{150, 10, nil}, {50, 300, nil}}, l.Epoch()) // stale: the head moved to 160
	st := state(t, map[uint64]uint64{7: 160, 8: 170})
	p := l.Plan([]Change{
		{PID: 7, Written: Chain{{210, 5, nil}}},  // new base
		{PID: 8, Written: Chain{{211, 5, nil}}},  // unreadable old chain
		{PID: 9, Written: Chain{{212, 50, nil}}}, // never durable
	}, st)
	got := stats(p)
	unknown, _ := l.Misses()
	if walked != 2 || p.Junk != 240 || got[1] != 800 || got[2] != 960 || p.Unknown != 1 || unknown != 1 {
		t.Fatalf("walked %d, junk %d, live %v, unknown %d (ledger %d)", walked, p.Junk, got, p.Unknown, unknown)
	}
}

// TestLoadedKeepsNewerChain: a chain read before a publish, or only the
// part of a stub's chain under its written deltas, does not replace a
// stored chain with a newer head; an equal or newer one does. Walks counts
// the chains Chain had to read from disk.
func TestLoadedKeepsNewerChain(t *testing.T) {
	disk := map[uint64]Chain{160: {{160, 40, nil}, {60, 200, nil}}}
	l := NewLedger(func(pid, head uint64) (Chain, error) { return disk[head], nil })
	cur := Chain{{160, 40, nil}, {60, 200, nil}}
	l.Loaded(7, cur, l.Epoch())
	l.Loaded(7, Chain{{60, 200, nil}}, l.Epoch()) // a suffix: older head
	if c, _ := l.Stored(7); c.Head() != 160 {
		t.Fatalf("stored head %d after an older chain was loaded, want 160", c.Head())
	}
	if c, err := l.Chain(7, 160); err != nil || len(c) != 2 || l.Walks() != 0 {
		t.Fatalf("Chain = %v, %v after %d walks; want the stored chain", c, err, l.Walks())
	}
	newer := Chain{{170, 30, nil}, {160, 40, nil}, {60, 200, nil}}
	l.Loaded(7, newer, l.Epoch())
	if c, _ := l.Stored(7); c.Head() != 170 {
		t.Fatalf("stored head %d after a newer chain was loaded, want 170", c.Head())
	}
	// The manifest's head is 160 again only in a test: the stored chain
	// does not match it, so Chain reads it.
	if c, err := l.Chain(7, 160); err != nil || c.Head() != 160 || l.Walks() != 1 {
		t.Fatalf("Chain = %v, %v after %d walks; want the disk's after one", c, err, l.Walks())
	}
}

// TestPlanClampsLive: accounting never drives a file's live bytes below
// zero (the manifest would reject the publish).
func TestPlanClampsLive(t *testing.T) {
	l := NewLedger(noWalk)
	l.Loaded(7, Chain{{50, 5000, nil}}, l.Epoch())
	p := l.Plan([]Change{{PID: 7, Removed: true}}, state(t, map[uint64]uint64{7: 50}))
	if got := stats(p); got[1] != 0 {
		t.Fatalf("live %v, want file 1 at 0", got)
	}
}

func TestChainContains(t *testing.T) {
	c := Chain{{90, 1, nil}, {40, 1, nil}, {7, 1, nil}}
	for a, want := range map[uint64]bool{90: true, 40: true, 7: true, 8: false, 91: false, 1: false} {
		if c.Contains(a) != want {
			t.Errorf("Contains(%d) = %v", a, !want)
		}
	}
}

// TestPlanBlobs: a blob becomes junk when no frame of the page's new chain
// references it; one the new base reuses stays live; a removed page's
// blobs are all junk.
func TestPlanBlobs(t *testing.T) {
	b90 := Blob{Addr: 90, Size: 100, Len: 52, ID: 1}
	b95 := Blob{Addr: 95, Size: 50, Len: 2, ID: 2}
	// Page 7: base 50 referencing blob 95, delta 150 referencing blob 90.
	old := Chain{{150, 10, []Blob{b90}}, {120, 20, nil}, {50, 300, []Blob{b95}}}
	cases := []struct {
		name string
		ch   Change
		live map[manifest.FileID]int64
		junk int64
	}{
		{"new base reuses blob 95, drops blob 90", Change{PID: 7, Written: Chain{{210, 40, []Blob{b95}}}},
			map[manifest.FileID]int64{1: 600, 2: 970}, 430},
		{"new base reuses both", Change{PID: 7, Written: Chain{{210, 40, []Blob{b90, b95}}}},
			map[manifest.FileID]int64{1: 700, 2: 970}, 330},
		{"new deltas on top keep every blob", Change{PID: 7, Written: Chain{{210, 5, nil}}, Keep: 150},
			map[manifest.FileID]int64{}, 0},
		{"removed: every blob is junk", Change{PID: 7, Removed: true},
			map[manifest.FileID]int64{1: 550, 2: 970}, 480},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := NewLedger(noWalk)
			l.Loaded(7, old, l.Epoch())
			p := l.Plan([]Change{c.ch}, state(t, map[uint64]uint64{7: 150}))
			got := stats(p)
			if len(got) != len(c.live) || p.Junk != c.junk {
				t.Fatalf("live %v junk %d, want %v and %d", got, p.Junk, c.live, c.junk)
			}
			for id, v := range c.live {
				if got[id] != v {
					t.Fatalf("file %d live %d, want %d", id, got[id], v)
				}
			}
		})
	}
}

// TestPlanSharedBlob: a blob that two frames of a chain reference (a
// consolidated base reusing a delta's blob, both still in the chain) is
// listed once and counted as junk once.
func TestPlanSharedBlob(t *testing.T) {
	b90 := Blob{Addr: 90, Size: 100, Len: 52, ID: 1}
	b95 := Blob{Addr: 95, Size: 50, Len: 2, ID: 2}
	old := Chain{{150, 10, []Blob{b95, b90}}, {50, 300, []Blob{b95}}}
	if got := old.Blobs(); !slices.Equal(got, []Blob{b90, b95}) {
		t.Fatalf("Blobs() = %v, want each blob once in address order", got)
	}
	l := NewLedger(noWalk)
	l.Loaded(7, old, l.Epoch())
	p := l.Plan([]Change{{PID: 7, Removed: true}}, state(t, map[uint64]uint64{7: 150}))
	if p.Junk != 10+300+100+50 {
		t.Fatalf("junk %d, want %d", p.Junk, 10+300+100+50)
	}
	// The new base keeps blob 95: only 90 and the old frames are junk.
	l = NewLedger(noWalk)
	l.Loaded(7, old, l.Epoch())
	p = l.Plan([]Change{{PID: 7, Written: Chain{{210, 40, []Blob{b95}}}}}, state(t, map[uint64]uint64{7: 150}))
	if p.Junk != 10+300+100 {
		t.Fatalf("junk %d, want %d", p.Junk, 10+300+100)
	}
}

// TestLedgerRewriteEpoch: a consolidating rewrite keeps a chain's head, so
// the epoch decides. A load that read across the rewrite's commit is
// dropped and asked to read again; the stored chain of a resident page
// becomes the consolidated one; a page not in memory stays unknown.
func TestLedgerRewriteEpoch(t *testing.T) {
	l := NewLedger(noWalk)
	old := Chain{{150, 10, nil}, {120, 20, nil}, {50, 300, nil}}
	merged := Chain{{150, 200, nil}}

	before := l.Epoch() // a load of page 7 starts before the rewrite
	l.Loaded(8, Chain{{160, 10, nil}, {60, 30, nil}}, l.Epoch())
	l.rewriting()
	during := l.Epoch() // ... and one during its commit
	if !l.Moved(before) || !l.Moved(during) {
		t.Fatal("a commit in flight does not move the epoch")
	}
	l.Rewritten(map[uint64]Chain{8: {{160, 35, nil}}, 9: {{170, 5, nil}}})
	after := l.Epoch()
	l.Loaded(7, old, before)
	l.Loaded(7, old, during)
	if _, ok := l.chains.Load(7); ok || !l.Moved(before) || !l.Moved(during) || l.Moved(after) {
		t.Fatalf("a load across the rewrite was kept (moved: %v %v %v)", l.Moved(before), l.Moved(during), l.Moved(after))
	}
	if c, _ := l.chains.Load(8); !equalChains(c, Chain{{160, 35, nil}}) {
		t.Fatalf("page 8's chain %v, want the consolidated one", c)
	}
	if _, ok := l.chains.Load(9); ok {
		t.Fatal("the rewrite stored the chain of a page the ledger did not hold")
	}

	// A chain stored with another head is left alone; a failed commit
	// (nil chains) changes nothing but the epoch.
	l.Loaded(7, Chain{{180, 5, nil}, {150, 10, nil}}, after)
	l.rewriting()
	l.Rewritten(map[uint64]Chain{7: merged})
	l.rewriting()
	l.Rewritten(nil)
	if c, _ := l.chains.Load(7); c.Head() != 180 || l.Moved(l.Epoch()) {
		t.Fatalf("page 7's chain %v, epoch %d", c, l.Epoch())
	}
}
