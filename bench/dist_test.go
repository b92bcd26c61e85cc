package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

const distSeed = 42

func TestUniform(t *testing.T) {
	t.Logf("seed %d", distSeed)
	r := rand.New(rand.NewPCG(distSeed, 1))
	const n, draws, buckets = 100000, 200000, 10
	var counts [buckets]int
	u := Uniform{N: n}
	for i := 0; i < draws; i++ {
		id := u.Next(r)
		if id >= n {
			t.Fatalf("id %d out of range", id)
		}
		counts[id*buckets/n]++
	}
	for i, c := range counts {
		if want := draws / buckets; math.Abs(float64(c-want)) > 0.05*float64(want) {
			t.Errorf("bucket %d: %d draws, want about %d", i, c, want)
		}
	}
}

// TestZipfLikeHotKey checks kv_bench's formula: P(id 0) = n^-(1-theta).
func TestZipfLikeHotKey(t *testing.T) {
	r := rand.New(rand.NewPCG(distSeed, 2))
	const n, draws = 200000, 200000
	z := ZipfLike{N: n, Theta: 0.99}
	zero := 0
	for i := 0; i < draws; i++ {
		id := z.Next(r)
		if id >= n {
			t.Fatalf("id %d out of range", id)
		}
		if id == 0 {
			zero++
		}
	}
	want := math.Pow(n, -0.01) // ~0.885
	if got := float64(zero) / draws; math.Abs(got-want) > 0.01 {
		t.Fatalf("P(id 0) = %.4f, want %.4f", got, want)
	}
}

func TestScrambledZipfian(t *testing.T) {
	r := rand.New(rand.NewPCG(distSeed, 3))
	const n, draws = 100000, 400000
	z := NewScrambledZipfian(n, 0.99)
	ranks := map[uint64]int{}
	ids := map[uint64]int{}
	for i := 0; i < draws; i++ {
		ranks[z.Rank(r)]++
		id := z.Next(r)
		if id >= n {
			t.Fatalf("id %d out of range", id)
		}
		ids[id]++
	}
	// Rank 0 has probability 1/zeta(n, theta); rank 1 is 2^-theta as likely.
	p0 := float64(ranks[0]) / draws
	if want := 1 / zeta(n, 0.99); math.Abs(p0-want) > 0.1*want {
		t.Errorf("P(rank 0) = %.4f, want %.4f", p0, want)
	}
	if ratio, want := float64(ranks[1])/float64(ranks[0]), math.Pow(2, -0.99); math.Abs(ratio-want) > 0.1 {
		t.Errorf("P(rank 1)/P(rank 0) = %.3f, want %.3f", ratio, want)
	}
	// Scrambled: the hottest id is the hash of rank 0, not id 0, and it is
	// about as hot as rank 0.
	hot := fnv64(0) % n
	if got := float64(ids[hot]) / draws; math.Abs(got-p0) > 0.15*p0 {
		t.Errorf("P(hottest id %d) = %.4f, want about %.4f", hot, got, p0)
	}
	if hot == 0 {
		t.Errorf("scrambling left the hot key at id 0")
	}
	// Skewed but not single-key: many distinct ids are drawn.
	if len(ids) < n/10 {
		t.Errorf("only %d distinct ids in %d draws", len(ids), draws)
	}
}

func TestPickOpMix(t *testing.T) {
	r := rand.New(rand.NewPCG(distSeed, 4))
	for _, w := range Workloads {
		var counts [3]int
		const draws = 100000
		for i := 0; i < draws; i++ {
			counts[w.PickOp(r)]++
		}
		for k, want := range []int{w.ReadPct, w.UpdatePct, w.ScanPct} {
			got := 100 * float64(counts[k]) / draws
			if math.Abs(got-float64(want)) > 0.6 {
				t.Errorf("%s op %d: %.1f%%, want %d%%", w.ID, k, got, want)
			}
		}
	}
}

func TestChoosersDoNotAllocate(t *testing.T) {
	r := rand.New(rand.NewPCG(distSeed, 5))
	for _, name := range []string{"uniform", "zipf", "ycsb_zipf"} {
		c, err := NewChooser(name, 1000, 0.99)
		if err != nil {
			t.Fatal(err)
		}
		if a := testing.AllocsPerRun(1000, func() { c.Next(r) }); a != 0 {
			t.Errorf("%s allocates %.1f per draw", name, a)
		}
	}
}
