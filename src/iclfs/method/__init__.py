"""The ICLFS method, framework-free (numpy, scipy, scikit-learn, torch; no Kedro).

One module per step of docs/method.md: :mod:`preprocessing` (§1),
:mod:`views` (§2), :mod:`model` and :mod:`attention` (§3), :mod:`losses` and
:mod:`training` (§4), :mod:`scores` (§5), :mod:`laplacian` (§6) and
:mod:`lgrc` (§7). Beyond one network: :mod:`members` trains the members of a
run, :mod:`consensus` combines their scores into one order, :mod:`k_choice`
picks the k handed on, :mod:`history` carries members from one scheduled
refresh to the next, and :mod:`stability` measures how selections agree.
:mod:`config` holds every parameter section, :mod:`runtime` the device,
threads and memory, :mod:`replay` the paper's literal loop and random draws,
and :mod:`chain` runs the whole method once.
"""
