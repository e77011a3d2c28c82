"""The agreement study: do two deployments of the same job agree on their evidence and their lists? (issue 60, item 3)

    python -m benchmarks.agreement run --device cuda --datasets-dir DIR --out results.jsonl --budget-s 420 --workers 4
    python -m benchmarks.agreement report --results results.jsonl   # writes results/agreement.md

**The rule** (fixed in this docstring and committed before any result of
this study existed).

*Sets.* The six reported sets of :mod:`benchmarks.refresh` (lung_small, ORL,
warpPIE10P, Prostate_GE, ALLAML, madelon) and Isolet, one of its validation
sets: seven distinct tables. The targets are judged on the six reported
sets; Isolet is shown beside them.

*Refreshes and deployments.* As :mod:`benchmarks.refresh` simulates them:
two deployments (seeds 42 and 43), 8 refreshes each; refresh r of a
deployment sees the same fresh 90 % of the samples
(:func:`refresh_samples`, the refresh study's draw), so the refresh study's
stored one run per refresh (``results/refresh/``, ``results/cells/refresh``)
is trained on the very tables this study trains on.

*Candidates.* Members per refresh M in {1, 4, 16} (64 where ``--members
64`` is given and the time allows), each trained as the product trains
them with ``members.sampling: complementary`` (pairs on disjoint halves of
the refresh's samples) at ``members.epochs`` (25), the default settings
otherwise, on the device given (``--device``). The members of a refresh
are the first M of one plan of ``--members`` members seeded
``member_seed(deployment, 64 r)`` (as :mod:`benchmarks.evidence` explains:
``per_run: 16`` trains exactly the first 16 of ``per_run: 64``), so a
refresh trains its members once for every M. (The product numbers a
history's members one by one, so its refresh r would draw from
``member_seed(deployment, M r)``: another independent draw, of the same
law.) M = 1 is one member on a half-sample: it has no pair and no bound, and
it is not a product setting (``per_run: 1`` is one full run); it is shown,
never chosen. Each candidate M is carried across the 8 refreshes with the
product's functions and defaults: :func:`iclfs.method._ranking.rank` (the
history kept to ``members.kept`` 64 members, half-life infinite, the kept
members' mean Laplacian score as the gate), LGRC with the hold and admit
(:func:`iclfs.method._lgrc.gate`, held to the last lists from the second
refresh on), and the evidence (:func:`iclfs.method._evidence.list_evidence`:
the selection frequency at k = 50 over the members kept). The Laplacian
fusion on (``members.laplacian_weight`` 0.5, today's) and off (0). The
threshold π in {0.6, 0.75, 0.9}, applied after the fact to the same
frequencies (no retraining): a candidate is (M, fusion, π).

*Today's default* is one full run per refresh (``members.per_run: 1``),
carried with the fusion on: the refresh study's stored runs and cells,
read at refresh 8 (its lists there are what an 8-refresh simulation gives).
Its stable set is the same rule's over its 8 kept runs' first 50.
*One run's mean* accuracy is the mean over refreshes 1-8 and both
deployments of the refresh study's "ICLFS, one run per refresh" cells.

*Measures,* per (set, candidate), after refresh 8:

- **stable-set agreement**: the Jaccard index of the two deployments'
  stable sets at π, where both are non-empty (with their sizes);
- **list agreement**: the Jaccard index of the two deployments' lists at
  k = 50 (Jaccard@50);
- **steadiness**: the mean over both deployments and refreshes 5-8 of the
  Jaccard@50 with the previous refresh's list;
- **accuracy**: the last list's k-means accuracy (docs/method.md §8, as
  :mod:`benchmarks.refresh` does it: the best k's mean over 20 runs on the
  refresh's table, k over the selection grid), mean of the two deployments;
- **cost**: device seconds per refresh (training the M members, the
  Laplacian score, ranking and listing), against one full default run
  (``per_run: 1``) timed on the same device at deployment 42's first
  refresh.

*Targets* (issue 60): (T1) the stable sets agree: over the reported sets
where both deployments' stable sets are non-empty, the median Jaccard is
>= 0.8, and there are at least 3 such sets (a stable set empty on most sets
gives nothing to agree on); (T2) the lists agree: the median over the six
reported sets of the list agreement is >= 0.6; (T3) the last list's
accuracy is at or above one run's mean on >= 5 of the 6 reported sets. A set
that did not finish (8 refreshes of both deployments) inside the run counts
as *not run*: it is shown as such and fails T2's and T3's count for that set.

*The decision.*

1. **Eligible**: a candidate with M >= 2 that meets T1, T2 and T3, with all
   six reported sets run. A decision that changes a default needs all six.
2. **The winner** is the eligible candidate of the fewest members M (cost);
   at that M the fusion off before on (the fusion must earn its place: on
   wins only where off is not eligible); then the highest π (the fewest
   expected false selections).
3. **CUDA default**: the winner's M (``members.per_run``, ``sampling:
   complementary``), fusion and π become the defaults on CUDA when it beats
   today's default: its median list agreement over the six reported sets is
   higher than today's, and its count of sets at or above one run's mean
   accuracy is at least today's.
4. **CPU default**, decided by cost: the winner's M is the CPU default too
   when M members cost at most twice one default run per refresh on one CPU
   thread, measured by this script with ``--device cpu`` on lung_small (a
   member's mean seconds x M against one run's seconds); otherwise the CPU
   default stays one run per refresh (``per_run: 1``).
5. **No winner** (no candidate eligible, or the winner does not beat
   today's default): every default stays. The page then gives the best
   agreement reached (the candidate with the highest median list agreement,
   and the highest median stable-set agreement) and its cost per refresh
   against one run. The selection probabilities are kept either way: they
   are honest on their own.

Cells (sets, deployments, refreshes) that did not finish inside the device
run are reported as not run; nothing is extrapolated.
"""
