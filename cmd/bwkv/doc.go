// Command bwkv is bwkv's command-line tool, built on cobra.
//
// Internal to bwkv; no API stability promise.
//
// The database directory is the first argument, except for restore, which
// reads the backup file given first into the new directory given last:
//
//	bwkv get DIR KEY                  [--format text|hex|json] [--hex]
//	bwkv put DIR KEY VALUE            [--format text|hex|json] [--hex]
//	bwkv del DIR KEY                  [--format text|hex|json] [--hex]
//	bwkv scan DIR [--prefix P] [--start S --end E] [--reverse] [--limit N]
//	              [--keys-only] [--format text|hex|json]
//	bwkv dump DIR                     [--format text|hex|json] [--keys-only]
//	bwkv check DIR                    exit 1 and a list of problems on any
//	bwkv stats DIR                    [--json]
//	bwkv wal dump DIR
//	bwkv manifest dump DIR
//	bwkv frames DIR FILE
//	bwkv backup DIR FILE
//	bwkv restore FILE DIR
//	bwkv compact DIR
//	bwkv demo                         [--dir D] [--keys N] [--threads T] [--secs S]
//
// Read-only commands (get, scan, dump, check, stats, wal dump, manifest
// dump, frames, backup) open the database with Options.ReadOnly: they
// write no byte, even to a directory that needs recovery (it runs in
// memory), and take a shared lock. --format json prints one JSON object
// per line with the key and value as strings (invalid UTF-8 is replaced);
// --format hex is binary-safe. Errors print once on stderr, prefixed
// "bwkv: "; exit 1 is a failed command, exit 2 a usage error. Progress
// bars appear only when stdout is a terminal.
package main
