"""iclfs: unsupervised feature selection by Inverted Contrastive Learning (ICLFS).

``from iclfs import ICLFSSelector`` gives the scikit-learn selector; the
method itself is :mod:`iclfs.method`, the Kedro project :mod:`iclfs.pipelines`.
"""

__version__ = "0.2.0"

__all__ = ["ICLFSSelector", "__version__"]


def __getattr__(name: str):
    # Imported on first use, so `import iclfs` stays light (no torch until needed).
    if name == "ICLFSSelector":
        from iclfs.selectors import ICLFSSelector

        return ICLFSSelector
    raise AttributeError(f"module 'iclfs' has no attribute {name!r}")
