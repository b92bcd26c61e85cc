package tree

import (
	"math/rand/v2"
	"sync/atomic"
)

// hitShards spreads the cache-hit counter over cache lines: every read
// visits the root, so one shared counter would bounce its line between
// all cores on every page visit.
const hitShards = 32

type paddedCount struct {
	n atomic.Uint64
	_ [56]byte
}

// hitSample: add counts one call in hitSample, adding hitSample. An atomic
// add is a full barrier: on every page visit it made the CPU wait for the
// visit's outstanding cache misses instead of overlapping them with the
// next ones (about 7% of a scan's CPU). The counts are statistics; an
// estimate within a few percent over thousands of visits serves them.
const hitSample = 16

// hitCounter is a sampled, sharded counter: add draws from the runtime's
// per-thread generator (a few ns) and, one call in hitSample, adds
// hitSample to a random shard; sum adds the shards.
type hitCounter struct {
	shards [hitShards]paddedCount
}

func (c *hitCounter) add() {
	if r := rand.Uint32(); r%hitSample == 0 {
		c.shards[(r/hitSample)%hitShards].n.Add(hitSample)
	}
}

// addExact counts one call (for counts a test asserts on, where the
// barrier per call is rare enough not to matter).
func (c *hitCounter) addExact() { c.shards[rand.Uint32()%hitShards].n.Add(1) }

func (c *hitCounter) sum() uint64 {
	var s uint64
	for i := range c.shards {
		s += c.shards[i].n.Load()
	}
	return s
}
