package cluster

// EncodeBatch exposes the batch codec to the black-box tests.
func EncodeBatch(b *Batch) ([]byte, error) { return b.encode(nil) }
