module github.com/bwkv/bwkv

go 1.26.0

require github.com/puzpuzpuz/xsync/v3 v3.5.1
