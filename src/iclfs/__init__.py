"""iclfs: unsupervised feature selection by Inverted Contrastive Learning (ICLFS).

``from iclfs import ICLFSSelector, BaselineSelector`` gives the scikit-learn selectors; the
method itself is :mod:`iclfs.method`, the Kedro project :mod:`iclfs.pipelines`.
"""

__version__ = "0.2.0"

__all__ = ["BaselineSelector", "ICLFSSelector", "__version__"]


def __getattr__(name: str):
    # Imported on first use, so `import iclfs` stays light (no torch until needed).
    if name in ("ICLFSSelector", "BaselineSelector"):
        from iclfs import _selectors as selectors

        return getattr(selectors, name)
    raise AttributeError(f"module 'iclfs' has no attribute {name!r}")
