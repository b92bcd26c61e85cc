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
	bytes  atomic.Int64
	frames atomic.Int64

	// Set by Cut when the generation is sealed.
	Frontier uint64 // log position just past the last record of the generation
	SnapAddr uint64 // the last address drawn in the generation
}

// Bytes returns the frame bytes installed in the generation.
func (g *Gen) Bytes() int64 { return g.bytes.Load() }

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

func newGen(id uint64) *Gen {
	return &Gen{ID: id, pinned: xsync.NewMapOf[pagetable.PID, *node.Page]()}
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
	m.hot.Store(newGen(firstGen))
	m.addr.Store(lastAddr)
	m.published.Store(lastAddr)
	return m
}

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
// frames. old is the state being replaced (nil for a new page). Call it
// inside the gate, under the page lock, before publishing the new state.
// O(1).
func (m *Manager) Touch(slot *pagetable.Slot[node.Page], pid pagetable.PID, old *node.Page, frames int, bytes int) *Gen {
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
	hot.bytes.Add(int64(bytes))
	hot.frames.Add(int64(frames))
	return hot
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
	m.hot.Store(newGen(g.ID + 1))
	return g
}

// Publish marks g's frames durable and drops the sealed generation
// (with the states it pinned).
func (m *Manager) Publish(g *Gen) {
	m.published.Store(g.SnapAddr)
	m.pubGen.Store(g.ID)
	m.sealed.CompareAndSwap(g, nil)
}
