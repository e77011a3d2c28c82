import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
"""Consensus study: evaluate members and consensus combos from saved checkpoint scores (scratch)."""
import sys, glob, os, itertools, json
import numpy as np
from iclfs.core.tables import read_feature_table
from iclfs.core.preprocessing import prepare
from iclfs.core.laplacian import laplacian_scores
from iclfs.core.lgrc import select_features
from iclfs.core.scores import rank_features, min_max
from iclfs.core.evaluation import evaluate_selections, best_k

KS = [50, 100, 150, 200, 250, 300]
_cache = {}
def data(name):
    if name not in _cache:
        path = glob.glob(f"{SHARED}/*/{name}.mat")[0]
        p = prepare(read_feature_table(path))
        _cache[name] = (p.standardized, p.labels, laplacian_scores(p.standardized, 3))
    return _cache[name]

def evaluate_ranking(name, ranking, seed=42, lgrc=True, n_runs=20):
    X, y, ls = data(name)
    d = X.shape[1]
    sel = {k: select_features(ranking, ls, k, enabled=lgrc) for k in KS if k <= d}
    rows = evaluate_selections(X, y, sel, n_runs=n_runs, seed=seed)
    b = best_k(rows)
    return b["accuracy_mean"], b["k"], sel

def load(name, config):
    out = {}
    for f in sorted(glob.glob(f"{STUDY}/study/{name}__{config}__*.npz")):
        seed = int(f.rsplit("__", 1)[1].split(".")[0])
        z = np.load(f)
        out[seed] = dict(z=z["z"], h=z["h"], cps=list(z["checkpoints"]), secs=z["seconds"])
    return out

def at(member, t, score="z"):
    return member[score][member["cps"].index(t)]

def combine(score_list, rule):
    S = np.array(score_list)
    if rule == "mean_rank":
        ranks = np.array([np.argsort(rank_features(s)) for s in S])  # position of each feature
        return -ranks.mean(0)
    if rule == "mean_minmax":
        return np.array([min_max(s) for s in S]).mean(0)
    if rule == "mean_z":
        return np.array([(s - s.mean()) / (s.std() + 1e-12) for s in S]).mean(0)
    raise ValueError(rule)

def jaccard(a, b):
    a, b = set(a), set(b); return len(a & b) / len(a | b)
