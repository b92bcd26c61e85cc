package checkpoint

import (
	"testing"
	"time"
)

// TestHeatColdBelow: an address is cold once the publish that made it
// durable is at least After old; the frontier at open is cold from the
// start; samples closer than After/4 are not kept, and the ones that age
// out of the ring stay cold.
func TestHeatColdBelow(t *testing.T) {
	const after = 4 * time.Second
	t0 := time.Unix(1000, 0)
	h := NewHeat(after, 100)
	if got := h.ColdBelow(t0); got != 100 {
		t.Fatalf("ColdBelow before any publish = %d, want the frontier at open 100", got)
	}
	h.Published(t0, 200)
	h.Published(t0.Add(time.Second), 300)
	h.Published(t0.Add(time.Second+after/8), 350) // too close to the last sample: not kept
	for _, c := range []struct {
		at   time.Duration
		want uint64
	}{
		{after - time.Nanosecond, 100},
		{after, 200},
		{time.Second + after, 300},
		{time.Hour, 300},
	} {
		if got := h.ColdBelow(t0.Add(c.at)); got != c.want {
			t.Errorf("ColdBelow(t0+%v) = %d, want %d", c.at, got, c.want)
		}
	}
	// Fill the ring past its size: the samples that leave stay cold.
	for i := range 3 * heatSamples {
		h.Published(t0.Add(2*time.Second+time.Duration(i)*after/4), uint64(400+i))
	}
	now := t0.Add(2*time.Second + time.Duration(3*heatSamples-1)*after/4)
	if got, want := h.ColdBelow(now), uint64(400+3*heatSamples-1-4); got != want {
		t.Errorf("ColdBelow after the ring wrapped = %d, want %d", got, want)
	}
	if got := h.ColdBelow(now.Add(time.Hour)); got != uint64(400+3*heatSamples-1) {
		t.Errorf("ColdBelow an hour later = %d, want the last frontier", got)
	}
	var nilHeat *Heat
	if got := nilHeat.ColdBelow(now); got != ^uint64(0) {
		t.Errorf("nil Heat ColdBelow = %d, want every address cold", got)
	}
	if got := NewHeat(0, 5).ColdBelow(now); got != ^uint64(0) {
		t.Errorf("Heat with After 0: ColdBelow = %d, want every address cold", got)
	}
}

// TestHeatPlain: pages written plain are remembered until a cold base
// or a removal, and Plain hands out at most n of them, forgetting them.
func TestHeatPlain(t *testing.T) {
	h := NewHeat(time.Second, 0)
	h.wrote([]uint64{1, 2, 3, 4}, nil, nil)
	h.wrote(nil, []uint64{2}, []uint64{3})
	if n := h.PlainLen(); n != 2 {
		t.Fatalf("PlainLen = %d, want 2 (pages 1 and 4)", n)
	}
	got := h.Plain(1)
	if len(got) != 1 || (got[0] != 1 && got[0] != 4) || h.PlainLen() != 1 {
		t.Fatalf("Plain(1) = %v, then %d left; want one of pages 1 and 4, then 1 left", got, h.PlainLen())
	}
	if rest := h.Plain(10); len(rest) != 1 || rest[0] == got[0] || h.PlainLen() != 0 {
		t.Fatalf("Plain(10) = %v after %v, then %d left", rest, got, h.PlainLen())
	}
}
