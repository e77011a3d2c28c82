"""One Kedro pipeline per ICLFS stage; each node is a thin adapter over :mod:`iclfs.method`."""
