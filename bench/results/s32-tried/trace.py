#!/usr/bin/env python3
"""Figures of sections 3 and 4 from a kvbench execution trace.

    kvbench run ... --trace T          (the W4 or durable command of README.md)
    go tool trace -d=parsed T > T.txt
    python3 trace.py held T.txt        # section 3: processors held in syscalls
    python3 trace.py fsyncs T.txt      # section 4: the log's fsyncs and the gaps

held: the share of the trace each processor was running, and, for each
system call, the time from its start until it returned or
another thread ran a goroutine on its processor (a handoff), summed per
bwkv caller. fsyncs: each fsync the log's group commit issued (a syscall
whose stack holds wal.(*Writer).fsync), its duration, and the gap from
its end to the next one's start.
"""
import re
import statistics as st
import sys

HDR = re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) (\S+) Time=(\d+)')
PROC = re.compile(r'Time=(\d+) ProcID=(\d+) (\S+)->(\S+)')
GO = re.compile(r'GoID=(\d+) (\S+)->(\S+)')


def events(path):
    """Yield (time, M, P, goid, from, to, stack frames) of goroutine
    transitions, and (time, M, P, None, ...) for every other event."""
    lines = open(path).read().split('\n')
    for i, line in enumerate(lines):
        m = HDR.match(line)
        if not m:
            continue
        t, M, P = int(m.group(5)), int(m.group(1)), int(m.group(2))
        g = GO.search(line) if m.group(4) == 'StateTransition' else None
        if not g:
            yield t, M, P, None, None, None, []
            continue
        frames, j = [], i + 1
        while j < len(lines) and (lines[j].startswith('\t') or lines[j].startswith(('TransitionStack', 'Stack'))):
            s = lines[j].strip()
            if ' @ ' in s:
                frames.append(s.split(' @')[0].replace('github.com/bwkv/bwkv/', ''))
            j += 1
        yield t, M, P, int(g.group(1)), g.group(2), g.group(3), frames


def caller(frames):
    for f in frames:
        if not f.startswith(('runtime.', 'internal/', 'syscall.', 'golang.org', 'os.', 'vfs.', 'sync.')) and '/' not in f:
            return f
    return '?'


def running(path):
    """Fraction of the trace each processor spent in the Running state."""
    state, since, run, t0, t1 = {}, {}, {}, None, None
    for line in open(path):
        m = PROC.search(line) if 'StateTransition' in line else None
        if not m:
            continue
        t, p = int(m.group(1)), int(m.group(2))
        t0 = t if t0 is None else t0
        t1 = t
        if state.get(p) == 'Running':
            run[p] = run.get(p, 0) + t - since[p]
        state[p], since[p] = m.group(4), t
    for p, st_ in state.items():
        if st_ == 'Running':
            run[p] = run.get(p, 0) + t1 - since[p]
    return {p: v / (t1 - t0) for p, v in sorted(run.items())}


def held(path):
    pending, by, t0, t1 = {}, {}, None, None
    calls, begun = {}, {}  # caller -> [count, seconds in the call]; goid -> (start, caller)
    for t, M, P, gid, a, b, frames in events(path):
        t0 = t if t0 is None else t0
        t1 = t
        if P >= 0 and P in pending and M != pending[P][1]:
            s, _, fn = pending.pop(P)
            by[fn] = by.get(fn, 0) + t - s
        if gid is None:
            continue
        if a == 'Running' and b == 'Syscall' and P >= 0:
            pending[P] = (t, M, caller(frames))
            begun[gid] = (t, caller(frames))
        elif a == 'Syscall':
            if gid in begun:
                s, fn = begun.pop(gid)
                c = calls.setdefault(fn, [0, 0])
                c[0] += 1
                c[1] += t - s
            if P >= 0 and P in pending and pending[P][1] == M:
                s, _, fn = pending.pop(P)
                by[fn] = by.get(fn, 0) + t - s
    print('processors running:', ', '.join(f'P{p} {f:.0%}' for p, f in running(path).items()))
    print(f'trace span {(t1 - t0) / 1e9:.2f} s; processor-seconds held in system calls before a return or handoff:')
    for fn, d in sorted(by.items(), key=lambda x: -x[1])[:10]:
        n, total = calls.get(fn, [0, 0])
        print(f'  {d / 1e9:7.3f} s  {fn}  ({n} calls, {total / 1e9:.3f} s in them)')


def fsyncs(path):
    begin, iv = {}, []
    for t, M, P, gid, a, b, frames in events(path):
        if gid is None:
            continue
        if a == 'Running' and b == 'Syscall' and any('wal.(*Writer).fsync' in f for f in frames):
            begin[gid] = t
        elif a == 'Syscall' and gid in begin:
            iv.append((begin.pop(gid), t))
    iv.sort()
    d = [(e - s) / 1e3 for s, e in iv]
    gaps = [(iv[k + 1][0] - iv[k][1]) / 1e3 for k in range(len(iv) - 1)]
    span = (iv[-1][1] - iv[0][0]) / 1e9
    print(f'{len(iv)} fsyncs in {span:.2f} s ({len(iv) / span:.0f}/s); duration median {st.median(d):.0f} us, '
          f'mean {st.mean(d):.0f} us; gap to the next median {st.median(gaps):.0f} us, mean {st.mean(gaps):.0f} us; '
          f'fsyncing {sum(d) / 1e6 / span:.0%} of the time')


if __name__ == '__main__':
    {'held': held, 'fsyncs': fsyncs}[sys.argv[1]](sys.argv[2])
