package bwkv

// InPlace reports whether the iterator is positioned on a leaf it walks in
// place (the plain-leaf path), not on materialized entries.
func (it *Iter) InPlace() bool { return it.valid && it.base != nil }

// SiblingHops returns how many iterator leaf crossings followed a
// right-sibling link instead of descending from the root.
func (db *DB) SiblingHops() uint64 { return db.tree.Stats().SiblingHops }

// Merged reports whether the iterator is positioned on a leaf it walks in
// place with the leaf's chain merged in.
func (it *Iter) Merged() bool { return it.valid && it.merged }
