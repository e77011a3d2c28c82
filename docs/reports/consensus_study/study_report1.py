import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
import sys, numpy as np, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_eval import *
name = sys.argv[1]
full = load(name, "full"); sub = load(name, "sub50")
print(name, "members full", len(full), "sub", len(sub))
for cfg, members, ts in (("full", full, [0, 5, 10, 20, 30, 50, 100]), ("sub50", sub, [0, 5, 10, 20, 30, 50])):
    for t in ts:
        accs = []; tops = []
        for s, m in members.items():
            acc, k, sel = evaluate_ranking(name, rank_features(at(m, t)))
            accs.append(acc); tops.append(sel[50])
        jac = np.mean([jaccard(a, b) for a, b in itertools.combinations(tops, 2)])
        # consensus of 3 disjoint groups of 3 -> 2 groups of 3 with 6 members
        cons = []
        ctops = []
        for g in ([0,1,2],[3,4,5]):
            sc = combine([at(members[i], t) for i in g], "mean_rank")
            acc, k, sel = evaluate_ranking(name, rank_features(sc)); cons.append(acc); ctops.append(sel[50])
        all6 = evaluate_ranking(name, rank_features(combine([at(members[i], t) for i in range(6)], "mean_rank")))[0]
        print(f"{cfg:6s} t={t:3d} single {100*np.mean(accs):.2f}±{100*np.std(accs):.2f} J50={jac:.2f} | cons3 {100*np.mean(cons):.2f} ({', '.join(f'{100*c:.1f}' for c in cons)}) J50={jaccard(*ctops):.2f} | cons6 {100*all6:.2f}", flush=True)
