import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
import sys, numpy as np, itertools
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_eval import *
from scipy.stats import spearmanr
name = sys.argv[1]
X, y, ls = data(name)
raw = prepare(read_feature_table(glob.glob(f"{SHARED}/*/{name}.mat")[0]))
for cfg in ("full", "sub50"):
    members = load(name, cfg)
    for t in members[0]["cps"]:
        zs = [at(m, t) for m in members.values()]
        hs = [at(m, t, "h") for m in members.values()]
        rz = np.mean([spearmanr(a, b).statistic for a, b in itertools.combinations(zs, 2)])
        rh = np.mean([spearmanr(a, b).statistic for a, b in itertools.combinations(hs, 2)])
        rls = np.mean([spearmanr(a, -ls).statistic for a in zs])
        print(f"{cfg} t={t:3d} member-member rho z={rz:.3f} h={rh:.3f}  z vs -LS {rls:.3f}")
