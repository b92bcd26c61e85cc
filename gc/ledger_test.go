package gc

import (
	"errors"
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
	old := Chain{{150, 10}, {120, 20}, {50, 300}}
	cases := []struct {
		name  string
		ch    Change
		live  map[manifest.FileID]int64
		junk  int64
		chain Chain // the page's chain after Apply (nil: forgotten)
	}{
		{"new deltas on top: nothing is junk", Change{PID: 7, Written: Chain{{210, 5}}, Keep: 150},
			map[manifest.FileID]int64{}, 0, Chain{{210, 5}, {150, 10}, {120, 20}, {50, 300}}},
		{"new base: the whole old chain is junk", Change{PID: 7, Written: Chain{{211, 5}, {210, 400}}},
			map[manifest.FileID]int64{1: 700, 2: 970}, 330, Chain{{211, 5}, {210, 400}}},
		{"removed: the whole old chain is junk", Change{PID: 7, Removed: true},
			map[manifest.FileID]int64{1: 700, 2: 970}, 330, nil},
		{"keep an older frame: the newer ones are junk", Change{PID: 7, Written: Chain{{210, 5}}, Keep: 120},
			map[manifest.FileID]int64{2: 990}, 10, Chain{{210, 5}, {120, 20}, {50, 300}}},
		{"keep a frame the chain lacks: nothing counted, page forgotten", Change{PID: 7, Written: Chain{{210, 5}}, Keep: 99},
			map[manifest.FileID]int64{}, 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := NewLedger(noWalk)
			l.Loaded(7, old)
			st := state(t, map[uint64]uint64{7: 150})
			p := l.Plan([]Change{c.ch}, st)
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

func equal(a, b Chain) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPlanStaleChain: a stored chain whose head is not the manifest's is
// not trusted: the chain is read from disk; if that fails, nothing is
// junk (a page never durable has no junk either).
func TestPlanStaleChain(t *testing.T) {
	walked := 0
	disk := Chain{{160, 40}, {60, 200}}
	l := NewLedger(func(pid, head uint64) (Chain, error) {
		walked++
		if pid == 7 && head == 160 {
			return disk, nil
		}
		return nil, errors.New("unreadable")
	})
	l.Loaded(7, Chain{{150, 10}, {50, 300}}) // stale: the head moved to 160
	st := state(t, map[uint64]uint64{7: 160, 8: 170})
	p := l.Plan([]Change{
		{PID: 7, Written: Chain{{210, 5}}},  // new base
		{PID: 8, Written: Chain{{211, 5}}},  // unreadable old chain
		{PID: 9, Written: Chain{{212, 50}}}, // never durable
	}, st)
	got := stats(p)
	if walked != 2 || p.Junk != 240 || got[1] != 800 || got[2] != 960 || p.Unknown != 1 {
		t.Fatalf("walked %d, junk %d, live %v, unknown %d", walked, p.Junk, got, p.Unknown)
	}
}

// TestPlanClampsLive: accounting never drives a file's live bytes below
// zero (the manifest would reject the publish).
func TestPlanClampsLive(t *testing.T) {
	l := NewLedger(noWalk)
	l.Loaded(7, Chain{{50, 5000}})
	p := l.Plan([]Change{{PID: 7, Removed: true}}, state(t, map[uint64]uint64{7: 50}))
	if got := stats(p); got[1] != 0 {
		t.Fatalf("live %v, want file 1 at 0", got)
	}
}

func TestChainContains(t *testing.T) {
	c := Chain{{90, 1}, {40, 1}, {7, 1}}
	for a, want := range map[uint64]bool{90: true, 40: true, 7: true, 8: false, 91: false, 1: false} {
		if c.Contains(a) != want {
			t.Errorf("Contains(%d) = %v", a, !want)
		}
	}
}
