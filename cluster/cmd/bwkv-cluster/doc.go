// Command bwkv-cluster is an example server: one member of a replicated
// bwkv cluster (package cluster) with a small JSON-over-HTTP API.
//
//	bwkv-cluster -id n1 -dir data/n1 -peers n1=127.0.0.1:7001=127.0.0.1:8001,n2=...,n3=...
//
// Each -peers entry is id=raftAddr=httpAddr; every initial member gets the
// same list, and a node's own entry gives its listen addresses. The API:
//
//	GET    /kv/{key}          linearizable read (?stale=1: local read on any node)
//	PUT    /kv/{key}          body = value
//	DELETE /kv/{key}
//	POST   /cas               {"key":..., "old":... or null (absent), "new":...} or {"key":..., "version":N, "new":...}
//	GET    /status            this node's view: leader, applied index
//	POST   /join              {"id":..., "raft_addr":...} (leader only)
//	POST   /remove            {"id":...} (leader only)
//	POST   /transfer          hand leadership to another voter
//
// Writes and linearizable reads sent to a follower are redirected (307) to
// the leader's HTTP address. Values are JSON strings. See cluster/README.md
// for a 3-node cluster on loopback.
package main
