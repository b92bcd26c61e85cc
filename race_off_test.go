//go:build !race

package bwkv_test

const hotWritesDefault = 1_000_000
