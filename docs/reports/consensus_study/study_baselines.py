import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
import sys, numpy as np, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_eval import *
from iclfs.core import baselines as B
from iclfs.core.evaluation import evaluate_selections, best_k
res = {}
for name in sys.argv[1:]:
    X, y, ls = data(name)
    d = X.shape[1]; ks = [k for k in KS if k <= d]
    c = len(np.unique(y))
    out = {}
    def ev(rankings):
        rows = []
        for k in ks:
            sel = {k: r[:k] for r in rankings}
        accs = []
        rows = [dict(k=k, accuracy_mean=np.mean([evaluate_selections(X, y, {k: r[:k]}, 20, 42)[0]["accuracy_mean"] for r in rankings])) for k in ks]
        return best_k(rows)["accuracy_mean"]
    out["LS"] = ev([B.rank_ascending(ls)])
    out["SPEC"] = ev([B.spec_ranking(X.astype(np.float64))])
    out["NDFS"] = ev([B.ndfs_ranking(X.astype(np.float64), c, n_neighbors=5, alpha=1.0, beta=1.0, gamma=1e8, max_iter=50)])
    mc = B.mcfs_selections(X.astype(np.float64), c, ks, n_neighbors=5)
    out["MCFS"] = best_k([dict(k=k, accuracy_mean=evaluate_selections(X, y, {k: mc[k][:k]}, 20, 42)[0]["accuracy_mean"]) for k in ks])["accuracy_mean"]
    out["random"] = ev(list(B.random_rankings(d, 5, seed=42)))
    out["all"] = evaluate_selections(X, y, {d: np.arange(d)}, 20, 42)[0]["accuracy_mean"]
    print(name, {k: round(100*v, 2) for k, v in out.items()}, flush=True)
