"""The framework-free ICLFS core (numpy, scipy, scikit-learn, torch; no Kedro).

One module per SPEC section: :mod:`preprocessing` (§1), :mod:`views` (§2),
:mod:`model` (§3), :mod:`losses` and :mod:`training` (§4), :mod:`scores` (§5),
:mod:`laplacian` (§6), :mod:`lgrc` (§7), :mod:`evaluation` (§8).
"""
