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
// overrides); the detector makes each seed three to four times slower and
// there are seven option sets, so the race run takes a few (prod_test.sh
// fast runs more without the detector, stress thousands). At 80 the model
// alone took 316 s of the package's 1035 s here, and CI's slower machine
// ran the package past its 20-minute timeout.
const modelSeedsDefault = 30

// scanSMORoundsDefault is TestScanSiblingCrossingUnderSplitsAndMerges'
// snapshot scans (BWKV_SCAN_SMO_ROUNDS overrides).
const scanSMORoundsDefault = 1000
