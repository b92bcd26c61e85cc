package gc

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/bwkv/bwkv/delta"
	"github.com/bwkv/bwkv/manifest"
	"github.com/bwkv/bwkv/node"
)

// mergeBytes bounds the encoded consolidated bases one batch holds in
// memory between building them and writing the file; past it, the
// batch's other chains are copied as they are (a later round can
// consolidate them).
const mergeBytes = 16 << 20

// merge is one page's chain from its newest frame in the batch's victims
// (the top; at or below Env.LoadRoot) down to its base, which the rewrite
// replaces by one base frame at the top's address (see the package doc,
// "Consolidation").
type merge struct {
	pid uint64
	// above are the chain's frames newer than the top (copied as they are
	// if in a victim), and chain the top and the frames below it, which
	// the new base replaces.
	above, chain Chain
	// files holds the file of each frame of chain.
	files []manifest.FileID
	// raw is the encoded base frame, blobs the blobs it references.
	raw   []byte
	blobs []Blob
}

// newChain returns the page's durable chain once the rewrite commits.
func (m *merge) newChain() Chain {
	c := make(Chain, 0, len(m.above)+1)
	c = append(c, m.above...)
	return append(c, Extent{Addr: m.chain[0].Addr, Size: uint32(len(m.raw)), Blobs: m.blobs})
}

// merges chooses and builds the consolidations of a batch: each page of
// chains (the pages with live frames in the victims, as liveness read
// them) whose chain from its top (its newest victim frame at or below its
// load root, if it has one) down holds two frames or more. A chain that cannot be read or merged is left out (its frames
// are copied as they are): consolidation only saves space.
func (c *Collector) merges(st View, victims []manifest.FileMeta, chains map[uint64]Chain) []*merge {
	isVictim := make(map[manifest.FileID]bool, len(victims))
	for _, v := range victims {
		isVictim[v.ID] = true
	}
	pids := make([]uint64, 0, len(chains))
	for pid := range chains {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var out []*merge
	held := 0
	var buf []byte
	for _, pid := range pids {
		ch := chains[pid]
		root, pinned := uint64(0), false
		if c.env.LoadRoot != nil {
			root, pinned = c.env.LoadRoot(pid)
		}
		top := -1
		files := make([]manifest.FileID, len(ch))
		for i, e := range ch {
			id, ok := st.FileOf(e.Addr)
			if !ok {
				top = -1
				break
			}
			files[i] = id
			if top < 0 && isVictim[id] && (!pinned || e.Addr <= root) {
				top = i
			}
		}
		if top < 0 || top >= len(ch)-1 {
			continue // no victim frame, or only the base: nothing to merge
		}
		m := &merge{pid: pid, above: ch[:top], chain: ch[top:], files: files[top:]}
		var err error
		buf, err = c.build(m, buf)
		if err != nil {
			c.mergeErrors.Add(1)
			continue
		}
		if held += len(m.raw); held > mergeBytes {
			break
		}
		out = append(out, m)
	}
	return out
}

// build reads m's frames, merges them into one base (the page loader's
// chain on its base, consolidated keeping every version: frames newer
// than the top, on disk or in memory, may hold CLRs masking its versions,
// so pruning it alone would need their view) and encodes it at the
// top's address, keeping blob references as they are. buf is scratch.
func (c *Collector) build(m *merge, buf []byte) ([]byte, error) {
	frames := make([]*delta.Frame, len(m.chain))
	for i, e := range m.chain {
		var err error
		buf, _, err = c.env.Files.ReadRaw(m.files[i], e.Addr, buf[:0])
		if err != nil {
			return buf, err
		}
		fr, err := delta.DecodeFrame(buf)
		if err != nil {
			return buf, fmt.Errorf("gc: frame %d in file %d: %w", e.Addr, m.files[i], err)
		}
		last := i == len(m.chain)-1
		switch {
		case fr.PID != m.pid:
			return buf, fmt.Errorf("gc: frame %d is of page %d, not %d", e.Addr, fr.PID, m.pid)
		case last && (fr.Base == nil || fr.Base.Level != 0):
			return buf, fmt.Errorf("gc: page %d's chain ends at frame %d, a %s frame (level %d)", m.pid, e.Addr, fr.Kind(), level(fr))
		case !last && (fr.Delta == nil || fr.Link != m.chain[i+1].Addr):
			return buf, fmt.Errorf("gc: page %d's frame %d is a %s frame linking to %d, want a delta linking to %d", m.pid, e.Addr, fr.Kind(), fr.Link, m.chain[i+1].Addr)
		}
		frames[i] = fr
	}
	b := frames[len(frames)-1].Base
	p := &node.Page{Base: b}
	for i := len(frames) - 2; i >= 0; i-- {
		p = p.Prepend(frames[i].Delta)
	}
	cs := p.Collect(nil)
	nb := cs.Build(0, cs.Keys(), b.Low, b.High, b.Sibling)
	if want := b.Len() + len(frames) - 1; nb.Len() != want {
		return buf, fmt.Errorf("gc: consolidate page %d: %d versions from a chain of %d", m.pid, nb.Len(), want)
	}
	fr := &delta.Frame{Addr: m.chain[0].Addr, PID: m.pid, LSN: frames[0].LSN, Base: nb}
	if err := fr.Check(); err != nil {
		return buf, fmt.Errorf("gc: consolidate page %d: %w", m.pid, err)
	}
	if c.comp != nil {
		m.raw = c.comp.AppendFrame(nil, fr)
	} else {
		m.raw = delta.AppendFrame(nil, fr)
	}
	for _, r := range fr.BlobRefs() {
		en := fr.EntryAt(r.Index)
		m.blobs = append(m.blobs, Blob{Addr: r.Ref.Addr, Size: uint32(r.Ref.FrameBytes()), Len: r.Ref.Len, CRC: r.Ref.CRC, ID: VersionID(en.Key, en.TxID, en.Seq)})
	}
	return buf, nil
}

func level(fr *delta.Frame) int {
	if fr.Base == nil {
		return 0
	}
	return int(fr.Base.Level)
}

// applyMerges returns the frames to write in place of live (ascending by
// address): a merge's top becomes its base, the victim frames below it
// are dropped. It also returns the bytes the merges make junk in files
// that are not victims (frames below a top that stay where they are).
func applyMerges(live []frameAt, merges []*merge, isVictim func(manifest.FileID) bool) ([]frameAt, map[manifest.FileID]int64) {
	if len(merges) == 0 {
		return live, nil
	}
	top := map[uint64]*merge{}
	drop := map[uint64]bool{}
	junk := map[manifest.FileID]int64{}
	for _, m := range merges {
		top[m.chain[0].Addr] = m
		for i, e := range m.chain[1:] {
			if id := m.files[i+1]; isVictim(id) {
				drop[e.Addr] = true
			} else {
				junk[id] += int64(e.Size)
			}
		}
	}
	out := make([]frameAt, 0, len(live))
	for _, f := range live {
		switch {
		case drop[f.addr]:
		case top[f.addr] != nil:
			f.merge = top[f.addr]
			out = append(out, f)
		default:
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b frameAt) int { return cmp.Compare(a.addr, b.addr) })
	return out, junk
}
