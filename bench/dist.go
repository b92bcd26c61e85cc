package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Chooser picks key ids in [0, n). Next is allocation-free; a Chooser holds
// no per-goroutine state (the caller passes its own rand source), so one
// value is shared by all workers.
type Chooser interface {
	Next(r *rand.Rand) uint64
	Name() string
}

// NewChooser returns the distribution called name ("uniform", "zipf" for
// kv_bench's zipf-like, "ycsb_zipf" for YCSB's scrambled Zipfian) over n ids.
func NewChooser(name string, n uint64, theta float64) (Chooser, error) {
	if n == 0 {
		return nil, fmt.Errorf("distribution over 0 keys")
	}
	switch name {
	case "uniform":
		return Uniform{N: n}, nil
	case "zipf":
		return ZipfLike{N: n, Theta: theta}, nil
	case "ycsb_zipf":
		return NewScrambledZipfian(n, theta), nil
	}
	return nil, fmt.Errorf("unknown distribution %q", name)
}

// Uniform picks every id with the same probability.
type Uniform struct{ N uint64 }

// Next returns a uniform id in [0, N).
func (u Uniform) Next(r *rand.Rand) uint64 { return r.Uint64N(u.N) }

// Name is "uniform".
func (Uniform) Name() string { return "uniform" }

// ZipfLike is kv_bench's "zipf": id = floor(u^(1/(1-theta)) * n) for a
// uniform u in [0,1). With theta 0.99 the exponent is 100, so id 0 alone
// takes n^-0.01 of all picks (about 88% at n = 200k): a single-hot-key test,
// which is why the harness adds W2y.
type ZipfLike struct {
	N     uint64
	Theta float64
}

// Next returns the next id.
func (z ZipfLike) Next(r *rand.Rand) uint64 {
	if z.N <= 1 {
		return 0
	}
	t := math.Min(math.Max(z.Theta, 0.0001), 0.9999)
	scaled := math.Pow(r.Float64(), 1/(1-t))
	id := uint64(scaled * float64(z.N))
	if id >= z.N {
		id = z.N - 1
	}
	return id
}

// Name is "zipf" (kv_bench's column value).
func (ZipfLike) Name() string { return "zipf" }

// ScrambledZipfian is YCSB's scrambled Zipfian: ranks follow a Zipfian law
// with exponent theta (Gray et al., "Quickly generating billion-record
// synthetic databases", the generator YCSB uses), and each rank is hashed
// (FNV-1a, 64 bit) onto the key space so the hot keys are scattered rather
// than clustered at the low ids. The popular items keep their Zipfian
// frequencies: rank 0 has probability 1/zeta(n, theta).
type ScrambledZipfian struct {
	n                   uint64
	theta, alpha, zetaN float64
	eta, half           float64
}

// NewScrambledZipfian precomputes zeta(n, theta) (O(n), once per run).
func NewScrambledZipfian(n uint64, theta float64) *ScrambledZipfian {
	z := &ScrambledZipfian{n: n, theta: theta}
	z.zetaN = zeta(n, theta)
	zeta2 := zeta(2, theta)
	z.alpha = 1 / (1 - theta)
	z.eta = (1 - math.Pow(2/float64(n), 1-theta)) / (1 - zeta2/z.zetaN)
	z.half = 1 + math.Pow(0.5, theta)
	return z
}

func zeta(n uint64, theta float64) float64 {
	var s float64
	for i := uint64(1); i <= n; i++ {
		s += 1 / math.Pow(float64(i), theta)
	}
	return s
}

// Rank draws a Zipfian rank in [0, n), 0 the most popular.
func (z *ScrambledZipfian) Rank(r *rand.Rand) uint64 {
	u := r.Float64()
	uz := u * z.zetaN
	if uz < 1 {
		return 0
	}
	if uz < z.half {
		return 1
	}
	rank := uint64(float64(z.n) * math.Pow(z.eta*u-z.eta+1, z.alpha))
	if rank >= z.n {
		rank = z.n - 1
	}
	return rank
}

// Next returns the scrambled id of the next rank.
func (z *ScrambledZipfian) Next(r *rand.Rand) uint64 { return fnv64(z.Rank(r)) % z.n }

// Name is "ycsb_zipf".
func (*ScrambledZipfian) Name() string { return "ycsb_zipf" }

// fnv64 is FNV-1a over the 8 little-endian bytes of v.
func fnv64(v uint64) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= prime
		v >>= 8
	}
	return h
}
