package bench

import (
	"bytes"
	"testing"
)

func TestAppendKeyFormat(t *testing.T) {
	for _, tc := range []struct {
		id      uint64
		keySize int
		want    string
	}{
		{0, 16, "s000_0000000000x"},
		{0x2a, 32, "s02a_000000002axxxxxxxxxxxxxxxxx"},
		{1025, 16, "s001_0000000401x"},
		{1023, 20, "s3ff_00000003ffxxxxx"},
		{0xabcdef0123, 16, "s123_abcdef0123x"},
		{7, 10, "s007_0000000007"},                       // never truncated
		{1 << 44, 16, "s000_100000000000"},               // wider than 10 digits: not cut
		{200000, 32, "s140_0000030d40xxxxxxxxxxxxxxxxx"}, // 200000 % 1024 = 0x140
	} {
		got := string(AppendKey(nil, tc.id, tc.keySize))
		if got != tc.want {
			t.Errorf("AppendKey(%d, %d) = %q, want %q", tc.id, tc.keySize, got, tc.want)
		}
	}
}

func TestAppendKeyNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		buf = AppendKey(buf[:0], 123456, 32)
		buf = AppendPrefix(buf[:0], 123456)
	})
	if allocs != 0 {
		t.Fatalf("AppendKey allocates %.1f times per call with a reused buffer", allocs)
	}
}

func TestPrefixBounds(t *testing.T) {
	p := AppendPrefix(nil, 1024+0x2a)
	if string(p) != "s02a_" {
		t.Fatalf("prefix = %q", p)
	}
	hi := PrefixUpperBound(nil, p)
	if string(hi) != "s02a`" {
		t.Fatalf("upper bound = %q", hi)
	}
	// Every key of the prefix lies in [p, hi) and keys of the next group do not.
	for _, id := range []uint64{0x2a, 1024 + 0x2a, 1<<30*1024 + 0x2a} {
		k := AppendKey(nil, id, 32)
		if bytes.Compare(k, p) < 0 || bytes.Compare(k, hi) >= 0 {
			t.Errorf("key %q outside [%q, %q)", k, p, hi)
		}
	}
	if k := AppendKey(nil, 0x2b, 32); bytes.Compare(k, hi) < 0 {
		t.Errorf("key %q of the next group below %q", k, hi)
	}
	if got := PrefixUpperBound(nil, []byte{'a', 0xff}); string(got) != "b" {
		t.Errorf("carry: got %q", got)
	}
}

func TestBulkOrderSeqIsAscending(t *testing.T) {
	const n = 5000
	ids, err := BulkOrder(n, "seq", 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != n {
		t.Fatalf("%d ids", len(ids))
	}
	seen := make([]bool, n)
	var prev []byte
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
		k := AppendKey(nil, uint64(id), 32)
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			t.Fatalf("seq order not ascending: %q then %q", prev, k)
		}
		prev = k
	}
	rnd, err := BulkOrder(n, "random", 7)
	if err != nil {
		t.Fatal(err)
	}
	seen = make([]bool, n)
	for _, id := range rnd {
		seen[id] = true
	}
	for id, ok := range seen {
		if !ok {
			t.Fatalf("random order misses id %d", id)
		}
	}
}
