// Package invariants holds bwkv's assertions that are too costly, or too
// strict about misuse, for a production build: they are compiled in under
// the invariants or race build tags (so every test run with -race has
// them) and compile to nothing otherwise. Enabled says which build this
// is.
//
// Internal to bwkv; no API stability promise. It imports nothing of bwkv.
package invariants
