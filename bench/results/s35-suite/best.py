#!/usr/bin/env python3
"""Per case: bwkv, the best peer by ops/s, the ratio, p99s (hdr), CPU/op and write amp."""
import csv, sys
from collections import OrderedDict
rows = list(csv.DictReader(open(sys.argv[1])))
cases = OrderedDict()
for r in rows:
    k = (r['workload_id'], r['threads'], r['key_size'] + '/' + r['value_size'], r['prefill_keys'],
         r['durability_mode'], r['cache_bytes'], r['value_threshold'], r['value_kind'], r['compression'])
    cases.setdefault(k, []).append(r)
print('| case | workload | threads | bwkv ops/s | best peer ops/s | ratio | bwkv p99 µs | lowest peer p99 µs | CPU µs/op bwkv / best peer |')
print('|---|---|---|---|---|---|---|---|---|')
for k, rs in cases.items():
    b = [r for r in rs if r['engine'] == 'bwkv']
    peers = [r for r in rs if r['engine'] != 'bwkv']
    if not b or not peers:
        continue
    b = b[0]
    bp = max(peers, key=lambda r: float(r['ops']))
    lp = min(float(r['hdr_p99_us']) for r in peers)
    wl, th, prof, n, dur, cache, vt, kind, comp = k
    name = f"{dur} {int(n)//1000}k {prof}"
    if int(cache) != 268435456: name += f" c{int(cache)>>20}MiB"
    if vt != '8192': name += f" vt{vt}"
    if kind != 'random': name += f" {kind}"
    if comp != 'none': name += f" {comp}"
    if int(n) >= 2000000: name += " (cache 256MiB)"
    blind = ' (blind)' if bp['engine'] == 'pebble' and bp['update_pct'] != '0' else ''
    print(f"| {name} | {wl} | {th} | {float(b['ops']):,.0f} | {bp['engine']}{blind} {float(bp['ops']):,.0f} | "
          f"{float(b['ops'])/float(bp['ops']):.2f}x | {float(b['hdr_p99_us']):.0f} | {lp:.0f} | "
          f"{float(b['cpu_us_per_op']):.1f} / {float(bp['cpu_us_per_op']):.1f} |")
