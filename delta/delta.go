package delta

// Flags qualify a version.
type Flags uint8

const (
	// Tombstone marks a delete: the key has no value in this version.
	Tombstone Flags = 1 << iota
	// CLR marks a compensation installed by a rollback. Its Value (or
	// Tombstone) is the restored old value, kept for logging and recovery;
	// readers skip it together with every version of the same txn and key.
	CLR
	// Blob marks, in an encoded frame only, an entry whose value is a
	// BlobRef to a blob frame holding the value (docs/formats.md). Records
	// in memory never carry it: Frame.Materialize resolves it.
	Blob
)

// Delta is one version prepended to a leaf page's chain. Immutable once
// published.
type Delta struct {
	// Key and Value share one allocation owned by the delta.
	Key, Value []byte
	// Next is the next-older delta of the same page (nil: the base).
	Next *Delta
	// KeyHash is a hash of Key, set with Next when the delta joins a
	// chain (node.Page.Prepend; 0: not set): a chain walk compares it
	// before reading Key's bytes. Key, Next and KeyHash share the
	// struct's first cache line.
	KeyHash uint64
	TxID    uint64
	Seq     uint32
	Flags   Flags

	// Frame identity, assigned under the page lock (docs/crash-safety.md): logical
	// address, the LSN of the record that produced it and its generation.
	Addr uint64
	LSN  uint64
	Gen  uint64
}

// New returns a delta holding private copies of key and value.
func New(key, value []byte, txid uint64, seq uint32, flags Flags) *Delta {
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	return &Delta{
		Key:   buf[:len(key):len(key)],
		Value: buf[len(key):],
		TxID:  txid,
		Seq:   seq,
		Flags: flags,
	}
}

// Size is the delta's in-memory footprint in bytes, for accounting.
func (d *Delta) Size() int { return len(d.Key) + len(d.Value) + 96 }
