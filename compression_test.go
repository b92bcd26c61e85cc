package bwkv_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bwkv/bwkv"
)

// textValue is a JSON-like record of about size bytes: compressible as
// real documents are (repeated field names, small alphabets).
func textValue(rng *rand.Rand, i, size int) string {
	var b strings.Builder
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	fmt.Fprintf(&b, `{"id":%d,"user":"user%06d","active":%v,"tags":[`, i, rng.IntN(100000), rng.IntN(2) == 0)
	for b.Len() < size-40 {
		fmt.Fprintf(&b, `{"k":"%s","n":%d},`, words[rng.IntN(len(words))], rng.IntN(1000))
	}
	b.WriteString(`{}],"end":true}`)
	return b.String()
}

// TestCompressionCodecs runs the GC workload with text values under each
// codec: every value reads back before and after a reopen, the GC's
// self-check (on for the package) finds its accounting exact with
// compressed frame sizes, and the data files of S2 and zstd are well
// below those of CompressionNone.
func TestCompressionCodecs(t *testing.T) {
	const keys, writes, valSize = 1500, 6000, 400
	sizes := map[bwkv.Compression]int64{}
	for _, c := range []bwkv.Compression{bwkv.CompressionNone, bwkv.CompressionS2, bwkv.CompressionZstd} {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			o := gcOpts()
			o.Compression = c
			// Every page is written again within a second here: no page
			// counts as hot, so every frame is compressed (the hot pages'
			// plain frames are TestCompressionHotPages').
			db, err := bwkv.Open(dir, bwkv.WithTestHotAfter(o, -1))
			if err != nil {
				t.Fatal(err)
			}
			if got := db.Options().Compression; got != c {
				t.Fatalf("Options().Compression = %v, want %v", got, c)
			}
			rng := rand.New(rand.NewPCG(1, uint64(c)))
			latest := map[string]string{}
			for i := range writes {
				k := gcKey(i % keys)
				if i >= keys {
					k = gcKey(rng.IntN(keys))
				}
				v := textValue(rng, i, valSize)
				if err := db.Put([]byte(k), []byte(v)); err != nil {
					t.Fatal(err)
				}
				latest[k] = v
			}
			if err := bwkv.CollectGarbage(db); err != nil {
				t.Fatal(err)
			}
			checkLatest(t, db, latest)
			st := db.Stats()
			if st.BackgroundErrors != 0 {
				t.Fatalf("%d background errors (the GC self-check)", st.BackgroundErrors)
			}
			data, _ := dataDirSize(t, dir)
			sizes[c] = data
			t.Logf("%v: data files %d bytes, accounted live %d", c, data, st.GC.LiveBytes)
			db.Close()
			db = reopenGC(t, dir) // gcOpts asks for no codec: the stored one wins
			if got := db.Options().Compression; got != c {
				t.Fatalf("reopened Options().Compression = %v, want the stored %v", got, c)
			}
			checkLatest(t, db, latest)
		})
	}
	for _, c := range []bwkv.Compression{bwkv.CompressionS2, bwkv.CompressionZstd} {
		if sizes[c] == 0 || sizes[c] > sizes[bwkv.CompressionNone]*7/10 {
			t.Errorf("%v data files %d bytes, none %d: want at most 70%%", c, sizes[c], sizes[bwkv.CompressionNone])
		}
	}
}

// TestCompressionStoredWins: a database created with S2 and reopened with
// zstd keeps reading its frames and writes new ones with S2; the override
// is logged.
func TestCompressionStoredWins(t *testing.T) {
	dir := t.TempDir()
	o := gcOpts()
	o.Compression = bwkv.CompressionS2
	db, err := bwkv.Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 2))
	latest := map[string]string{}
	put := func(db *bwkv.DB, from, to int) {
		for i := from; i < to; i++ {
			k, v := gcKey(i), textValue(rng, i, 300)
			if err := db.Put([]byte(k), []byte(v)); err != nil {
				t.Fatal(err)
			}
			latest[k] = v
		}
	}
	put(db, 0, 500)
	if err := db.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	db.Close()

	var logged bytes.Buffer
	o2 := gcOpts()
	o2.Compression, o2.ZstdLevel = bwkv.CompressionZstd, 19
	o2.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	db, err = bwkv.Open(dir, o2)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := db.Options(); got.Compression != bwkv.CompressionS2 || got.ZstdLevel != 0 {
		t.Fatalf("Options() Compression %v level %d, want the stored s2, level 0", got.Compression, got.ZstdLevel)
	}
	if !strings.Contains(logged.String(), "stored format options win") || !strings.Contains(logged.String(), "s2") {
		t.Fatalf("override not logged: %q", logged.String())
	}
	put(db, 500, 1000)
	if err := bwkv.CollectGarbage(db); err != nil {
		t.Fatal(err)
	}
	checkLatest(t, db, latest)
}

// TestCompressionOptionsValidate: an unknown codec and a zstd level that
// would act on nothing are rejected.
func TestCompressionOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		o    bwkv.Options
		want string
	}{
		{bwkv.Options{Compression: 3}, "Compression 3"},
		{bwkv.Options{Compression: -1}, "Compression -1"},
		{bwkv.Options{Compression: bwkv.CompressionS2, ZstdLevel: 3}, "ZstdLevel 3 without CompressionZstd"},
		{bwkv.Options{Compression: bwkv.CompressionZstd, ZstdLevel: 23}, "ZstdLevel 23"},
		{bwkv.Options{Compression: bwkv.CompressionZstd, ZstdLevel: -1}, "ZstdLevel -1"},
	} {
		err := tc.o.Clone().EnsureDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate = %v, want %q", tc.o, err, tc.want)
		}
	}
	ok := bwkv.Options{Compression: bwkv.CompressionZstd, ZstdLevel: 19}
	if err := ok.Clone().EnsureDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestCompressionHotPages: a page written again soon after its previous
// checkpoint is hot, and its frames are stored plain (the next
// checkpoint supersedes them); once the database goes quiet, the idle
// settle rewrites those pages and they are stored compressed. Every
// rewrite within the test is hot (an hour's window). Each key is written
// DeltaChainMax+1 times in a row, so every page ends a round as a lone
// base, which the settle's squash of delta chains leaves alone, and the
// GC is paused: only the settle's rewrite of the plain pages can
// compress them. Their live bytes with S2 must come out well below those
// of CompressionNone.
func TestCompressionHotPages(t *testing.T) {
	const keys, rounds, valSize, chainMax = 1500, 2, 400, 4
	live := map[bwkv.Compression]int64{}
	for _, c := range []bwkv.Compression{bwkv.CompressionNone, bwkv.CompressionS2} {
		t.Run(c.String(), func(t *testing.T) {
			dir := t.TempDir()
			o := gcOpts()
			o.Compression, o.DeltaChainMax = c, chainMax
			o = bwkv.WithTestSettle(bwkv.WithTestGCPaused(bwkv.WithTestHotAfter(o, time.Hour)), 10*time.Millisecond, 50*time.Millisecond)
			db, err := bwkv.Open(dir, o)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			rng := rand.New(rand.NewPCG(2, 2))
			latest := map[string]string{}
			for r := range rounds {
				for i := range keys {
					k := gcKey(i)
					for range chainMax + 1 {
						v := textValue(rng, r*keys+i, valSize)
						if err := db.Put([]byte(k), []byte(v)); err != nil {
							t.Fatal(err)
						}
						latest[k] = v
					}
				}
				if err := db.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			plain := db.Stats().Checkpoint.FramesPlain
			if c == bwkv.CompressionNone && plain != 0 {
				t.Fatalf("%d frames counted plain without a codec", plain)
			}
			if c != bwkv.CompressionNone && plain == 0 {
				t.Fatal("no frame stored plain: every page was rewritten within the hot window")
			}
			// Settle: wait until the accounted live bytes stop changing.
			var last int64
			for stable, deadline := 0, time.Now().Add(30*time.Second); stable < 10 && time.Now().Before(deadline); {
				time.Sleep(50 * time.Millisecond)
				if n := db.Stats().GC.LiveBytes; n == last {
					stable++
				} else {
					stable, last = 0, n
				}
			}
			checkLatest(t, db, latest)
			st := db.Stats()
			if st.BackgroundErrors != 0 {
				t.Fatalf("%d background errors", st.BackgroundErrors)
			}
			live[c] = last
			t.Logf("%v: settled live frame bytes %d; %d frames stored plain while hot, %d written in all", c, last, plain, st.Checkpoint.FramesWritten)
		})
	}
	if s2, none := live[bwkv.CompressionS2], live[bwkv.CompressionNone]; s2 == 0 || s2 > none*7/10 {
		t.Errorf("settled S2 live bytes %d, none %d: want at most 70%%", s2, none)
	}
}
