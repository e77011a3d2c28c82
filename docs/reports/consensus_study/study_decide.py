import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
"""Evaluate the pre-registered candidates C1-C4 (docs/consensus.md) on a validation set."""
import sys, json, numpy as np, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_eval import *
from iclfs.core.scores import rank_features
name = sys.argv[1]
X, y, ls = data(name)

def rank_score(S):
    S = np.atleast_2d(S); d = S.shape[1]
    pos = np.array([np.argsort(rank_features(s)) for s in S], dtype=float) + 1
    return 1 - (pos.mean(0) - 1) / (d - 1)

def consensus(scores, w):
    c = rank_score(np.array(scores))
    if w:
        c = (1 - w) * c + w * rank_score(-np.where(np.isfinite(ls), ls, np.inf))
    return c

def stats(results):
    accs = [r[0] for r in results]; sels = [set(r[2][50]) for r in results]
    jac = np.mean([len(a & b) / len(a | b) for a, b in itertools.combinations(sels, 2)])
    return 100 * np.mean(accs), 100 * np.std(accs), jac

out = {}
full = load(name, "full")
single = [evaluate_ranking(name, rank_features(at(m, 100))) for m in full.values()]
out["single"] = stats(single) + (len(single),)
members = {s: [np.load(f"{STUDY}/study/{name}__m50__{s*100+i}.npz") for i in range(8)] for s in (42, 43, 44)}
def at_t(z, t): return z["z"][list(z["checkpoints"]).index(t)]
cands = {"C1": (8, 10, 0.0), "C2": (8, 10, 0.5), "C3": (4, 20, 0.0), "C4": (4, 20, 0.5)}
for c, (E, T, w) in cands.items():
    res = [evaluate_ranking(name, rank_features(consensus([at_t(z, T) for z in members[s][:E]], w))) for s in (42, 43, 44)]
    out[c] = stats(res) + (3,)
    print(name, c, out[c], flush=True)
print(name, "single", out["single"], flush=True)
json.dump(out, open(f"{STUDY}/decide_{name}.json", "w"))
