#!/usr/bin/env python3
"""Pool the runs of several `foliosim calibrate --save-runs` files (same corpus,
same counts) into one, phase by phase, as profiles/calibration/x86_64-kvm-host.runs.json
was made from two rounds of 11 runs.  Usage: pool-runs.py OUT IN1 IN2 [...]"""
import json, sys
out=sys.argv[1]; ins=sys.argv[2:]
runs=[json.load(open(f)) for f in ins]
base=runs[0]
names=[p['name'] for p in base['phases']]
for r in runs[1:]:
    assert [p['name'] for p in r['phases']]==names
    for p,q in zip(base['phases'], r['phases']):
        assert p['counters']==q['counters'], p['name']
        p['thread_cpu_ns']+=q['thread_cpu_ns']; p['wall_ns']+=q['wall_ns']
        p['fault_mismatch']=p['fault_mismatch'] or q['fault_mismatch']
base['load_start']=", ".join(f"{r['load_start']} (round {i+1})" for i,r in enumerate(runs))
base['load_end']=", ".join(f"{r['load_end']} (round {i+1})" for i,r in enumerate(runs))
base['traced']=False
json.dump(base, open(out,'w'), indent=2); open(out,'a').write("\n")
