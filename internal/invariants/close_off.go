//go:build !invariants && !race

package invariants

// CloseChecker records that a handle (a Snapshot, Txn or Iter) has ended,
// so that code reading through it afterwards panics instead of reading
// state the engine may already have released. In builds without the
// invariants and race tags it is this empty struct, whose methods do
// nothing and cost nothing.
type CloseChecker struct{}

// Close marks the handle ended.
func (*CloseChecker) Close() {}

// AssertOpen panics, in invariants and race builds, if Close was called.
func (*CloseChecker) AssertOpen(string) {}
