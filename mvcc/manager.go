package mvcc

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
)

// State is a transaction's status.
type State uint32

// Transaction states.
const (
	Active State = iota
	Committing
	Committed
	Aborted
	// InDoubt: the commit record's fsync failed. Invisible until reopen.
	InDoubt
)

// Txn is a transaction's status record, shared by the owner and every
// reader that meets one of its versions.
type Txn struct {
	// ID is the txid and start timestamp.
	ID uint64
	// began is the wall-clock start (Unix nanoseconds, from the
	// registry's clock: Registry.Now), for Stats' oldest-txn age.
	began int64

	mu       sync.Mutex // held across the commit_ts draw-and-publish step; guards ended and done
	state    atomic.Uint32
	commitTS atomic.Uint64
	// doneTS is drawn after an aborted txn's last compensation; the txn
	// retires once the watermark passes it and its end record (at
	// endLSN+1, 0 meaning none) is durable. 0: not finished.
	doneTS atomic.Uint64
	endLSN atomic.Uint64

	// Reg is the txn's registry slot (its start timestamp).
	Reg Reg

	// ended is set, and done (made by the first waiter, so a txn nobody
	// waits for allocates nothing) closed, when the txn reaches a final
	// state: committed, aborted with its compensations installed, or in
	// doubt. Guarded by mu.
	ended bool
	done  chan struct{}
	// waitingFor is the txn this one waits for (nil: none): the edges of
	// the wait-for graph that deadlock detection walks (wait.go).
	waitingFor atomic.Pointer[Txn]
}

// State returns the txn's current state.
func (t *Txn) State() State { return State(t.state.Load()) }

// Manager owns the oracle, the status table, the registry and retirement.
// All methods are safe for concurrent use.
type Manager struct {
	ts  atomic.Uint64
	low atomic.Uint64 // lowest unretired txid: every txid below is retired

	status *xsync.MapOf[uint64, *Txn]
	reg    *Registry

	qmu   sync.Mutex // guards queue; Begin draws the txid under it
	queue []*Txn     // unretired txns in txid order; qhead indexes the first
	qhead int

	retireMu sync.Mutex // one retirement pass at a time (TryLock)

	// durable reports the log position below which every record is
	// durable (nil: everything is).
	durable func() uint64
}

// NewManager returns a manager whose oracle starts at oracle; every txid
// below oracle+1 counts as retired (after recovery nothing older is live).
func NewManager(oracle uint64, durable func() uint64) *Manager {
	m := &Manager{
		status:  xsync.NewMapOf[uint64, *Txn](),
		reg:     NewRegistry(),
		durable: durable,
	}
	m.ts.Store(oracle)
	m.low.Store(oracle + 1)
	return m
}

// Now returns the oracle's current value (a snapshot's start timestamp).
func (m *Manager) Now() uint64 { return m.ts.Load() }

// Low returns the lowest unretired txid.
func (m *Manager) Low() uint64 { return m.low.Load() }

// Registry returns the snapshot registry.
func (m *Manager) Registry() *Registry { return m.reg }

// AdvanceTo raises the oracle to at least v (recovery).
func (m *Manager) AdvanceTo(v uint64) {
	for {
		cur := m.ts.Load()
		if cur >= v || m.ts.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Begin registers and returns a new active txn.
func (m *Manager) Begin() *Txn {
	now := m.reg.Now()
	t := &Txn{began: now}
	m.reg.RegisterAt(&t.Reg, m.ts.Load(), now)
	m.qmu.Lock()
	t.ID = m.ts.Add(1)
	m.status.Store(t.ID, t)
	m.queue = append(m.queue, t)
	m.qmu.Unlock()
	m.reg.Settle(&t.Reg, t.ID)
	return t
}

// RegisterSnapshot registers a snapshot reader in g and returns its start
// timestamp: the registration (a lower bound) precedes the sample, so the
// watermark never passes the snapshot (package doc), and then the slot is
// settled to the exact start for consolidation's retention. O(1).
func (m *Manager) RegisterSnapshot(g *Reg) uint64 {
	m.reg.Register(g, m.ts.Load())
	start := m.ts.Load()
	m.reg.Settle(g, start)
	return start
}

// CommitTS returns the commit timestamp of txid if it is an unretired
// committed txn; false for any other state (active, committing, aborted,
// in doubt, or not in the status table) — consolidation keeps those
// versions (node.Retention).
func (m *Manager) CommitTS(id uint64) (uint64, bool) {
	t, ok := m.status.Load(id)
	if !ok || State(t.state.Load()) != Committed {
		return 0, false
	}
	return t.commitTS.Load(), true
}

// RolledBack reports whether an unretired txn has aborted with every
// compensation installed (FinishAbort ran): consolidation may then drop
// its versions with their CLRs (node.Retention) before it retires, which
// a long-held reader can postpone indefinitely. O(1).
func (m *Manager) RolledBack(id uint64) bool {
	t, ok := m.status.Load(id)
	return ok && State(t.state.Load()) == Aborted && t.doneTS.Load() != 0
}

// Readers returns the start timestamps of every registered reader,
// sorted, and a bound p: a reader registered but not settled, or one that
// registers during the call, may start anywhere at or above p, so
// consolidation keeps every committed version above p and the newest at
// or below it (node.Retention). p is the oracle read before the registry
// pass (any reader the pass misses stores its slot later and samples its
// start after that), lowered to the smallest provisional bound.
func (m *Manager) Readers(dst []uint64) ([]uint64, uint64) {
	t0 := m.ts.Load()
	dst, p := m.reg.Starts(dst[:0], t0)
	slices.Sort(dst)
	return slices.Compact(dst), p
}

// Lookup returns the status record of an unretired txn.
func (m *Manager) Lookup(id uint64) (*Txn, bool) { return m.status.Load(id) }

// SetCommitting marks t as committing (its commit record is being logged).
func (m *Manager) SetCommitting(t *Txn) { t.state.Store(uint32(Committing)) }

// Commit draws commit_ts and publishes committed in one step under t's
// status lock, then releases t's registration.
func (m *Manager) Commit(t *Txn) uint64 {
	t.mu.Lock()
	c := m.ts.Add(1)
	t.commitTS.Store(c)
	t.state.Store(uint32(Committed))
	t.endLocked()
	t.mu.Unlock()
	m.reg.Unregister(&t.Reg)
	return c
}

// SetInDoubt marks a txn whose commit record's fsync failed.
func (m *Manager) SetInDoubt(t *Txn) {
	t.mu.Lock()
	t.state.Store(uint32(InDoubt))
	t.endLocked()
	t.mu.Unlock()
	m.reg.Unregister(&t.Reg)
}

// SetAborted marks t aborted: from now on its versions are invisible and
// ignored by conflict checks. Call before installing compensations.
func (m *Manager) SetAborted(t *Txn) { t.state.Store(uint32(Aborted)) }

// FinishAbort records that every compensation of t is installed and its end
// record ends at log position endEnd (0: no record was logged), and
// releases its registration. t retires once that position is durable.
func (m *Manager) FinishAbort(t *Txn, endEnd uint64) {
	t.endLSN.Store(endEnd)
	t.doneTS.Store(m.ts.Add(1))
	t.mu.Lock()
	t.endLocked()
	t.mu.Unlock()
	m.reg.Unregister(&t.Reg)
}

// visible is the visibility rule for a reader with txid me (0: none) and
// start timestamp start.
func (m *Manager) visible(id, me, start uint64) bool {
	if id == me || id < m.low.Load() {
		return true
	}
	t, ok := m.status.Load(id)
	if !ok {
		return true // retired since we loaded low
	}
	switch State(t.state.Load()) {
	case Committed:
		return t.commitTS.Load() <= start
	case Committing:
		t.mu.Lock()
		st, c := State(t.state.Load()), t.commitTS.Load()
		t.mu.Unlock()
		return st == Committed && c <= start
	default:
		return false
	}
}

// Check is WriteCheck's verdict on one version of a key.
type Check int

// WriteCheck verdicts.
const (
	// CheckOK: the version is committed before the writer's start (or its
	// own): the write may proceed.
	CheckOK Check = iota
	// CheckSkip: the version belongs to an aborted txn; the caller looks
	// at the next older one.
	CheckSkip
	// CheckConflict: first committer wins refuses the write (the version
	// committed after the writer's start, or its txn is in doubt and
	// never ends before reopen).
	CheckConflict
	// CheckWait: the version belongs to another active or committing txn;
	// the writer waits for it to end (WaitFor) and checks again.
	CheckWait
)

// WriteCheck classifies the newest remaining version (written by id) of a
// key that txn me (started at start) wants to write. For CheckWait it also
// returns the holder's status record.
func (m *Manager) WriteCheck(id, me, start uint64) (Check, *Txn) {
	if id == me || id < m.low.Load() {
		return CheckOK, nil
	}
	t, ok := m.status.Load(id)
	if !ok {
		return CheckOK, nil
	}
	switch State(t.state.Load()) {
	case Aborted:
		return CheckSkip, nil
	case Committed:
		if t.commitTS.Load() > start {
			return CheckConflict, nil
		}
		return CheckOK, nil
	case Active, Committing:
		// A committing txn ends within its commit's fsync; waiting lets
		// a writer that does not conflict with it (a blind write) go on.
		return CheckWait, t
	default: // in doubt: it never ends before reopen
		return CheckConflict, nil
	}
}

// Retire retires txns from the head of the queue while they qualify and
// returns how many it retired. It never blocks: a concurrent pass wins.
func (m *Manager) Retire() int {
	if !m.retireMu.TryLock() {
		return 0
	}
	defer m.retireMu.Unlock()
	t0 := m.ts.Load()
	w := m.reg.Min(t0)
	durable := ^uint64(0)
	if m.durable != nil {
		durable = m.durable()
	}
	n := 0
	for {
		m.qmu.Lock()
		if m.qhead == len(m.queue) {
			m.qmu.Unlock()
			break
		}
		t := m.queue[m.qhead]
		m.qmu.Unlock()
		if !retirable(t, w, durable) {
			break
		}
		m.qmu.Lock()
		m.queue[m.qhead] = nil
		m.qhead++
		next := t.ID + 1
		if m.qhead < len(m.queue) {
			next = m.queue[m.qhead].ID
		} else {
			m.queue = m.queue[:0]
			m.qhead = 0
		}
		if m.qhead > 1024 && 2*m.qhead > len(m.queue) {
			k := copy(m.queue, m.queue[m.qhead:])
			clear(m.queue[k:])
			m.queue = m.queue[:k]
			m.qhead = 0
		}
		// low moves before the status entry goes, so a reader that misses
		// the entry treats the txn as retired.
		if next > m.low.Load() {
			m.low.Store(next)
		}
		m.qmu.Unlock()
		m.status.Delete(t.ID)
		n++
	}
	return n
}

func retirable(t *Txn, w, durable uint64) bool {
	switch State(t.state.Load()) {
	case Committed:
		// <=: every reader's start is >= W, and commit_ts <= start is
		// visible. (With <, the newest commit of a database that stopped
		// writing would never retire, and every page it wrote would
		// keep costing readers per-entry visibility work.)
		return t.commitTS.Load() <= w
	case Aborted:
		// d was drawn after the last compensation was installed: a
		// reader whose start is at or above it loads pages with the
		// CLRs, and one below it holds W below d.
		d := t.doneTS.Load()
		return d != 0 && d <= w && t.endLSN.Load() <= durable
	default:
		return false
	}
}

// Oldest returns the start time of the oldest unretired active txn (zero if
// none).
func (m *Manager) Oldest() time.Time {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	for _, t := range m.queue[m.qhead:] {
		if s := t.State(); s == Active || s == Committing {
			return time.Unix(0, t.began)
		}
	}
	return time.Time{}
}

// Reader is a visibility view for one snapshot or txn. It implements
// node.Visibility. The zero value is unusable; Init it.
type Reader struct {
	m     *Manager
	me    uint64
	start uint64
}

// Init sets the reader's manager, own txid (0 for a snapshot) and start.
func (r *Reader) Init(m *Manager, me, start uint64) { r.m, r.me, r.start = m, me, start }

// Low implements node.Visibility: versions of txids below it are retired.
func (r *Reader) Low() uint64 { return r.m.low.Load() }

// Visible implements node.Visibility.
func (r *Reader) Visible(id uint64) bool { return r.m.visible(id, r.me, r.start) }

// RetireAll retires every txn at once (after recovery nothing is live):
// low moves past the oracle.
func (m *Manager) RetireAll() {
	m.qmu.Lock()
	defer m.qmu.Unlock()
	for _, t := range m.queue[m.qhead:] {
		m.status.Delete(t.ID)
	}
	m.queue, m.qhead = nil, 0
	m.low.Store(m.ts.Load() + 1)
}

// Start returns the reader's start timestamp.
func (r *Reader) Start() uint64 { return r.start }
