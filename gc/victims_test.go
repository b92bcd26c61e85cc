package gc

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/pool"
)

// listFiles serves victimFrames its victims' frame lists (the other
// methods are not called).
type listFiles struct {
	Files
	m map[manifest.FileID][]pool.PageFrame
}

func (l listFiles) Frames(id manifest.FileID) ([]pool.PageFrame, error) {
	f, ok := l.m[id]
	if !ok {
		return nil, errors.New("no such file")
	}
	return f, nil
}

// TestVictimFrames merges the frame lists of victims whose address ranges
// interleave (a GC output holds frames of several older files): every
// frame comes out once, in ascending address order, with its own file,
// page and length; a list out of order (not a pool file's) is sorted
// first; a file that cannot list its frames fails the call.
func TestVictimFrames(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{0, 1, 2, 7, 40} {
		files := listFiles{m: map[manifest.FileID][]pool.PageFrame{}}
		var victims []manifest.FileMeta
		want := map[uint64]victimFrame{}
		addrs := rng.Perm(k * 50)
		for i := range k {
			id := manifest.FileID(10 + i)
			victims = append(victims, manifest.FileMeta{ID: id})
			n := rng.IntN(50)
			var l []pool.PageFrame
			for _, a := range addrs[i*50 : i*50+n] {
				f := pool.PageFrame{Addr: uint64(a) + 1, PID: uint64(rng.IntN(9) + 1), Len: rng.IntN(4096) + 1}
				l = append(l, f)
				want[f.Addr] = victimFrame{frameAt{addr: f.Addr, file: id}, f.PID, f.Len}
			}
			if i%3 != 2 {
				slices.SortFunc(l, func(a, b pool.PageFrame) int { return int(a.Addr) - int(b.Addr) })
			}
			files.m[id] = l
		}
		c := &Collector{env: &Env{Files: files}}
		got, err := c.victimFrames(victims)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d victims: %d frames, want %d", k, len(got), len(want))
		}
		for i, f := range got {
			if i > 0 && f.addr <= got[i-1].addr {
				t.Fatalf("%d victims: frame %d at %d after %d", k, i, f.addr, got[i-1].addr)
			}
			if f != want[f.addr] {
				t.Fatalf("%d victims: frame %+v, want %+v", k, f, want[f.addr])
			}
		}
	}
	c := &Collector{env: &Env{Files: listFiles{m: nil}}}
	if _, err := c.victimFrames([]manifest.FileMeta{{ID: 3}}); err == nil {
		t.Fatal("a file that cannot list its frames did not fail the call")
	}
}

// BenchmarkVictimFrames lists 8 victims of 8192 frames each whose
// addresses interleave.
func BenchmarkVictimFrames(b *testing.B) {
	files := listFiles{m: map[manifest.FileID][]pool.PageFrame{}}
	var victims []manifest.FileMeta
	for i := range 8 {
		id := manifest.FileID(i + 1)
		victims = append(victims, manifest.FileMeta{ID: id})
		l := make([]pool.PageFrame, 8192)
		for j := range l {
			l[j] = pool.PageFrame{Addr: uint64(j*8 + i + 1), PID: uint64(j), Len: 1100}
		}
		files.m[id] = l
	}
	c := &Collector{env: &Env{Files: files}}
	for b.Loop() {
		if _, err := c.victimFrames(victims); err != nil {
			b.Fatal(err)
		}
	}
}
