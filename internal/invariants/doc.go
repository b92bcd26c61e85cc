// Package invariants holds bwkv's assertions that are too costly, or too
// strict about misuse, for a production build: they are compiled in under
// the invariants or race build tags (so every test run with -race has
// them) and compile to nothing otherwise. Enabled says which build this
// is.
//
// CloseChecker is the use-after-close checker of Snapshot, Txn and Iter.
// The public API defines every use of an ended handle (ErrClosed,
// ErrTxnDone: errors.go, tested by the root's handles_test.go), so the
// checker does not replace those checks: it sits on the engine's paths
// that read or write through a handle after them (an iterator loading a
// leaf through its snapshot's or txn's reader, a txn's read or write), and
// panics there if the handle has ended, which only a broken engine path
// or a handle closed by another goroutine mid-use can cause. It costs
// nothing in other builds (an empty struct, empty methods).
//
// Internal to bwkv; no API stability promise. It imports nothing of bwkv.
package invariants
