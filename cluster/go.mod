module github.com/bwkv/bwkv/cluster

go 1.26.0

replace github.com/bwkv/bwkv => ../

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/bwkv/bwkv v0.0.0-00010101000000-000000000000
	github.com/hashicorp/go-hclog v1.6.3
	github.com/hashicorp/raft v1.8.0
	github.com/hashicorp/raft-boltdb/v2 v2.3.0
)

require (
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/boltdb/bolt v1.3.1 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/pingcap/errors v0.11.4 // indirect
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86 // indirect
	github.com/puzpuzpuz/xsync/v3 v3.5.1 // indirect
	go.etcd.io/bbolt v1.3.11 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
