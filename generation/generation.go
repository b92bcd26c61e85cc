package generation

import (
	"sync"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/bwkv/bwkv/node"
	"github.com/bwkv/bwkv/pagetable"
)

// Gen is one generation.
type Gen struct {
	// ID is the generation number (1, 2, ...).
	ID uint64

	mu    sync.Mutex // guards dirty
	dirty []pagetable.PID

	pinned *xsync.MapOf[pagetable.PID, *node.Page]
	// bytes is the frame bytes the generation would write (Bytes),
	// installed the frame bytes installed in it (Installed).
	bytes, installed atomic.Int64
	frames           atomic.Int64

	// start: the addresses above it were drawn in the generation (the
	// last address drawn before it opened).
	start uint64
	// LogStart is the log position at which the generation opened (the
	// previous one's Frontier; the published frontier for the first
	// generation of an Open, set by StartLog): the log it holds is from
	// there to the head.
	LogStart uint64

	// Set by Cut when the generation is sealed.
	Frontier uint64 // log position just past the last record of the generation
	SnapAddr uint64 // the last address drawn in the generation
}

// Bytes returns the frame bytes the generation would write: the bytes of
// the frames installed in it minus those of its frames that a later
// install in it superseded (a consolidation replaces the chain it folds).
// A page rewritten many times in one generation counts about once, as
// its checkpoint writes it once.
func (g *Gen) Bytes() int64 { return g.bytes.Load() }

// Installed returns the frame bytes installed in the generation,
// superseded ones included.
func (g *Gen) Installed() int64 { return g.installed.Load() }

// Frames returns the number of frames installed in the generation.
func (g *Gen) Frames() int64 { return g.frames.Load() }

// Dirty returns the generation's dirty PIDs. Call it only once the
// generation is sealed.
func (g *Gen) Dirty() []pagetable.PID {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.dirty
}

// Pinned returns the page's state at the cut if it changed after the cut.
func (g *Gen) Pinned(pid pagetable.PID) (*node.Page, bool) { return g.pinned.Load(pid) }

func newGen(id, start uint64) *Gen {
	return &Gen{ID: id, start: start, pinned: xsync.NewMapOf[pagetable.PID, *node.Page]()}
}

// Manager owns the gate, the generations and the address counter. All
// methods are safe for concurrent use.
type Manager struct {
	gate   *xsync.RBMutex
	hot    atomic.Pointer[Gen]
	sealed atomic.Pointer[Gen]
	addr   atomic.Uint64 // the last drawn address

	// published is the highest address made durable by a checkpoint:
	// every frame at or below it that a page still reaches is on disk.
	published atomic.Uint64
	// pubGen is the ID of the last published generation.
	pubGen atomic.Uint64
}

// NewManager starts at generation firstGen with lastAddr the last address
// already used (durable, from the manifest).
func NewManager(firstGen, lastAddr uint64) *Manager {
	m := &Manager{gate: xsync.NewRBMutex()}
	m.hot.Store(newGen(firstGen, lastAddr))
	m.addr.Store(lastAddr)
	m.published.Store(lastAddr)
	return m
}

// StartLog sets the hot generation's LogStart: the log position from
// which its log counts. Call it at Open, before any write.
func (m *Manager) StartLog(lsn uint64) { m.hot.Load().LogStart = lsn }

// Enter takes the read side of the cut gate. Never re-entrant.
func (m *Manager) Enter() *xsync.RToken { return m.gate.RLock() }

// Exit releases the read side.
func (m *Manager) Exit(t *xsync.RToken) { m.gate.RUnlock(t) }

// NextAddr draws a logical address. Call it inside the gate, under the
// page lock, so a page's addresses ascend along its chain.
func (m *Manager) NextAddr() uint64 { return m.addr.Add(1) }

// Published returns the highest durable address.
func (m *Manager) Published() uint64 { return m.published.Load() }

// Clean reports whether every frame of the page in slot is durable: it was
// last marked dirty in a published generation (or never since Open). Call
// it under the page lock. O(1).
func (m *Manager) Clean(slot *pagetable.Slot[node.Page]) bool {
	return slot.Stamp.Load() <= m.pubGen.Load()
}

// Hot returns the hot generation.
func (m *Manager) Hot() *Gen { return m.hot.Load() }

// Sealed returns the sealed generation, or nil.
func (m *Manager) Sealed() *Gen { return m.sealed.Load() }

// Touch marks pid dirty in the hot generation and accounts bytes of new
// frames. old is the state being replaced (nil for a new page); replaced
// says the new state does not reach old's frames (a new base: a
// consolidation, split or merge), so those the hot generation installed
// no longer count in its Bytes. Call it inside the gate, under the page
// lock, before publishing the new state. O(1), or O(old's chain) when
// replaced (whose caller just read that chain to build the base).
func (m *Manager) Touch(slot *pagetable.Slot[node.Page], pid pagetable.PID, old *node.Page, frames int, bytes int, replaced bool) *Gen {
	hot := m.hot.Load()
	if st := slot.Stamp.Load(); st != hot.ID {
		if s := m.sealed.Load(); s != nil && st == s.ID && old != nil {
			s.pinned.Store(pid, old)
		}
		slot.Stamp.Store(hot.ID)
		hot.mu.Lock()
		hot.dirty = append(hot.dirty, pid)
		hot.mu.Unlock()
	}
	hot.installed.Add(int64(bytes))
	net := int64(bytes)
	if replaced && old != nil {
		net -= int64(superseded(old, hot.start))
	}
	hot.bytes.Add(net)
	hot.frames.Add(int64(frames))
	return hot
}

// superseded returns the bytes that the frames of state p drawn above
// address start were accounted with when installed: a delta's Size, a
// base's Bytes (tree.publish), a carried base's pending deltas' Sizes.
// Frames at or below start belong to an older generation, which writes
// them (it pinned them if sealed).
func superseded(p *node.Page, start uint64) int {
	n := 0
	for d := p.Head; d != nil && d.Addr > start; d = d.Next {
		n += d.Size()
	}
	if p.Base != nil && p.Base.Addr > start && p.Stub == nil {
		if c := p.Base.Carry(); c != nil {
			// A carried base is never written: its unwritten deltas
			// are (each accounted with its Size).
			ds, _ := c.Unwritten(start)
			for _, d := range ds {
				n += d.Size()
			}
		} else {
			n += p.Base.Bytes()
		}
	}
	return n
}

// Cut seals the hot generation and opens the next one, under the write
// side of the gate. frontier is read inside the exclusive section (the log
// head). It returns nil if a sealed generation still awaits its publish.
func (m *Manager) Cut(frontier func() uint64) *Gen {
	m.gate.Lock()
	defer m.gate.Unlock()
	if m.sealed.Load() != nil {
		return nil
	}
	g := m.hot.Load()
	g.Frontier = frontier()
	g.SnapAddr = m.addr.Load()
	m.sealed.Store(g)
	next := newGen(g.ID+1, g.SnapAddr)
	next.LogStart = g.Frontier
	m.hot.Store(next)
	return g
}

// Publish marks g's frames durable and drops the sealed generation
// (with the states it pinned).
func (m *Manager) Publish(g *Gen) {
	m.published.Store(g.SnapAddr)
	m.pubGen.Store(g.ID)
	m.sealed.CompareAndSwap(g, nil)
}
