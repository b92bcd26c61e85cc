module github.com/bwkv/bwkv

go 1.26.0

require (
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86
	github.com/puzpuzpuz/xsync/v3 v3.5.1
	github.com/tidwall/btree v1.8.2
	golang.org/x/sys v0.50.0
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	github.com/pingcap/errors v0.11.4 // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
)

tool honnef.co/go/tools/cmd/staticcheck
