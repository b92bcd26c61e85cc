// Package generation holds bwkv's hot and sealed generations, the cut gate
// and the exact dirty-page sets (docs/crash-safety.md).
//
// Internal to bwkv; no API stability promise.
//
// # The cut gate
//
// Every frame-producing action (a put or delete, a compensation, a redo
// install, a consolidation, a whole SMO atomic unit) holds the read side of
// an xsync.RBMutex exactly once around {log append, address draw, install,
// dirty mark}. Cut takes the write side, so no action is half done at the
// cut: every record below the frontier has its frame in the sealed
// generation or older and every later record's frame is newer (INV-C1), and
// an atomic unit never straddles two generations (INV-C3).
//
// # Exact dirty sets
//
// Touch runs under the page lock inside the gate. A page's slot carries the
// generation that last dirtied it (its stamp); the first touch in a
// generation appends the PID to that generation's list, later ones only
// add bytes: O(1) and de-duplicated, and the list never drops an entry.
// The checkpointer reads the sealed list; it never walks the tree.
//
// # Sealed states (INV-C2)
//
// The first touch of a page in the hot generation whose stamp is the sealed
// generation saves the page's current state, which is exactly its state at
// the cut, in the sealed generation's pinned map before the new state is
// published. The checkpointer loads a dirty page's current state first and
// then prefers the pinned one: if the page changed after the cut, the pin
// was stored before that change was published, so it is seen. Thus a
// consolidation, split or merge after the cut never hides sealed frames:
// the states they replaced stay reachable until the publish drops the
// sealed generation.
package generation
