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
// overrides).
const modelSeedsDefault = 200
