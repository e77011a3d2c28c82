"""The lab: benchmarks, studies and their results (README.md)."""

# First, before any tool loads torch: the OpenMP thread policy every process the project starts runs under.
from iclfs import _threads  # noqa: F401
