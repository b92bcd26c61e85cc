package bench

import (
	"fmt"
	"math/rand/v2"
)

// ValueKind selects what the values written by `kvbench run` and `kvbench
// bulk` hold (--value-kind). Content matters once an engine compresses:
// "random" bytes do not compress, "text" is JSON-like records that
// compress about as real documents do. Neither repeats one value for
// every key (that would let a block compressor store each value once).
type ValueKind string

// The value kinds.
const (
	ValueRandom ValueKind = "random"
	ValueText   ValueKind = "text"
)

// ParseValueKind checks a --value-kind flag.
func ParseValueKind(s string) (ValueKind, error) {
	switch k := ValueKind(s); k {
	case ValueRandom, ValueText:
		return k, nil
	}
	return "", fmt.Errorf("invalid --value-kind %q (supported: random, text)", s)
}

// maxValueSetBytes bounds the memory of a Values set.
const maxValueSetBytes = 64 << 20

// Values is a fixed set of distinct values of one size, drawn by index.
// Immutable: safe for concurrent use; callers must not modify a value.
type Values struct{ vals [][]byte }

// NewValues returns between 16 and 4096 distinct values of size bytes
// (at most maxValueSetBytes in all), generated from seed.
func NewValues(kind ValueKind, size int, seed uint64) (*Values, error) {
	if _, err := ParseValueKind(string(kind)); err != nil {
		return nil, err
	}
	n := min(max(maxValueSetBytes/max(size, 1), 16), 4096)
	rng := rand.New(rand.NewPCG(seed, 0x76616c756573))
	v := &Values{vals: make([][]byte, n)}
	for i := range v.vals {
		if kind == ValueText {
			v.vals[i] = textRecord(rng, i, size)
			continue
		}
		b := make([]byte, size)
		for j := 0; j < size; j += 8 {
			x := rng.Uint64()
			for k := j; k < min(j+8, size); k++ {
				b[k] = byte(x)
				x >>= 8
			}
		}
		v.vals[i] = b
	}
	return v, nil
}

// At returns the value for draw i (any integer; the set cycles).
func (v *Values) At(i uint64) []byte { return v.vals[i%uint64(len(v.vals))] }

// textRecord returns a JSON-like record of exactly size bytes: an id,
// names and emails from small vocabularies, numbers, booleans and a tag
// list, repeated field names as real documents have.
func textRecord(rng *rand.Rand, i, size int) []byte {
	first := []string{"ada", "alan", "grace", "linus", "barbara", "ken", "dennis", "margaret", "edsger", "donald"}
	last := []string{"lovelace", "turing", "hopper", "torvalds", "liskov", "thompson", "ritchie", "hamilton", "dijkstra", "knuth"}
	cities := []string{"london", "paris", "berlin", "tokyo", "boston", "zurich", "oslo", "austin"}
	tags := []string{"admin", "beta", "billing", "dev", "ops", "sales", "support", "trial"}
	b := make([]byte, 0, size+256)
	for n := 0; len(b) < size; n++ {
		f, l := first[rng.IntN(len(first))], last[rng.IntN(len(last))]
		b = fmt.Appendf(b, `{"id":%d,"name":"%s %s","email":"%s.%s@example.com","city":"%s","age":%d,"active":%v,"score":%d.%02d,"tags":["%s","%s"]}`,
			i*100+n, f, l, f, l, cities[rng.IntN(len(cities))], 18+rng.IntN(60), rng.IntN(2) == 0,
			rng.IntN(1000), rng.IntN(100), tags[rng.IntN(len(tags))], tags[rng.IntN(len(tags))])
	}
	return b[:size]
}
