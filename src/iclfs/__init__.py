"""iclfs: Inverted Contrastive Learning for unsupervised Feature Selection, as Kedro pipelines."""

__version__ = "0.1.0"
