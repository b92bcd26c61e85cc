package vfs

import (
	"maps"
	"math/rand/v2"
	"slices"
)

// CrashOptions chooses how much unsynced data a CrashClone keeps. The zero
// value keeps none: the strictest power loss.
type CrashOptions struct {
	// KeepUnsynced, in [0, 1], is the probability that each unsynced write
	// or truncate of a file survives. It is drawn in the order the changes
	// were made and the first loss drops every later change of that file,
	// so what survives is a prefix: 0 keeps none, 1 keeps all.
	KeepUnsynced float64
	// TornLastWrite cuts the last surviving unsynced write of each file (if
	// it is a write) to a random strict prefix, possibly empty, as a write
	// interrupted midway would leave it.
	TornLastWrite bool
	// Seed makes the random choices; the same state and options give the
	// same clone.
	Seed int64
}

// CrashClone returns a new MemFS holding what a power loss at this moment
// would leave:
//
//   - the directory tree as of each directory's last SyncDir, walked from
//     the root: an entry created, renamed or removed since its directory's
//     last SyncDir is not there (a renamed file is back under its old name
//     if that entry was synced; a file created and data-synced whose name
//     was never synced is gone), and a directory whose own entry was never
//     synced is gone with everything below it;
//   - for each file in that tree, the contents as of its last File.Sync,
//     followed by a prefix of its unsynced writes and truncates as o
//     chooses.
//
// If a cross-directory rename left the same file under two synced names,
// both names share it in the clone (as a hard link); a directory reached
// twice that way keeps only the name met first in sorted order.
//
// The clone is fully synced, unlocked, has no hook and an operation count
// of zero; it shares no memory with m. CrashClone is safe to call
// concurrently with other operations and from a hook set with SetHook.
func (m *MemFS) CrashClone(o CrashOptions) *MemFS {
	m.mu.RLock()
	defer m.mu.RUnlock()
	c := cloner{
		o:    o,
		rng:  rand.New(rand.NewPCG(uint64(o.Seed), 0x9e3779b97f4a7c15)),
		seen: map[*memNode]*memNode{},
	}
	return &MemFS{root: c.dir(m.root)}
}

// cloner walks the synced tree in sorted order, so that with a fixed seed
// the random draws land on the same files every time.
type cloner struct {
	o    CrashOptions
	rng  *rand.Rand
	seen map[*memNode]*memNode // original -> clone, for shared files
}

func (c *cloner) dir(d *memNode) *memNode {
	nd := newMemDir(d.mode)
	c.seen[d] = nd
	for _, name := range slices.Sorted(maps.Keys(d.syncedChildren)) {
		child := d.syncedChildren[name]
		if child.isDir() {
			if c.seen[child] != nil {
				continue // keeps the tree a tree; see CrashClone
			}
			nd.children[name] = c.dir(child)
		} else {
			nd.children[name] = c.file(child)
		}
	}
	nd.syncedChildren = maps.Clone(nd.children)
	return nd
}

func (c *cloner) file(f *memNode) *memNode {
	if nf := c.seen[f]; nf != nil {
		return nf
	}
	data := slices.Clone(f.synced)
	keep := 0
	for keep < len(f.pending) && c.rng.Float64() < c.o.KeepUnsynced {
		keep++
	}
	for i, w := range f.pending[:keep] {
		if i == keep-1 && c.o.TornLastWrite && !w.trunc {
			w.data = w.data[:c.rng.IntN(len(w.data))] // write records are never empty
		}
		data = w.apply(data)
	}
	nf := &memNode{mode: f.mode, data: data, synced: slices.Clone(data)}
	c.seen[f] = nf
	return nf
}
