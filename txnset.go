package bwkv

import "sync"

// txnSet holds the open transactions: Close rolls them back, the
// checkpointer enforces MaxTxnLag over them and Stats counts them. Every
// read-write transaction joins it in Begin and leaves it when it ends, so
// those two steps are on every write's path.
//
// One mutex and one map for the whole set made both steps a lock that
// every writer took in turn, its cache line moving between the CPUs of
// two writers twice per transaction: W2 (95% reads, 5% updates, 2
// threads) ran 12-13% slower than with no set at all, and 4% slower than
// with this one (bench/results/s36-txnset/). So the set is sharded: a
// transaction joins the shard numbered as the registry shard its slot is
// in (mvcc.Reg.Shard). A slot is claimed next to the last one claimed on
// the same P, so writers on different CPUs keep to different shards and a
// shard's line stays with its CPU. Each shard is an intrusive list:
// joining and leaving are O(1) and allocate nothing.
type txnSet struct {
	shards []txnShard
}

// txnShard is one shard, padded to its own cache line.
type txnShard struct {
	mu   sync.Mutex
	head *Txn // newest first, linked through Txn.setPrev/setNext
	n    int
	_    [40]byte
}

// newTxnSet returns a set of n shards (n >= 1).
func newTxnSet(n int) *txnSet { return &txnSet{shards: make([]txnShard, max(n, 1))} }

// add puts tx into the shard hint picks (any int; a negative one, from a
// txn that holds no registry slot, is as good as any other). Before tx is
// shared with another goroutine: tx.shard never changes after.
func (s *txnSet) add(tx *Txn, hint int) {
	sh := &s.shards[uint(hint)%uint(len(s.shards))]
	tx.shard = sh
	sh.mu.Lock()
	tx.setNext = sh.head
	if sh.head != nil {
		sh.head.setPrev = tx
	}
	sh.head = tx
	sh.n++
	sh.mu.Unlock()
}

// remove takes tx out of the set; removing it again is a no-op (Close's
// rollback and the owner's own end may both get here).
func (s *txnSet) remove(tx *Txn) {
	sh := tx.shard
	if sh == nil {
		return
	}
	sh.mu.Lock()
	if tx.setPrev != nil || sh.head == tx { // a member: linked, or the head
		if tx.setPrev != nil {
			tx.setPrev.setNext = tx.setNext
		} else {
			sh.head = tx.setNext
		}
		if tx.setNext != nil {
			tx.setNext.setPrev = tx.setPrev
		}
		tx.setPrev, tx.setNext = nil, nil
		sh.n--
	}
	sh.mu.Unlock()
}

// all returns the transactions in the set now. O(open transactions +
// shards).
func (s *txnSet) all() []*Txn {
	var open []*Txn
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for tx := sh.head; tx != nil; tx = tx.setNext {
			open = append(open, tx)
		}
		sh.mu.Unlock()
	}
	return open
}

// len returns how many transactions the set holds. O(shards).
func (s *txnSet) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return n
}
