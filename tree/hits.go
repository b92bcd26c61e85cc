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

// hitCounter is a sharded counter: add picks a shard at random (the
// runtime's per-thread generator, a few ns), sum adds them all.
type hitCounter struct {
	shards [hitShards]paddedCount
}

func (c *hitCounter) add() { c.shards[rand.Uint32()%hitShards].n.Add(1) }

func (c *hitCounter) sum() uint64 {
	var s uint64
	for i := range c.shards {
		s += c.shards[i].n.Load()
	}
	return s
}
