# Thread states of a running process, sampled N times 20 ms apart from /proc/PID/task/*/{stat,syscall}:
# state (R running or runnable, S sleeping, D in the kernel), syscall, and for file syscalls the
# file name suffix. Prints the mean number of threads per (state, syscall, file).
# usage: python3 threadstates.py PID [N]   (as root or the process owner)
import os,sys,time,collections
pid=sys.argv[1]; c=collections.Counter()
names={0:'read',1:'write',17:'pread',18:'pwrite',74:'fsync',75:'fdatasync',202:'futex',232:'epoll_wait',281:'epoll_pwait',35:'nanosleep',24:'sched_yield',263:'unlinkat',162:'sync'}
N=int(sys.argv[2]) if len(sys.argv)>2 else 300
for i in range(N):
    for t in os.listdir(f'/proc/{pid}/task'):
        try:
            st=open(f'/proc/{pid}/task/{t}/stat').read().rsplit(')',1)[1].split()[0]
            sc=open(f'/proc/{pid}/task/{t}/syscall').read().split()
        except Exception: continue
        if sc[0] in ('running',): c[(st,'running')]+=1; continue
        n=int(sc[0]) if sc[0].lstrip('-').isdigit() else sc[0]
        fd=int(sc[1],16) if len(sc)>1 else -1
        if n in (17,18,74,75,0,1):
            try: f=os.readlink(f'/proc/{pid}/fd/{fd}').split('/')[-1]
            except Exception: f='?'
            f=f.split('.')[-1]
        else: f=''
        c[(st,names.get(n,n),f)]+=1
    time.sleep(0.02)
for k,v in c.most_common(14): print(round(v/N,3),k)
