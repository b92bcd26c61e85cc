#!/usr/bin/env python3
"""Where the Ps go: reads `go tool trace -d=parsed TRACE` output and prints,
for the time between the first and last state transitions, how long the two
Ps were each running a goroutine, held by one blocked in a system call, or
idle, and whether a worker (the goroutines running bench.(*worker).op) was
runnable meanwhile; then which system calls held a P while a worker waited.

usage: go tool trace -d=parsed run.trace > run.dump; python3 ptrace.py run.dump
"""
import collections
import re
import sys

G = re.compile(r'^M=-?\d+ P=(-?\d+) G=(-?\d+) StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)')
P = re.compile(r'^M=-?\d+ P=-?\d+ G=-?\d+ StateTransition Time=(\d+) ProcID=(\d+) (\w+)->(\w+)')

events, workers, entered, kept = [], set(), {}, collections.Counter()
lines = open(sys.argv[1]).read().split('\n')
for i, line in enumerate(lines):
    m = G.match(line)
    if m:
        p, cur, t, g, a, b = int(m[1]), int(m[2]), int(m[3]), int(m[4]), m[5], m[6]
        # The stack that follows is the running goroutine's (cur), which
        # for a transition of another goroutine is not g's.
        frames = []
        j = i + 1
        while cur == g and j < len(lines) and (lines[j].startswith('\t') or lines[j].endswith('Stack=')):
            s = lines[j].strip()
            if '@' in s:
                frames.append(s.split(' @')[0])
            j += 1
        if any('bench.(*worker).op' in f for f in frames):
            workers.add(g)
        if b == 'Syscall':
            own = [f for f in frames if 'bwkv/' in f and '/bench.' not in f]
            entered[g] = (t, own[0] if own else '?')
        elif a == 'Syscall' and g in entered:
            t0, fn = entered.pop(g)
            if b == 'Running':
                kept[fn] += t - t0
        events.append((t, 'g', g, b, p))
        continue
    m = P.match(line)
    if m:
        events.append((int(m[1]), 'p', int(m[2]), m[4], -1))
events.sort(key=lambda e: e[0])

gst, pst, pcur = {}, {}, {}
acc = collections.Counter()
prev = events[0][0]
for t, kind, ident, to, p in events:
    dt = t - prev
    prev = t
    run = hold = idle = 0
    for q in (0, 1):
        if pst.get(q, 'Running') == 'Idle':
            idle += 1
            continue
        s = gst.get(pcur.get(q))
        if s == 'Syscall':
            hold += 1
        elif s == 'Running':
            run += 1
    waiting = sum(1 for g in workers if gst.get(g) == 'Runnable')
    acc[(run, hold, idle, min(waiting, 1))] += dt
    if kind == 'g':
        gst[ident] = to
        if to == 'Running' and p >= 0:
            pcur[p] = ident
    else:
        pst[ident] = to
        if to == 'Idle':
            pcur.pop(ident, None)

total = sum(acc.values())
print(f'workers: {sorted(workers)}; span {total / 1e9:.2f} s')
print('Ps running  Ps held in a syscall  Ps idle  a worker runnable   time   share')
for (run, hold, idle, w), v in sorted(acc.items(), key=lambda kv: -kv[1]):
    if v / total >= 0.005:
        print(f'{run:10d}  {hold:20d}  {idle:7d}  {"yes" if w else "no":>17}  {v / 1e9:6.2f}s  {100 * v / total:5.1f}%')
print('system calls that kept their P throughout:')
for fn, v in kept.most_common(5):
    print(f'  {v / 1e9:6.3f}s  {fn}')
