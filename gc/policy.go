package gc

import (
	"cmp"
	"slices"

	"github.com/bwkv/bwkv/manifest"
)

// Policy decides which data files a collection round takes.
type Policy struct {
	// LiveRatio: a file whose live bytes are below this fraction of its
	// total is a victim.
	LiveRatio float64
	// SpaceAmp: while the data files' total bytes exceed this multiple of
	// their live bytes, the least-live files are victims too, whatever
	// their ratio (below MaxVictimRatio).
	SpaceAmp float64
	// RoundBytes bounds the victim bytes one round reads (at least one
	// victim is always taken).
	RoundBytes int64
	// FileBytes bounds the live bytes one rewrite copies into its output
	// file (at least one victim per rewrite).
	FileBytes int64
	// MergeSmall: once this many files (not otherwise victims) are small,
	// below FileBytes/4, they are victims too, so their frames merge into
	// files of about FileBytes and the file count stays O(data size /
	// FileBytes) however small the checkpoints (0: never). Each byte is
	// copied by such merges only a few times: a merged file is small
	// again only while it is below FileBytes/4.
	MergeSmall int
}

// busySlack and busyRatioDiv: a round run while writes go on lets the
// data files hold busySlack times GCSpaceAmp's slack (1.25 -> 2.5) before
// it takes files for the space amplification alone, and takes files by
// ratio only below LiveRatio/busyRatioDiv (0.5 -> 1/16). Under steady
// random updates a file's live share keeps falling while it waits, so a
// round then finds victims with little left live and the GC copies little
// per byte it reclaims; the settled rounds of an idle database and of
// DB.Checkpoint bring the files back within the options' targets, in
// idle time. Paired runs (200k x 1 KiB W4, bench/results/s28-gcbusy):
// against 1/4 and 1.6, 16 pairs, median 1.05x the throughput, write
// amplification 4.84 -> 4.61, CPU per operation -3%, the directory about
// 10% larger during the run.
const (
	busySlack    = 6
	busyRatioDiv = 8
)

// Busy returns the policy of a round run while writes go on (after a
// publish or a retry): LiveRatio divided by busyRatioDiv, SpaceAmp's slack
// times busySlack. Files with nothing live are victims under both.
func (p Policy) Busy() Policy {
	p.LiveRatio /= busyRatioDiv
	p.SpaceAmp = 1 + busySlack*(p.SpaceAmp-1)
	return p
}

// MaxVictimRatio: a file at least this live is never rewritten, whatever
// the space amplification: copying it would reclaim almost nothing.
const MaxVictimRatio = 0.9

// ratio returns f's live fraction (0 for an empty file: nothing to keep).
func ratio(f manifest.FileMeta) float64 {
	if f.Total <= 0 {
		return 0
	}
	return float64(f.Live) / float64(f.Total)
}

// Choose returns the victims of one round in the order to collect them:
// files with nothing live first, then by ascending live ratio (older
// files first among equals), while the round's byte budget lasts. A file
// is a victim when nothing in it is live, when its ratio is below
// LiveRatio, or when the space amplification of what would remain after
// the victims so far is still above SpaceAmp (and the file is below
// MaxVictimRatio). skip excludes files (nil: none). O(files log files).
func Choose(files []manifest.FileMeta, p Policy, skip func(manifest.FileID) bool) []manifest.FileMeta {
	cand := make([]manifest.FileMeta, 0, len(files))
	var total, live int64
	for _, f := range files {
		total += f.Total
		live += f.Live
		if skip == nil || !skip(f.ID) {
			cand = append(cand, f)
		}
	}
	slices.SortFunc(cand, func(a, b manifest.FileMeta) int {
		return cmp.Or(cmp.Compare(ratio(a), ratio(b)), cmp.Compare(a.ID, b.ID)) // ratio is never NaN
	})
	var out []manifest.FileMeta
	var read int64
	for _, f := range cand {
		if len(out) > 0 && read+f.Total > p.RoundBytes {
			break
		}
		r := ratio(f)
		amp := float64(total) / float64(max(live, 1))
		if !(f.Live == 0 || r < p.LiveRatio || (amp > p.SpaceAmp && r < MaxVictimRatio)) {
			break // sorted by ratio: no later file qualifies by ratio either
		}
		out = append(out, f)
		read += f.Total
		total -= f.Total - f.Live // a rewrite keeps only the live bytes
	}
	return appendSmall(out, cand, p, read)
}

// appendSmall adds the small files of cand not in out, oldest first, when
// there are at least p.MergeSmall of them, within the round's budget.
func appendSmall(out, cand []manifest.FileMeta, p Policy, read int64) []manifest.FileMeta {
	if p.MergeSmall <= 0 {
		return out
	}
	var small []manifest.FileMeta
	for _, f := range cand[len(out):] { // cand is sorted; out is its prefix
		if f.Total < p.FileBytes/4 {
			small = append(small, f)
		}
	}
	if len(small) < max(p.MergeSmall, 2) {
		return out
	}
	slices.SortFunc(small, func(a, b manifest.FileMeta) int { return cmp.Compare(a.ID, b.ID) })
	for _, f := range small {
		if len(out) > 0 && read+f.Total > p.RoundBytes {
			break
		}
		out = append(out, f)
		read += f.Total
	}
	return out
}

// Batches splits victims (as Choose orders them) into rewrites: each
// batch's live bytes stay within FileBytes, except a batch of one victim.
func Batches(victims []manifest.FileMeta, p Policy) [][]manifest.FileMeta {
	var out [][]manifest.FileMeta
	var cur []manifest.FileMeta
	var live int64
	for _, f := range victims {
		if len(cur) > 0 && live+f.Live > p.FileBytes {
			out = append(out, cur)
			cur, live = nil, 0
		}
		cur = append(cur, f)
		live += f.Live
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
