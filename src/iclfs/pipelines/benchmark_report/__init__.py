"""The benchmark report: every dataset's results in the paper's format."""

from .pipeline import create_pipeline

__all__ = ["create_pipeline"]
