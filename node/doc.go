// Package node implements one Bw-tree page: search in its base and delta
// chain under a visibility rule, consolidation into a new base, and the
// splitting and merging of page contents.
//
// Internal to bwkv; no API stability promise.
//
// A Page value is an immutable published state: a base plus a newest-first
// chain. Writers publish a new Page per change; readers use whatever state
// they loaded, which is consistent because nothing in it is ever mutated.
//
// Visibility is supplied by the caller (package mvcc decides it), so node
// knows nothing of transactions beyond txids and two rules it enforces
// itself: versions of one key are ordered newest first, and a CLR of txn T
// hides every version of T for that key (the rollback compensated them).
//
// Retention (consolidation, Retention): per key, versions of unretired
// txns that have not committed (active, committing, in doubt, aborted
// with their CLRs) are all kept, except that of an uncommitted txn's
// adjacent writes of the key only the newest is kept, and a txn the
// Retention knows rolled back to the end is masked by its CLRs as a
// retired one is (below). The Retention is asked per version and a txn
// may retire between two of them, so once a dropped CLR masks a txn,
// its versions of the key go whatever the later answers say;
// among committed unretired versions, the
// newest is kept, and an older one only if it is the newest at or below
// some registered reader's start (or the bound for readers not yet
// listed); among retired versions, a txn masked by its CLR is dropped with
// the CLR, the newest remaining one is kept unless it is a tombstone, and
// everything older is dropped. Every live reader started after every
// retired commit, so the newest retired version is the one each of them
// sees when no unretired version is visible to it. A key thus keeps at
// most (distinct reader starts + 2) versions besides uncommitted ones,
// whatever the update rate, and consolidation costs O(versions · log
// readers), the reader set fetched once and only when some key has two
// committed unretired versions.
//
// # Scans in place
//
// By the same rule, a base whose entries are one version per key, with no
// CLR and every txid retired, is what every live reader sees: Plain (no
// chain) and Overrides (a CLR-free chain, resolved once per key) let an
// iterator walk such a base by entry index, with no per-entry visibility
// work and no copy of the leaf.
//
// # Stubs
//
// An evicted leaf may stay as a stub state (stub.go): no entries in memory,
// a Bloom filter (16 bits per key, 5 hashes) of every key its durable state
// holds, an index of its durable chain (DiskChain: each delta frame's
// address and key hash, so a point read on disk reads only the frames
// that may hold its key), and the deltas installed since. Get, Versions and Has on a stub are
// exact for keys the filter rules out (MayContain false) and must not be
// used for other keys: the tree reads the full page first. Each state
// records its memory (Size, Bytes) for the cache's O(1) accounting.
package node
