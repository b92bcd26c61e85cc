package pool

import (
	"fmt"
	"sync"
)

// Files is a bounded cache of open data files with reference-counted
// handles, like Pebble's table cache. A reader Acquires a handle, reads
// frames through it and Releases it; while it holds the handle the file
// stays open, whatever the bound. Unreferenced open files sit on an LRU
// list, and when more than Max files are open the least recently used
// unreferenced ones are closed (they reopen, footer and table read again,
// on their next Acquire). The bound can be exceeded only by files that
// readers hold at the same time, so open descriptors stay at most
// max(Max, concurrent readers).
//
// Retire serves the data-file GC (gc package doc): a retired file gets no new handle
// (Acquire returns an error wrapping ErrRetired, and the caller re-reads
// its address map) and is closed by whoever drops its last handle; the
// channel Retire returns is closed then, and only then may the file be
// unlinked.
//
// All methods are safe for concurrent use. One mutex guards the table;
// opening a file (two reads: footer and table) runs outside it, so a slow
// open does not hold up readers of other files.
type Files struct {
	open func(id uint64) (*File, error)
	max  int

	mu sync.Mutex
	// handles maps each open (or opening) file to its handle. Guarded by mu.
	handles map[uint64]*Handle
	// lru is a sentinel of the circular list of unreferenced open handles,
	// most recently released first. Guarded by mu.
	lru Handle
	// retired maps a retired file to the channel closed once it is
	// closed. Guarded by mu.
	retired map[uint64]chan struct{}
	// opens counts files opened, for tests and stats. Guarded by mu.
	opens uint64
}

// Handle is one open data file in a Files cache. Its File is valid from
// Acquire until the matching Release.
type Handle struct {
	f  *File
	id uint64
	// refs counts holders; ready is closed once the open finished (err
	// set on failure). Guarded by Files.mu, except that ready and err are
	// written once before ready is closed.
	refs       int
	ready      chan struct{}
	err        error
	prev, next *Handle // LRU links while refs == 0; guarded by Files.mu
}

// File returns the open file. Valid until the handle is released.
func (h *Handle) File() *File { return h.f }

// NewFiles returns a cache that opens file id with open and keeps at most
// max files open while no reader holds them (max < 1 means 1).
func NewFiles(max int, open func(id uint64) (*File, error)) *Files {
	if max < 1 {
		max = 1
	}
	c := &Files{open: open, max: max, handles: map[uint64]*Handle{}, retired: map[uint64]chan struct{}{}}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// Acquire returns a handle on file id, opening it if needed. The caller
// must Release it. A retired file returns an error wrapping ErrRetired.
// O(1) besides the open itself.
func (c *Files) Acquire(id uint64) (*Handle, error) {
	c.mu.Lock()
	if _, ok := c.retired[id]; ok {
		c.mu.Unlock()
		return nil, fmt.Errorf("pool: data file %d: %w", id, ErrRetired)
	}
	h := c.handles[id]
	if h != nil {
		if h.refs == 0 {
			c.unlink(h)
		}
		h.refs++
		c.mu.Unlock()
		<-h.ready
		if h.err != nil {
			err := h.err
			c.Release(h)
			return nil, err
		}
		return h, nil
	}
	h = &Handle{id: id, refs: 1, ready: make(chan struct{})}
	c.handles[id] = h
	c.opens++
	c.mu.Unlock()

	h.f, h.err = c.open(id)
	close(h.ready)
	if h.err != nil {
		err := h.err
		c.Release(h)
		return nil, err
	}
	// Opening may have taken the count over the bound while this handle
	// was referenced; trim now that others may have gone idle.
	c.mu.Lock()
	c.trim()
	c.mu.Unlock()
	return h, nil
}

// Release drops a handle taken by Acquire. The last handle of a retired
// file (or of a file whose open failed) closes it; otherwise the file goes
// to the front of the LRU list and the least recently used idle files are
// closed while more than the bound are open. O(1) amortized.
func (c *Files) Release(h *Handle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h.refs--
	if h.refs > 0 {
		return
	}
	if h.refs < 0 {
		panic("pool: Files.Release of a handle with no references")
	}
	if ch, ok := c.retired[h.id]; ok || h.err != nil {
		c.drop(h)
		if ok {
			close(ch)
		}
		return
	}
	// Most recently used first.
	h.prev, h.next = &c.lru, c.lru.next
	h.next.prev = h
	c.lru.next = h
	c.trim()
}

// trim closes idle files, least recently used first, while more than max
// are open. Caller holds mu.
func (c *Files) trim() {
	for len(c.handles) > c.max && c.lru.prev != &c.lru {
		h := c.lru.prev
		c.unlink(h)
		c.drop(h)
	}
}

// unlink takes an idle handle off the LRU list. Caller holds mu.
func (c *Files) unlink(h *Handle) {
	h.prev.next = h.next
	h.next.prev = h.prev
	h.prev, h.next = nil, nil
}

// drop forgets an unreferenced handle and closes its file. Caller holds
// mu; the close is one syscall and must happen before a retired file's
// channel is closed (the GC unlinks it next).
func (c *Files) drop(h *Handle) {
	if c.handles[h.id] == h {
		delete(c.handles, h.id)
	}
	if h.f != nil {
		_ = h.f.Close() // read-only handle: nothing buffered to lose
	}
}

// Retire refuses new handles on file id and returns a channel closed once
// the file is closed: at once if no reader holds it.
func (c *Files) Retire(id uint64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.retired[id]; ok {
		return ch
	}
	ch := make(chan struct{})
	c.retired[id] = ch
	h := c.handles[id]
	switch {
	case h == nil:
		close(ch)
	case h.refs == 0:
		c.unlink(h)
		c.drop(h)
		close(ch)
	}
	return ch
}

// Forget drops the retirement of a file that is gone (unlinked): a late
// Acquire then fails to open it and its caller re-reads the address map.
func (c *Files) Forget(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.retired, id)
}

// Open returns the number of files open now (held or idle).
func (c *Files) Open() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.handles)
}

// Opens returns the number of file opens so far (reopens after an LRU
// close included).
func (c *Files) Opens() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opens
}

// CloseAll closes every idle file. Call it once no reader can hold a
// handle (DB close, after background work stopped); held handles are left
// to their holders.
func (c *Files) CloseAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.lru.prev != &c.lru {
		h := c.lru.prev
		c.unlink(h)
		c.drop(h)
	}
}
