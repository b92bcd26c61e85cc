//go:build race

package bwkv_test

// Under the race detector the long loops run shorter.
const hotWritesDefault = 200_000

// hotIncrementsDefault is each goroutine's increments in the hot-counter
// test (BWKV_HOT_INCREMENTS overrides).
const hotIncrementsDefault = 500

// raceEnabled: the race detector is on (sync.Pool drops items at random).
const raceEnabled = true

// crashRoundsDefault is TestCrashKill9's rounds per durability mode
// (BWKV_CRASH_ROUNDS overrides): every round starts a race-instrumented
// child and waits for its first commit, so the race run keeps to a few;
// prod_test.sh runs the many rounds without the detector.
const crashRoundsDefault = 12

// modelSeedsDefault is TestModel's seeds per option set (BWKV_MODEL_SEEDS
// overrides); the detector makes each seed several times slower, and the
// option sets grew to seven, so the race run takes fewer (prod_test.sh
// stress runs thousands without it).
const modelSeedsDefault = 80
