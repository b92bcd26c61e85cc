//go:build !race

package bwkv_test

const hotWritesDefault = 1_000_000

// hotIncrementsDefault is each goroutine's increments in the hot-counter
// test (BWKV_HOT_INCREMENTS overrides).
const hotIncrementsDefault = 5_000

// raceEnabled: the race detector is on (sync.Pool drops items at random).
const raceEnabled = false

// crashRoundsDefault is TestCrashKill9's rounds per durability mode
// (BWKV_CRASH_ROUNDS overrides).
const crashRoundsDefault = 50

// modelSeedsDefault is TestModel's seeds per option set (BWKV_MODEL_SEEDS
// overrides; prod_test.sh's long modes and a soak set more). 100 keeps
// the package's run without the race detector inside go test's default
// 10-minute timeout on 2 cores (TestModel took 448 s of 615 s at 200).
const modelSeedsDefault = 100

// scanSMORoundsDefault is TestScanSiblingCrossingUnderSplitsAndMerges'
// snapshot scans (BWKV_SCAN_SMO_ROUNDS overrides).
const scanSMORoundsDefault = 4000
