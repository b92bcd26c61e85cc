package cluster

import (
	"encoding/binary"
	"fmt"
)

// OpKind names what an Op does.
type OpKind uint8

const (
	// OpPut sets Key to Value.
	OpPut OpKind = iota + 1
	// OpDelete removes Key (a missing key is not an error).
	OpDelete
	// OpCheckValue requires Key to hold exactly Value (Absent: to be
	// missing) when the batch applies.
	OpCheckValue
	// OpCheckVersion requires Key's version to be Version (0: missing)
	// when the batch applies.
	OpCheckVersion
)

func (k OpKind) String() string {
	switch k {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpCheckValue:
		return "check-value"
	case OpCheckVersion:
		return "check-version"
	}
	return fmt.Sprintf("op(%d)", uint8(k))
}

// Op is one operation of a Batch.
type Op struct {
	Kind    OpKind
	Key     []byte
	Value   []byte // OpPut: the new value; OpCheckValue: the expected one
	Absent  bool   // OpCheckValue: the key must be missing (Value ignored)
	Version uint64 // OpCheckVersion: the expected version, 0 = missing
}

// Batch is an atomic group of operations replicated as one raft log entry.
// At apply time, on every node, the operations run in order against the
// state left by the entries before it (a check sees the batch's own earlier
// writes); if any check fails nothing of the batch is applied. Every key a
// batch writes gets the version of the batch's raft index, so versions are
// equal on every node and increase with each write.
//
// A Batch is not safe for concurrent use; it keeps references to the slices
// passed to it until it is encoded (by Node.Update).
type Batch struct {
	Ops []Op
}

// Put adds a put of key to value.
func (b *Batch) Put(key, value []byte) *Batch {
	b.Ops = append(b.Ops, Op{Kind: OpPut, Key: key, Value: value})
	return b
}

// Delete adds a delete of key.
func (b *Batch) Delete(key []byte) *Batch {
	b.Ops = append(b.Ops, Op{Kind: OpDelete, Key: key})
	return b
}

// CheckValue adds a condition: key holds want (nil want: key is missing).
func (b *Batch) CheckValue(key, want []byte) *Batch {
	b.Ops = append(b.Ops, Op{Kind: OpCheckValue, Key: key, Value: want, Absent: want == nil})
	return b
}

// CheckVersion adds a condition: key's version is version (0: missing).
func (b *Batch) CheckVersion(key []byte, version uint64) *Batch {
	b.Ops = append(b.Ops, Op{Kind: OpCheckVersion, Key: key, Version: version})
	return b
}

// CompareAndSwap adds CheckValue(key, old) and Put(key, new): a
// compare-and-set on the value (old nil: create only if missing).
func (b *Batch) CompareAndSwap(key, old, new []byte) *Batch {
	return b.CheckValue(key, old).Put(key, new)
}

// Result is what applying a batch produced: the raft index it was applied
// at (the version of every key it wrote) or, for a failed condition, a
// *ConditionError (nothing applied).
type Result struct {
	Index uint64
	Err   error
}

// ConditionError reports the first failed check of a batch; it matches
// ErrConditionFailed. Version is the key's version when the batch applied
// (0: missing).
type ConditionError struct {
	Op      int
	Key     []byte
	Version uint64
}

func (e *ConditionError) Error() string {
	return fmt.Sprintf("cluster: condition failed: op %d on key %q (version %d)", e.Op, e.Key, e.Version)
}

// Unwrap makes errors.Is(err, ErrConditionFailed) hold.
func (e *ConditionError) Unwrap() error { return ErrConditionFailed }

const batchCodecVersion = 1

// encode appends the batch's wire form: version, op count, then per op
// kind, flags, key, value, version. Validation happens here so a bad batch
// never reaches the log.
func (b *Batch) encode(dst []byte) ([]byte, error) {
	if len(b.Ops) == 0 {
		return nil, fmt.Errorf("%w: no operations", ErrBadBatch)
	}
	dst = append(dst, batchCodecVersion)
	dst = binary.AppendUvarint(dst, uint64(len(b.Ops)))
	for i, op := range b.Ops {
		if op.Kind < OpPut || op.Kind > OpCheckVersion {
			return nil, fmt.Errorf("%w: op %d: unknown kind %d", ErrBadBatch, i, op.Kind)
		}
		if len(op.Key) == 0 {
			return nil, fmt.Errorf("%w: op %d (%s): empty key", ErrBadBatch, i, op.Kind)
		}
		var flags byte
		if op.Absent {
			flags = 1
		}
		dst = append(dst, byte(op.Kind), flags)
		dst = binary.AppendUvarint(dst, uint64(len(op.Key)))
		dst = append(dst, op.Key...)
		dst = binary.AppendUvarint(dst, uint64(len(op.Value)))
		dst = append(dst, op.Value...)
		dst = binary.AppendUvarint(dst, op.Version)
	}
	return dst, nil
}

// decodeBatch parses an encoded batch; keys and values alias data.
func decodeBatch(data []byte) (Batch, error) {
	if len(data) == 0 || data[0] != batchCodecVersion {
		return Batch{}, fmt.Errorf("%w: unknown encoding", ErrBadBatch)
	}
	d := decoder{b: data[1:]}
	n := d.uvarint()
	if n == 0 || n > uint64(len(d.b)) {
		return Batch{}, fmt.Errorf("%w: %d operations in %d bytes", ErrBadBatch, n, len(data))
	}
	b := Batch{Ops: make([]Op, 0, n)}
	for range n {
		if len(d.b) < 2 {
			return Batch{}, fmt.Errorf("%w: truncated", ErrBadBatch)
		}
		op := Op{Kind: OpKind(d.b[0]), Absent: d.b[1]&1 != 0}
		d.b = d.b[2:]
		op.Key = d.bytes()
		op.Value = d.bytes()
		op.Version = d.uvarint()
		if d.bad || op.Kind < OpPut || op.Kind > OpCheckVersion || len(op.Key) == 0 {
			return Batch{}, fmt.Errorf("%w: malformed op %d", ErrBadBatch, len(b.Ops))
		}
		b.Ops = append(b.Ops, op)
	}
	if len(d.b) != 0 {
		return Batch{}, fmt.Errorf("%w: %d trailing bytes", ErrBadBatch, len(d.b))
	}
	return b, nil
}
