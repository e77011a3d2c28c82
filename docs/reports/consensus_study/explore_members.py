"""How many members does agreement between seeds take? (an exploration, not a decision)

    python docs/reports/consensus_study/explore_members.py ../shared/validation/lung_small.mat MEMBER [POOL]

MEMBER is "run" (a member is one 100-epoch ``fast`` run on every sample) or
"L2" (round 2's members: 25 epochs on half the samples). A pool of POOL
members (default 48) is trained once, from ``numpy.random.SeedSequence(0)``
as a consensus of POOL members would be, so every member has a seed of its
own. The pool is then cut into disjoint groups of E members; each group is
the consensus a user with other seeds would get (mean rank, as
``consensus.combine: mean_rank``; a group of one "run" member is one run's
raw score). For each E it prints the mean pairwise Jaccard index of the
groups' k = 50 selections (LGRC, method.md §7), the best-k accuracy
(method.md §8) over at most six groups, and the training seconds a group
costs. Groups share no member, so their agreement is what two outer seeds of
such a consensus would show.
"""

import sys
import time

import numpy as np

from exploration import Dataset
from iclfs.method.config import ConsensusConfig, RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method.consensus import combine, mean_pairwise_jaccard, member_settings, plan_members, train_member
from iclfs.method.scores import rank_features

# members=2 is a placeholder (the pool size replaces it): members=1 would mean the paper's run and ignore the rest.
MEMBERS = {"run": ConsensusConfig(members=2, member_epochs=100, subsample=1.0),
           "L2": ConsensusConfig(members=2, member_epochs=25, subsample=0.5)}
GROUP_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96)  # those with at least two groups in the pool
MAX_EVALUATED_GROUPS = 6
QUIET = RuntimeConfig(progress=False)

data = Dataset(sys.argv[1])
kind = sys.argv[2]
pool = int(sys.argv[3]) if len(sys.argv) > 3 else 48
d, n = data.A.shape
consensus = MEMBERS[kind].replace(members=pool)
training, epochs = member_settings(n, TrainingConfig(), consensus)
scores, seconds = [], []
for plan in plan_members(n, consensus, seed=0, n_features=d):
    started = time.perf_counter()
    member = train_member(data.A, plan, training, epochs, ViewConfig(), QUIET)
    seconds.append(time.perf_counter() - started)
    scores.append(member.scores["z_norm"])
scores = np.array(scores)
# Two random 50-feature selections share about 50² / d features, so J is about 50 / (2 d - 50).
print(f"{data.table.source}: d = {d}, n = {n}; {pool} '{kind}' members, {np.mean(seconds):.1f} s each; "
      f"Jaccard@50 of random selections about {50 / (2 * d - 50):.3f}")
print("| members per consensus | groups | Jaccard@50 between groups | best-k accuracy (mean ± std over groups) "
      "| training seconds per consensus |")
print("|---|---|---|---|---|")
for size in (s for s in GROUP_SIZES if 2 * s <= pool):
    groups = [scores[i:i + size] for i in range(0, pool - size + 1, size)]
    rankings = [rank_features(combine(group)) for group in groups]
    selections, accuracies = [], []
    for i, ranking in enumerate(rankings):
        if i < MAX_EVALUATED_GROUPS:
            accuracy, selection = data.evaluate(ranking)
            accuracies.append(accuracy)
        else:
            selection = data.selection(ranking, 50)
        selections.append(selection)
    print(f"| {size} | {len(groups)} | {mean_pairwise_jaccard(selections):.3f} | "
          f"{np.mean(accuracies):.2f} ± {np.std(accuracies):.2f} | {size * np.mean(seconds):.0f} |", flush=True)
