import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
import sys, numpy as np, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_eval import *
from scipy.stats import spearmanr
name = sys.argv[1]; ts = [int(t) for t in sys.argv[2].split(",")]
full = load(name, "full")
X, y, ls = data(name)
for t in ts:
    zs = [at(m, t) for m in full.values()]
    accs = [evaluate_ranking(name, rank_features(z))[0] for z in zs]
    rho = np.mean([spearmanr(a, b).statistic for a, b in itertools.combinations(zs, 2)])
    cons = evaluate_ranking(name, rank_features(combine(zs, "mean_rank")))[0]
    print(f"t={t:3d} single {100*np.mean(accs):.2f}±{100*np.std(accs):.2f} rho={rho:.3f} cons{len(zs)} {100*cons:.2f}", flush=True)
