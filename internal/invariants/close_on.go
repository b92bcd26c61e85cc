//go:build invariants || race

package invariants

import "sync/atomic"

// CloseChecker records that a handle (a Snapshot, Txn or Iter) has ended,
// so that code reading through it afterwards panics instead of reading
// state the engine may already have released. The zero value is open. In
// builds without the invariants and race tags it is an empty struct whose
// methods do nothing. Safe for concurrent use.
type CloseChecker struct {
	closed atomic.Bool
}

// Close marks the handle ended.
func (c *CloseChecker) Close() { c.closed.Store(true) }

// AssertOpen panics if Close was called: what names the handle and the
// use, for the message.
func (c *CloseChecker) AssertOpen(what string) {
	if c.closed.Load() {
		panic("bwkv: invariant violated: " + what + " after the handle was closed (committed, rolled back)")
	}
}
