package delta

import (
	"unsafe"

	"github.com/bwkv/bwkv/internal/base"
)

// PrefetchHeader hints the caches to load the base's own fields (its
// fences, search prefix and slice headers), which a scan's crossing into
// it reads first. A hint: it changes nothing.
func (b *Base) PrefetchHeader() {
	base.Prefetch(unsafe.Pointer(b), int(unsafe.Sizeof(*b)))
}

// PrefetchEntries hints the caches to load the base's entry array and its
// keys, in that order, which a forward scan of it reads. A hint: it
// changes nothing.
func (b *Base) PrefetchEntries() {
	if len(b.ents) > 0 {
		base.Prefetch(unsafe.Pointer(&b.ents[0]), len(b.ents)*int(unsafe.Sizeof(b.ents[0])))
	}
	if len(b.keys) > 0 {
		base.Prefetch(unsafe.Pointer(&b.keys[0]), len(b.keys))
	}
}

// PrefetchValue hints the caches to load entry i's value (at most its
// first 2 KiB), which a point read that matches the entry copies out. A
// hint: it changes nothing.
func (b *Base) PrefetchValue(i int) {
	e := &b.ents[i]
	if e.vl > 0 {
		base.Prefetch(unsafe.Pointer(&b.vals[e.vo]), int(e.vl))
	}
}
