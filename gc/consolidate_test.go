package gc

import (
	"testing"

	"github.com/bwkv/bwkv/manifest"
)

// TestApplyMerges: the top of a merged chain is written as its base, the
// victim frames below it are dropped, and the frames below it in other
// files are junk there; frames of other pages are copied.
func TestApplyMerges(t *testing.T) {
	// Page 7: deltas 150 (file 3, not a victim), 120 (file 2), 90 (file
	// 1), 60 (file 3), base 50 (file 1). Victims: files 1 and 2.
	m := &merge{
		pid:   7,
		above: Chain{{150, 10, nil}},
		chain: Chain{{120, 20, nil}, {90, 30, nil}, {60, 40, nil}, {50, 300, nil}},
		files: []manifest.FileID{2, 1, 3, 1},
		raw:   make([]byte, 77),
	}
	live := []frameAt{{addr: 50, file: 1}, {addr: 70, file: 1}, {addr: 90, file: 1}, {addr: 120, file: 2}}
	victim := func(id manifest.FileID) bool { return id == 1 || id == 2 }
	out, junk := applyMerges(live, []*merge{m}, victim)
	if len(out) != 2 || out[0].addr != 70 || out[0].merge != nil || out[1].addr != 120 || out[1].merge != m {
		t.Fatalf("frames to write %+v", out)
	}
	if len(junk) != 1 || junk[3] != 40 {
		t.Fatalf("junk %v, want 40 bytes in file 3", junk)
	}
	if c := m.newChain(); !equalChains(c, Chain{{150, 10, nil}, {120, 77, nil}}) {
		t.Fatalf("new chain %v", c)
	}
	if out, junk := applyMerges(live, nil, victim); len(out) != len(live) || junk != nil {
		t.Fatalf("no merge: %v, %v", out, junk)
	}
}
