"""The ICLFS method, framework-free (numpy, scipy, scikit-learn, torch; no Kedro).

One module per step of docs/method.md: :mod:`preprocessing` (§1),
:mod:`views` (§2), :mod:`model` and :mod:`attention` (§3), :mod:`losses` and
:mod:`training` (§4), :mod:`scores` (§5), :mod:`laplacian` (§6), :mod:`lgrc`
(§7), and :mod:`consensus` (docs/consensus.md). :mod:`config` holds every
parameter section, :mod:`runtime` the device, threads and memory,
:mod:`replay` the paper's literal loop and random draws, and :mod:`chain`
runs the whole method once.
"""
