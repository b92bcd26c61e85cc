package mvcc

import (
	"slices"
	"testing"
	"time"
)

// TestRegistryStarts: a registration is provisional (a lower bound) until
// settled; Starts reports settled starts and the lowest provisional bound,
// Min every registration, overflow registrations included.
func TestRegistryStarts(t *testing.T) {
	r := NewRegistry()
	regs := make([]Reg, len(r.shards)*slotsPerShard+3) // the last 3 overflow
	for i := range regs {
		r.Register(&regs[i], uint64(100+i))
	}
	if _, p := r.Starts(nil, 1<<40); p != 100 {
		t.Fatalf("provisional bound %d, want 100", p)
	}
	for i := range regs {
		r.Settle(&regs[i], uint64(1000+i))
	}
	starts, p := r.Starts(nil, 1<<40)
	slices.Sort(starts)
	if p != 1<<40 || len(starts) != len(regs) || starts[0] != 1000 || starts[len(starts)-1] != uint64(1000+len(regs)-1) {
		t.Fatalf("settled: %d starts [%d..], bound %d", len(starts), starts[0], p)
	}
	if m := r.Min(1 << 40); m != 1000 {
		t.Fatalf("Min = %d, want 1000", m)
	}
	for i := range regs {
		r.Unregister(&regs[i])
	}
	if starts, p := r.Starts(nil, 7); len(starts) != 0 || p != 7 {
		t.Fatalf("after unregister: %v, %d", starts, p)
	}
}

// TestManagerReaders: a txn's registration is settled at its txid, a
// snapshot's at its start; Readers lists them sorted and distinct; a
// committed txn's CommitTS is known until it retires.
func TestManagerReaders(t *testing.T) {
	m := NewManager(10, nil)
	t1 := m.Begin()
	var g1, g2 Reg
	s1 := m.RegisterSnapshot(&g1)
	s2 := m.RegisterSnapshot(&g2)
	starts, p := m.Readers(nil)
	if !slices.Equal(starts, []uint64{t1.ID}) || p < s1 || s1 != s2 || s1 != t1.ID {
		t.Fatalf("readers %v bound %d; txn %d snapshots %d %d", starts, p, t1.ID, s1, s2)
	}
	m.SetCommitting(t1)
	if _, ok := m.CommitTS(t1.ID); ok {
		t.Fatal("committing txn reported committed")
	}
	c := m.Commit(t1)
	if got, ok := m.CommitTS(t1.ID); !ok || got != c {
		t.Fatalf("CommitTS = %d, %v; want %d", got, ok, c)
	}
	m.reg.Unregister(&g1)
	m.reg.Unregister(&g2)
	m.Begin() // moves the watermark past t1's commit
	m.Retire()
	if _, ok := m.CommitTS(t1.ID); ok {
		t.Fatal("retired txn still has a commit timestamp")
	}
}

// TestRegistryTick: before any Tick a registration records the clock;
// after one it records the ticked time (no clock read), overflow
// registrations included, and OldestSince reports the oldest; a
// transaction's start (Manager.Oldest) is read from the same clock.
func TestRegistryTick(t *testing.T) {
	r := NewRegistry()
	before := time.Now()
	var first Reg
	r.Register(&first, 1)
	if got := r.OldestSince(); got.Before(before.Add(-time.Second)) || got.After(time.Now()) {
		t.Fatalf("unticked registration at %v, registered at about %v", got, before)
	}
	r.Unregister(&first)
	tick := time.Unix(1000, 0)
	r.Tick(tick.UnixNano())
	regs := make([]Reg, len(r.shards)*slotsPerShard+2) // the last 2 overflow
	for i := range regs {
		r.Register(&regs[i], uint64(10+i))
	}
	if got := r.OldestSince(); !got.Equal(tick) {
		t.Fatalf("OldestSince %v, want the tick %v", got, tick)
	}
	for i := range regs[:len(regs)-1] {
		r.Unregister(&regs[i])
	}
	if got := r.OldestSince(); !got.Equal(tick) {
		t.Fatalf("OldestSince of an overflow registration %v, want the tick %v", got, tick)
	}
	r.Unregister(&regs[len(regs)-1])
	if got := r.OldestSince(); !got.IsZero() {
		t.Fatalf("OldestSince %v with nothing registered", got)
	}

	// A transaction's start time comes from the same clock: unticked,
	// the clock's reading; ticked, the tick.
	m := NewManager(1, func() uint64 { return 0 })
	before = time.Now()
	m.Begin()
	if got := m.Oldest(); got.Before(before.Add(-time.Second)) || got.After(time.Now()) {
		t.Fatalf("unticked txn began at %v, began at about %v", got, before)
	}
	m2 := NewManager(1, func() uint64 { return 0 })
	m2.Registry().Tick(tick.UnixNano())
	m2.Begin()
	if got := m2.Oldest(); !got.Equal(tick) {
		t.Fatalf("txn began at %v, want the tick %v", got, tick)
	}
}

// BenchmarkRegisterParallel is a reader's registration as a snapshot per
// read takes it (Register, Settle, Unregister), on every P at once.
func BenchmarkRegisterParallel(b *testing.B) {
	r := NewRegistry()
	r.Tick(1)
	b.RunParallel(func(pb *testing.PB) {
		var g Reg
		for pb.Next() {
			r.Register(&g, 10)
			r.Settle(&g, 11)
			r.Unregister(&g)
		}
	})
}

// TestRetireNewest: the newest commit, or the newest rollback whose end
// is durable, retires once no reader is older than its timestamp (the
// commit's, or the one drawn after the compensations), without another
// timestamp being drawn after it: a reader at that timestamp sees the
// outcome, so Low passes the txn; an older reader holds it back.
func TestRetireNewest(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(m *Manager, t1 *Txn) uint64 // ends t1, returns its timestamp
	}{
		{"commit", func(m *Manager, t1 *Txn) uint64 { return m.Commit(t1) }},
		{"rollback", func(m *Manager, t1 *Txn) uint64 {
			m.SetAborted(t1)
			m.FinishAbort(t1, 100)
			return m.ts.Load()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewManager(10, func() uint64 { return 1 << 40 })
			t1 := m.Begin()
			var old, g Reg
			before := m.RegisterSnapshot(&old) // an older reader
			ts := tc.end(m, t1)
			if s := m.RegisterSnapshot(&g); s != ts || before >= ts {
				t.Fatalf("snapshot starts %d, %d; want below and at txn %d's timestamp %d", before, s, t1.ID, ts)
			}
			m.Retire()
			if m.Low() > t1.ID {
				t.Fatalf("Low %d passed txn %d while a reader at %d (below its timestamp %d) is live", m.Low(), t1.ID, before, ts)
			}
			m.reg.Unregister(&old)
			m.Retire()
			if low := m.Low(); low <= t1.ID {
				t.Fatalf("Low %d: txn %d (timestamp %d, oracle %d) did not retire with a snapshot at %d only", low, t1.ID, ts, m.ts.Load(), ts)
			}
			if m.ts.Load() != ts {
				t.Fatalf("oracle moved to %d after txn %d's timestamp %d", m.ts.Load(), t1.ID, ts)
			}
			m.reg.Unregister(&g)
		})
	}
}

// TestRegistrySlotHint: a goroutine that registers and unregisters in a
// loop takes the same slot again (the per-P hint), rather than a slot
// picked at random among the 8·shards. sync.Pool may drop the hint (a GC,
// the race detector), so the test asks for most claims, not all.
func TestRegistrySlotHint(t *testing.T) {
	r := NewRegistry()
	var g Reg
	r.Register(&g, 1)
	prev := g.slot
	r.Unregister(&g)
	same := 0
	const rounds = 1000
	for range rounds {
		r.Register(&g, 1)
		if g.slot == prev {
			same++
		}
		prev = g.slot
		r.Unregister(&g)
	}
	// At random, about rounds/(8·shards) claims (under 8) would repeat.
	if same < rounds/2 {
		t.Fatalf("%d of %d registrations took the slot the previous one freed", same, rounds)
	}
}

// TestRegShard: a slot's registration reports its shard, in range; an
// overflow or ended registration reports -1.
func TestRegShard(t *testing.T) {
	r := NewRegistry()
	regs := make([]Reg, len(r.shards)*slotsPerShard+1) // the last overflows
	seen := map[int]bool{}
	for i := range regs {
		r.Register(&regs[i], 1)
	}
	for i := range regs[:len(regs)-1] {
		s := regs[i].Shard()
		if s < 0 || s >= r.Shards() || !inShard(&r.shards[s], regs[i].slot) {
			t.Fatalf("registration %d: shard %d of %d does not hold its slot", i, s, r.Shards())
		}
		seen[s] = true
	}
	if len(seen) != r.Shards() {
		t.Fatalf("a full registry's registrations name %d shards of %d", len(seen), r.Shards())
	}
	if s := regs[len(regs)-1].Shard(); s != -1 {
		t.Fatalf("overflow registration: shard %d, want -1", s)
	}
	r.Unregister(&regs[0])
	if s := regs[0].Shard(); s != -1 {
		t.Fatalf("ended registration: shard %d, want -1", s)
	}
}

func inShard(sh *shard, sl *paddedSlot) bool {
	for i := range sh.slots {
		if &sh.slots[i] == sl {
			return true
		}
	}
	return false
}
