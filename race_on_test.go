//go:build race

package bwkv_test

// Under the race detector the long loops run shorter.
const hotWritesDefault = 200_000
