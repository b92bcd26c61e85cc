package checkpoint

import "time"

// Heat tells a checkpoint which pages are hot: a page whose durable head
// frame was published less than After ago is rewritten again soon, so
// its new frames are stored plain (delta.Frame.Plain) instead of
// compressed. Compressing them would be work thrown away: the next
// publish of the page supersedes them and the GC then reclaims them. A
// page published longer ago, a page never written, and every page of a
// database that just opened are cold: their frames are compressed. The
// plain frames of a page that then goes quiet become compressed when the
// page is written again (a later update, the idle settle's squash, a GC
// consolidating rewrite).
//
// Heat keeps the publish frontiers of the last few publishes with their
// times, at most one per After/4, so ColdBelow's answer errs by at most
// After/4 (and only towards hot). One goroutine (the checkpointer's) uses
// it. A nil *Heat says every page is cold.
type Heat struct {
	after time.Duration
	// plain holds the pages whose durable chain has frames stored plain
	// because the page was hot; a publish that writes a page's base
	// cold (compressed where that pays) removes it. The idle settle
	// rewrites them (Plain).
	plain map[uint64]struct{}
	// cold: every address at or below it was published at least after
	// ago (the frontier at open, then the samples that aged out).
	cold    uint64
	samples [heatSamples]heatSample // ring, oldest at head
	head, n int
}

// heatSamples is the ring's size: with one sample per After/4 it covers
// 2x After.
const heatSamples = 8

type heatSample struct {
	at       time.Time
	frontier uint64
}

// NewHeat returns a Heat for pages whose heads younger than after are
// hot (after <= 0: none is), with every address at or below frontier
// (the published frontier at open) cold.
func NewHeat(after time.Duration, frontier uint64) *Heat {
	return &Heat{after: after, cold: frontier, plain: map[uint64]struct{}{}}
}

// wrote records what a publish wrote: pages with frames stored plain
// (hot), pages whose new base was written cold, and pages removed.
func (h *Heat) wrote(hot, coldBase, removed []uint64) {
	if h == nil {
		return
	}
	for _, pid := range hot {
		h.plain[pid] = struct{}{}
	}
	for _, pid := range coldBase {
		delete(h.plain, pid)
	}
	for _, pid := range removed {
		delete(h.plain, pid)
	}
}

// Plain returns up to n pages whose durable chain holds frames stored
// plain because they were hot, and forgets them: the caller (the idle
// settle) rewrites each, so that the next publish, which finds them
// cold, writes them compressed. O(n).
func (h *Heat) Plain(n int) []uint64 {
	if h == nil {
		return nil
	}
	var out []uint64
	for pid := range h.plain {
		if len(out) == n {
			break
		}
		out = append(out, pid)
		delete(h.plain, pid)
	}
	return out
}

// PlainLen returns the number of pages Plain would return in all.
func (h *Heat) PlainLen() int {
	if h == nil {
		return 0
	}
	return len(h.plain)
}

// Published records that every address at or below frontier is durable
// as of now. O(1).
func (h *Heat) Published(now time.Time, frontier uint64) {
	if h == nil || h.after <= 0 {
		return
	}
	if h.n > 0 {
		last := h.samples[(h.head+h.n-1)%heatSamples]
		if now.Sub(last.at) < h.after/4 || frontier <= last.frontier {
			return
		}
	}
	if h.n == heatSamples {
		// The oldest sample leaves: with the samples at least after/4
		// apart it is at least 2x after old, so its frontier is cold
		// for good.
		h.cold = max(h.cold, h.samples[h.head].frontier)
		h.head = (h.head + 1) % heatSamples
		h.n--
	}
	h.samples[(h.head+h.n)%heatSamples] = heatSample{at: now, frontier: frontier}
	h.n++
}

// ColdBelow returns the address at or below which a page's durable head
// makes the page cold at now: the newest frontier published at least
// After ago. Every address is cold without a Heat or with After <= 0.
// O(1) (the ring's size).
func (h *Heat) ColdBelow(now time.Time) uint64 {
	if h == nil || h.after <= 0 {
		return ^uint64(0)
	}
	cold := h.cold
	for i := range h.n {
		s := h.samples[(h.head+i)%heatSamples]
		if now.Sub(s.at) < h.after {
			break // this and every newer sample are younger than after
		}
		cold = max(cold, s.frontier)
	}
	return cold
}
