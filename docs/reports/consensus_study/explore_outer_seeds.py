"""How far the selections of one setting agree over a set of outer seeds (an exploration, not a decision)

    python docs/reports/consensus_study/explore_outer_seeds.py ../shared/validation/lung_small.mat \
        "consensus.members=6,consensus.member_epochs=25,consensus.subsample=0.5" 42 43 44

Runs the whole chain (``iclfs.method.chain.run``, as the benchmark does) with
the settings given, at each seed, and prints the mean pairwise Jaccard index
of the k = 50 selections, the measure the rounds judge on three seeds.
"""

import sys

from iclfs.io.tables import read_feature_table
from iclfs.method import chain
from iclfs.method.config import Settings
from iclfs.method.consensus import mean_pairwise_jaccard

table = read_feature_table(sys.argv[1])  # the chain prepares it; nothing else is needed
overrides, seeds = sys.argv[2], [int(s) for s in sys.argv[3:]]
selections = []
for seed in seeds:
    settings = Settings().with_overrides(f"{overrides},seed={seed},runtime.progress=false")
    selections.append(chain.run(table, settings).selections[50])
    print(f"seed {seed}: first ten of the k = 50 selection {sorted(selections[-1])[:10]}", flush=True)
print(f"Jaccard@50 over the seeds {seeds}: {mean_pairwise_jaccard(selections):.3f}")
