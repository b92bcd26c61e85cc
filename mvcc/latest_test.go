package mvcc

import "testing"

// TestLatestSamplesAtFirstUse: a Latest's start is sampled when it is
// first asked, not when it is made, so a point read sees what committed
// up to its search of the state it loaded (a Latest sampled when made,
// before the load, would need a registration: consolidation could drop
// the version it sees). Once sampled, the start stays: a txn committed
// after it is not visible.
func TestLatestSamplesAtFirstUse(t *testing.T) {
	m := NewManager(1, nil)
	lr := m.Latest()
	a := m.Begin()
	if lr.Visible(a.ID) {
		t.Fatal("an active txn's version is visible")
	}
	lr2 := m.Latest() // made before b commits, first asked after
	b := m.Begin()
	m.SetCommitting(b)
	m.Commit(b)
	if !lr2.Visible(b.ID) {
		t.Fatal("a txn committed before the Latest's first use is invisible to it")
	}
	if lr.Visible(b.ID) {
		t.Fatal("a txn committed after the Latest's first use is visible to it")
	}
	m.SetCommitting(a)
	m.Commit(a)
	if lr.Visible(a.ID) {
		t.Fatal("a txn active at the Latest's first use became visible to it")
	}
	if got := lr.Low(); got != m.Low() {
		t.Fatalf("Low %d, the manager's %d", got, m.Low())
	}
}
