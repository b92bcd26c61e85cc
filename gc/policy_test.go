package gc

import (
	"slices"
	"testing"

	"github.com/bwkv/bwkv/manifest"
)

func ids(fs []manifest.FileMeta) []manifest.FileID {
	out := make([]manifest.FileID, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func TestChoose(t *testing.T) {
	p := Policy{LiveRatio: 0.5, SpaceAmp: 10, RoundBytes: 1 << 30, FileBytes: 1 << 30}
	files := []manifest.FileMeta{
		{ID: 1, Total: 100, Live: 90},
		{ID: 2, Total: 100, Live: 0},
		{ID: 3, Total: 100, Live: 30},
		{ID: 4, Total: 100, Live: 49},
		{ID: 5, Total: 100, Live: 50},
	}
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{2, 3, 4}) {
		t.Fatalf("by ratio: %v, want [2 3 4]", got)
	}
	if got := ids(Choose(files, p, func(id manifest.FileID) bool { return id == 3 })); !slices.Equal(got, []manifest.FileID{2, 4}) {
		t.Fatalf("with a skip: %v, want [2 4]", got)
	}
	// Space amplification: total 500, live 219 (2.28x). With a 1.3x
	// target the least-live files go until what remains is under it:
	// after 2,3,4 the total is 500-100-70-51 = 279 (1.27x).
	p.SpaceAmp = 1.3
	p.LiveRatio = 0.1
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{2, 3, 4}) {
		t.Fatalf("by amplification: %v, want [2 3 4]", got)
	}
	// A target of 1 still never takes a file at MaxVictimRatio or above.
	p.SpaceAmp = 1
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{2, 3, 4, 5}) {
		t.Fatalf("amplification target 1: %v, want [2 3 4 5]", got)
	}
	// The byte budget stops the round, but one victim always goes.
	p.RoundBytes = 150
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{2}) {
		t.Fatalf("budget 150: %v, want [2]", got)
	}
	p.RoundBytes = 1
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{2}) {
		t.Fatalf("budget 1: %v, want [2]", got)
	}
	// Nothing qualifies.
	if got := Choose([]manifest.FileMeta{{ID: 1, Total: 100, Live: 100}}, Policy{LiveRatio: 0.5, SpaceAmp: 1.25, RoundBytes: 1000}, nil); len(got) != 0 {
		t.Fatalf("a fully live file was chosen: %v", got)
	}
}

func TestBatches(t *testing.T) {
	victims := []manifest.FileMeta{{ID: 1, Live: 0}, {ID: 2, Live: 60}, {ID: 3, Live: 50}, {ID: 4, Live: 200}, {ID: 5, Live: 10}}
	got := Batches(victims, Policy{FileBytes: 100})
	var shape [][]manifest.FileID
	for _, b := range got {
		shape = append(shape, ids(b))
	}
	want := [][]manifest.FileID{{1, 2}, {3}, {4}, {5}}
	if len(shape) != len(want) {
		t.Fatalf("batches %v, want %v", shape, want)
	}
	for i := range want {
		if !slices.Equal(shape[i], want[i]) {
			t.Fatalf("batches %v, want %v", shape, want)
		}
	}
}

// TestChooseMergeSmall: small fully-live files become victims once there
// are MergeSmall of them (oldest first, within the round's budget); large
// or fewer small files are left alone.
func TestChooseMergeSmall(t *testing.T) {
	p := Policy{LiveRatio: 0.5, SpaceAmp: 10, RoundBytes: 1 << 30, FileBytes: 1000, MergeSmall: 3}
	files := []manifest.FileMeta{
		{ID: 1, Total: 900, Live: 900}, // large
		{ID: 5, Total: 100, Live: 100},
		{ID: 3, Total: 200, Live: 200},
		{ID: 4, Total: 100, Live: 20}, // a victim by ratio
		{ID: 2, Total: 240, Live: 240},
	}
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{4, 2, 3, 5}) {
		t.Fatalf("merge: %v, want [4 2 3 5]", got)
	}
	if b := Batches(Choose(files, p, nil), p); len(b) != 1 {
		t.Fatalf("%d batches, want the small files merged into one", len(b))
	}
	p.MergeSmall = 4 // only 3 small files besides the ratio victim
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{4}) {
		t.Fatalf("too few small files: %v, want [4]", got)
	}
	p.MergeSmall, p.RoundBytes = 3, 350 // budget: 4, 2 then stop
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{4, 2}) {
		t.Fatalf("budget: %v, want [4 2]", got)
	}
	p.MergeSmall = 0
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{4}) {
		t.Fatalf("merging off: %v, want [4]", got)
	}
}

// TestChooseBusy: a round run while writes go on (Policy.Busy) takes
// files by ratio below LiveRatio/busyRatioDiv and for the amplification
// only above busySlack x SpaceAmp's slack; files with nothing live always
// go.
func TestChooseBusy(t *testing.T) {
	p := Policy{LiveRatio: 0.5, SpaceAmp: 1.25, RoundBytes: 1 << 30, FileBytes: 1 << 30}
	b := p.Busy()
	if b.LiveRatio != 0.0625 || b.SpaceAmp != 1+busySlack*0.25 || b.RoundBytes != p.RoundBytes || b.FileBytes != p.FileBytes {
		t.Fatalf("Busy() = %+v from %+v", b, p)
	}
	if one := (Policy{LiveRatio: 0.8, SpaceAmp: 1}).Busy(); one.SpaceAmp != 1 || one.LiveRatio != 0.1 {
		t.Fatalf("Busy of a target of 1 = %+v, want SpaceAmp 1, LiveRatio 0.1", one)
	}
	// Total 1000, live 665 (1.50x): within the busy target (2.5), over
	// the settled one (1.25). File 3, 0.2 live, is above the busy ratio
	// (1/16) and below the settled one.
	files := []manifest.FileMeta{
		{ID: 1, Total: 100, Live: 0},
		{ID: 2, Total: 100, Live: 5},
		{ID: 3, Total: 100, Live: 20},
		{ID: 4, Total: 100, Live: 70},
		{ID: 5, Total: 200, Live: 170},
		{ID: 6, Total: 400, Live: 400},
	}
	if got := ids(Choose(files, b, nil)); !slices.Equal(got, []manifest.FileID{1, 2}) {
		t.Fatalf("busy: %v, want [1 2]", got)
	}
	// Settled: 1, 2, 3 by ratio; after them the total is 725 (1.09x), so
	// not 4.
	if got := ids(Choose(files, p, nil)); !slices.Equal(got, []manifest.FileID{1, 2, 3}) {
		t.Fatalf("settled: %v, want [1 2 3]", got)
	}
	// Busy, over its target: live 195 of 1000 (5.13x) takes the
	// least-live files until under 2.5x: 1 (4.62x), 2 (4.13x), then 6 for
	// the amplification alone (0.15 live, above the busy ratio; 2.38x); 3
	// and 5, at 0.2 live, stay.
	files[4].Live, files[5].Live = 40, 60
	if got := ids(Choose(files, b, nil)); !slices.Equal(got, []manifest.FileID{1, 2, 6}) {
		t.Fatalf("busy over target: %v, want [1 2 6]", got)
	}
}
