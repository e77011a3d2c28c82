import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
import sys, json, numpy as np, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
exec(open(STUDY + "/study_decide.py").read().split('out = {}')[0])
members = {s: [np.load(f"{STUDY}/study/{name}__m50__{s*100+i}.npz") for i in range(8)] for s in (42, 43, 44)}
def at_t(z, t): return z["z"][list(z["checkpoints"]).index(t)]
cands = {"C1": (8, 10, 0.0), "C2": (8, 10, 0.5), "C3": (4, 20, 0.0), "C4": (4, 20, 0.5)}
out = {}
for c, (E, T, w) in cands.items():
    res = [evaluate_ranking(name, rank_features(consensus([at_t(z, T) for z in members[s][:E]], w))) for s in (42, 43, 44)]
    out[c] = stats(res) + (3,)
    print(name, c, out[c], flush=True)
json.dump(out, open(f"{STUDY}/decide_{name}_cands.json", "w"))
