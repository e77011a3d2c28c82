"""Benchmarks (speed); run as modules, e.g. python -m iclfs.benchmarks.speed."""
