import csv,sys,statistics as st
# pairsf.py OUT A B [workload value_size prefill]: pair rows in order after filtering
out,a,b=sys.argv[1:4]; flt=sys.argv[4:]
def rows(v):
    r=list(csv.DictReader(open(f'{out}-{v}.csv')))
    if flt:
        wl,vs,pf,th,dur=flt
        r=[x for x in r if x['workload_id']==wl and x['value_size']==vs and x['prefill_keys']==pf and x['threads']==th and x['durability_mode']==dur]
    return r
ra,rb=rows(a),rows(b); n=min(len(ra),len(rb))
for k in ['ops','cpu_us_per_op','hdr_p99_us','write_amp']:
    xa=[float(x[k]) for x in ra[:n]]; xb=[float(x[k]) for x in rb[:n]]
    rat=[q/p for p,q in zip(xa,xb)]
    print(f"{k}: {a} med {st.median(xa):.4g} {b} med {st.median(xb):.4g} | {b}/{a} med {st.median(rat):.3f} ({sum(r>1 for r in rat)}/{n} >1) "+" ".join(f"{r:.2f}" for r in rat))
