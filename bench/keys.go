package bench

// PrefixGroups is kv_bench's number of key prefixes: key id i lives under
// prefix s{i%1024:03x}_ and a W6 scan reads one prefix.
const PrefixGroups = 1024

const hexDigits = "0123456789abcdef"

// AppendKey appends the kv_bench key of id to dst:
// s{id%1024:03x}_{id:010x}, right-padded with 'x' to keySize bytes (never
// truncated). With a dst of enough capacity it does not allocate, so the
// timed loop builds keys in one reused buffer.
func AppendKey(dst []byte, id uint64, keySize int) []byte {
	start := len(dst)
	dst = appendPrefix(dst, id)
	dst = appendHex(dst, id, 10)
	for len(dst)-start < keySize {
		dst = append(dst, 'x')
	}
	return dst
}

// AppendPrefix appends the scan prefix of id, s{id%1024:03x}_, to dst.
func AppendPrefix(dst []byte, id uint64) []byte { return appendPrefix(dst, id) }

func appendPrefix(dst []byte, id uint64) []byte {
	g := id % PrefixGroups
	return append(dst, 's', hexDigits[g>>8&0xf], hexDigits[g>>4&0xf], hexDigits[g&0xf], '_')
}

// appendHex appends v in lower-case hex, zero-padded to at least width digits.
func appendHex(dst []byte, v uint64, width int) []byte {
	n := 1
	for x := v >> 4; x != 0; x >>= 4 {
		n++
	}
	if n < width {
		n = width
	}
	for i := n - 1; i >= 0; i-- {
		dst = append(dst, hexDigits[(v>>(4*uint(i)))&0xf])
	}
	return dst
}

// PrefixUpperBound returns the smallest key greater than every key with the
// given prefix, appended to dst (the prefix with its last byte incremented;
// kv_bench prefixes end in '_', so no carry is ever needed in practice).
func PrefixUpperBound(dst, prefix []byte) []byte {
	dst = append(dst, prefix...)
	for i := len(dst) - 1; i >= 0; i-- {
		if dst[i] != 0xff {
			dst[i]++
			return dst[:i+1]
		}
	}
	return nil // prefix of all 0xff: unbounded
}

// FillValue writes the deterministic value pattern of kv_bench (ASCII '0')
// into a fresh slice of size n; compression is off everywhere, so the
// content does not change what the engines store.
func FillValue(n int) []byte {
	v := make([]byte, n)
	for i := range v {
		v[i] = '0'
	}
	return v
}
