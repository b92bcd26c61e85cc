// Command bwkv is bwkv's command-line tool.
//
// Internal to bwkv; no API stability promise.
//
//	bwkv demo [-dir DIR] [-keys N] [-threads T] [-secs S]
//	    runs a mixed read/update/scan workload on a database in DIR (a
//	    temporary directory by default, removed afterwards) and prints the
//	    throughput and the engine's statistics.
//	bwkv check DIR
//	    opens the database in DIR and runs the structural check.
//	bwkv stats DIR
//	    opens the database in DIR and prints its statistics.
package main
