#!/usr/bin/env python3
"""Per-operation difference of two pprof -top -unit=ns listings.

usage: python3 cmp.py A.txt OPS_A B.txt OPS_B [N]

Each listing is `go tool pprof -top [-cum] -nodecount=400 -unit=ns X.cpu`;
OPS is the run's total_op (its CSV). Prints the N (default 30) functions
whose samples per operation grew most from A to B: growth, A, B in ns.
"""
import sys


def load(path):
    d = {}
    for line in open(path):
        p = line.split()
        if len(p) >= 6 and p[1].endswith('%') and p[4].endswith('%'):
            name = ' '.join(p[5:]).replace(' (inline)', '')
            flat = 0.0 if p[0] == '0' else float(p[0][:-2])
            cum = 0.0 if p[3] == '0' else float(p[3][:-2])
            d[name] = (flat, cum)
    return d


a, na, b, nb = sys.argv[1], float(sys.argv[2]), sys.argv[3], float(sys.argv[4])
n = int(sys.argv[5]) if len(sys.argv) > 5 else 30
col = 1 if '-cum' in a else 0  # the -cum listings are compared on cum
da, db = load(a), load(b)
rows = []
for k in set(da) | set(db):
    x = da.get(k, (0, 0))[col] / na
    y = db.get(k, (0, 0))[col] / nb
    rows.append((y - x, x, y, k))
rows.sort(reverse=True)
for r in rows[:n]:
    print('%7.1f %7.1f %7.1f %s' % r)
