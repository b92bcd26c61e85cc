#!/usr/bin/env python3
"""Paired comparison of kvbench result files.

usage: python3 pairs.py PREFIX A B   (reads PREFIX-A.csv and PREFIX-B.csv)

Row i of each file is one run of pair i (same seed, run back to back in
alternating order). ONLY="col=value,..." keeps only the rows matching
every column given, for files that hold more than one experiment (e.g.
ONLY=workload_id=W2,value_size=16384). Prints, per metric, each variant's median and the
median of the per-pair ratios B/A, with how many pairs are above 1.
"""
import csv
import os
import statistics as st
import sys

prefix, variants = sys.argv[1], sys.argv[2:]


only = [kv.split('=', 1) for kv in os.environ.get('ONLY', '').split(',') if kv]


def load(path):
    rows = list(csv.reader(open(path)))
    head = rows[0]
    keep = [r for r in rows[1:] if r and r[0] != head[0]]
    return head, [r for r in keep if all(r[head.index(k)] == v for k, v in only)]


data = {v: load(f'{prefix}-{v}.csv') for v in variants}
for name in ['ops', 'cpu_us_per_op', 'hdr_p99_us', 'write_amp']:
    cols = {v: [float(r[h.index(name)]) for r in rows] for v, (h, rows) in data.items()}
    n = min(len(c) for c in cols.values())
    base = cols[variants[0]]
    out = f'{name}: ' + '  '.join(f'{v} med {st.median(cols[v][:n]):.4g}' for v in variants)
    for v in variants[1:]:
        r = [cols[v][i] / base[i] for i in range(n)]
        above = sum(x > 1 for x in r)
        out += f' | {v}/{variants[0]} med {st.median(r):.3f} ({above}/{n} >1) ' + ' '.join(f'{x:.2f}' for x in r)
    print(out)
