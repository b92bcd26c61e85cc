// Package tree is bwkv's B-link Bw-tree: traversal from the root over the
// mapping table, and the structure modifications (split, root split, merge).
//
// Internal to bwkv; no API stability promise.
//
// # Traversal
//
// Readers take no locks. At each page a key >= the high fence follows the
// right sibling; a key below the low fence, an unmapped slot or a removed
// page restarts from the root (a PID may have been merged away or, after a
// checkpoint, reused). Every page state is immutable, so a reader that
// loaded a state reads a consistent page even if a writer publishes a new
// one meanwhile: any version visible to it was installed before its
// snapshot began, hence before the load.
//
// # Locks
//
// Each page has a writer mutex in its mapping-table slot. A write locks one
// leaf. A split holds only the splitting page's lock while it publishes the
// new right page and then the left page with the sibling link (the atomic
// unit); posting the separator in the parent is a separate step under the
// parent's lock alone, so it never holds two locks. A root split holds the
// root's lock; the two new children are unreachable until the root is
// published. A merge locks parent, left, right in that order (top-down,
// left to right); nothing else holds more than one lock, so there is no
// deadlock.
//
// # Half splits
//
// Between the two steps of a split the parent lacks the separator; readers
// reach the new page through the left page's sibling link. Posting is
// idempotent (a separator already present is not added twice) and Check
// accepts a half split. A writer whose traversal moves right from a page
// it reached from the parent posts that separator itself after its write
// (the new child is validated under the parent's lock), so a split whose
// post was lost in a crash heals on the next write that crosses it.
// Readers only follow the link.
//
// # Merges
//
// Leaves also split above SplitBytes of keys and values, so a
// consolidation of large values copies a bounded amount. A leaf left
// underfull by consolidation (fewer than a quarter of PageSplitEntries
// keys and of SplitBytes) is merged with an adjacent leaf under the same
// parent when the result stays below three quarters of PageSplitEntries
// (so a merge never triggers a split). The merge is one atomic unit under
// the three locks: the left page is replaced by the merged contents, the
// right page is marked removed, the separator leaves the parent. Inner
// pages are not merged; an inner page always keeps at least one child.
// Root split keeps the root PID: the root's entries move to two new pages
// and the root becomes their parent.
package tree
