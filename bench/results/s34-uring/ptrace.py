#!/usr/bin/env python3
"""Where the Ps go while a writer waits: reads `go tool trace -d=parsed TRACE`
output with the parser of ../s32-tried/trace.py and prints, for the span of
the trace, how long the two Ps were each running a goroutine, held by one
blocked in a system call, or idle, and whether a worker (a goroutine that
runs bench.(*worker).op) was runnable meanwhile. A P counts as held while
the goroutine it last ran is in a system call and the P has not gone idle
or run another goroutine. Then the system calls that returned with their
P still held (it was not taken back meanwhile), by their first bwkv frame.
`trace.py held` of session 32 gives the processor-seconds each caller's
system calls held.

usage: go tool trace -d=parsed run.trace > run.dump; python3 ptrace.py run.dump
"""
import collections
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 's32-tried'))
from trace import events  # noqa: E402  (session 32's parser of the dump)

PROC = re.compile(r'Time=(\d+) ProcID=(\d+) (\S+)->(\S+)')


def main(path):
    procs = {}  # time -> (P, new state) of processor transitions
    for line in open(path):
        m = PROC.search(line) if 'StateTransition' in line else None
        if m:
            procs.setdefault(int(m.group(1)), []).append((int(m.group(2)), m.group(4)))
    evs, workers, entered, kept = [], set(), {}, collections.Counter()
    for t, _, p, g, a, b, frames in events(path):
        for q, to in procs.pop(t, []):
            evs.append((t, 'p', q, to, -1))
        if g is None:
            continue
        # A transition out of Running is the goroutine's own, so its
        # stack is g's; other transitions carry the stack of whoever ran.
        if a == 'Running':
            if any('bench.(*worker).op' in f for f in frames):
                workers.add(g)
            if b == 'Syscall':
                own = [f for f in frames if '/' not in f and not f.startswith(('runtime.', 'syscall.', 'internal/', 'os.', 'bench.'))]
                entered[g] = (t, own[0] if own else '?')
        elif a == 'Syscall' and g in entered:
            t0, fn = entered.pop(g)
            if b == 'Running':
                kept[fn] += t - t0
        evs.append((t, 'g', g, b, p))

    gst, pst, pcur = {}, {}, {}
    acc = collections.Counter()
    prev = evs[0][0]
    for t, kind, ident, to, p in evs:
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
        waiting = any(gst.get(g) == 'Runnable' for g in workers)
        acc[(run, hold, idle, waiting)] += t - prev
        prev = t
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


if __name__ == '__main__':
    main(sys.argv[1])
