"""Estimate training memory up front, and refuse a run that cannot fit.

The estimate counts the float32 tensors one epoch keeps alive at its peak:
the anchor map and its views, the activations autograd saves for the forward
passes alive at once (6 for ``fast``; 3 for ``paper``, which back-propagates
each view before the next), the attention and loss work buffers (d x d for the
``reference`` kernel and the paper's dense losses, bounded blocks otherwise,
plus the weights the ``chunked`` kernel keeps when one block holds them all),
and the parameters with their gradients and Adam state. It is checked against
the benchmark's measured peaks in ``docs/performance.md``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch

from .attention import auto_chunk_size, keeps_weights
from .losses import DEFAULT_LOSS_BLOCK_BYTES
from .model import Regime

FLOAT = 4
PROCESS_OVERHEAD = 600 * 2**20  # interpreter, torch, numpy, scipy, kedro


class ResourceLimitError(MemoryError):
    """Raised before training when the estimated memory exceeds what the device has."""


@dataclass(frozen=True)
class MemoryEstimate:
    total_bytes: int
    activations_bytes: int
    work_bytes: int
    parameters_bytes: int


def parameter_count(n: int, regime: Regime, use_attention: bool = True) -> int:
    """Trainable parameters of :class:`~iclfs.core.model.ICLFSNetwork` for n samples."""
    attention = (3 * n * n + 3 * n + n * n + n) if use_attention else 0
    encoder = n * regime.d_e + regime.d_e + 2 * regime.d_e + regime.d_e * regime.d_h + regime.d_h
    projector = (regime.d_h * regime.d_p + 3 * regime.d_p) + (regime.d_p * regime.d_p + 3 * regime.d_p)
    return attention + encoder + projector + regime.d_p * regime.d_z + regime.d_z


def estimate_training_memory(
    d: int, n: int, regime: Regime, schedule: str = "fast", attention_kernel: str = "fused",
    use_attention: bool = True, loss_chunk_size: int | None = None,
) -> MemoryEstimate:
    """Peak bytes of one training epoch on a (d, n) map (float32).

    ``loss_chunk_size`` is the rows of InfoNCE logits ``fast`` forms at a time
    (:meth:`~iclfs.core.training.TrainingConfig.loss_chunk_size_for`); None
    counts the largest default block, 256 MiB.
    """
    per_forward = d * (
        (6 * n if use_attention else 0) + n + 4 * regime.d_e + 2 * regime.d_h + 6 * regime.d_p + 2 * regime.d_z
    )
    alive_forwards = 3 if schedule == "paper" else 6
    maps = 6 * d * n  # anchor and the five views
    activations = (alive_forwards * per_forward + maps) * FLOAT

    if attention_kernel == "reference" and use_attention:
        attention_work = 3 * alive_forwards * d * d * FLOAT  # scores, softmax, averaged weights
    elif attention_kernel == "chunked" and use_attention:
        chunk = auto_chunk_size(d)
        attention_work = 3 * chunk * d * FLOAT
        if keeps_weights(d, chunk):  # each forward pass keeps its d x d weights for its backward pass
            attention_work += alive_forwards * d * d * FLOAT
    else:
        attention_work = 8 * d * n * FLOAT  # flash kernels: small per-row buffers
    if schedule == "paper":
        loss_work = 4 * d * (d + 1) * FLOAT  # dense logits, their softmax and grad, the Gram matrix
    else:
        block = (min(d, loss_chunk_size) * d * FLOAT if loss_chunk_size
                 else min(DEFAULT_LOSS_BLOCK_BYTES, d * d * FLOAT))
        loss_work = 3 * block
    parameters = 4 * parameter_count(n, regime, use_attention) * FLOAT  # weights, grads, Adam m and v
    total = PROCESS_OVERHEAD + activations + attention_work + loss_work + parameters
    return MemoryEstimate(int(total), int(activations), int(attention_work + loss_work), int(parameters))


def available_memory(device: torch.device) -> int | None:
    """Bytes the device can still give: free CUDA memory, or the host's available
    memory capped by a cgroup limit. None when it cannot be read."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    limits = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                limits.append(int(line.split()[1]) * 1024)
    except OSError:
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            value = Path(path).read_text().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 2**60:
            limits.append(int(value))
    if not limits:
        try:
            limits.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError):
            return None
    return min(limits)


def available_cpus() -> int:
    """CPUs this process may run on: its affinity set, capped by a cgroup CPU quota (at least 1)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        cpus = min(cpus, max(1, int(quota)))  # a fractional quota rounds down: it cannot feed a whole thread
    return max(1, cpus)


def _cgroup_cpu_quota(root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The CPU quota in CPUs (cgroup v2 ``cpu.max``, else v1 ``cpu.cfs_quota_us``); None when unlimited or unreadable."""
    try:
        quota, period = (root / "cpu.max").read_text().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        quota = int((root / "cpu" / "cpu.cfs_quota_us").read_text())
        period = int((root / "cpu" / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 or period <= 0 else quota / period


def check_memory(estimate: MemoryEstimate, device: torch.device, d: int, n: int, regime: Regime,
                 schedule: str, limit: int | None = None) -> None:
    """Raise :class:`ResourceLimitError` with the numbers and the options if it will not fit."""
    limit = available_memory(device) if limit is None else limit
    if limit is None or estimate.total_bytes <= limit:
        return
    gib = 2**30
    options = []
    if schedule == "paper":
        options.append("training.schedule: fast (no d x d matrices)")
    if regime.name == "large":
        options.append("training.regime: small (smaller layers)")
    if device.type == "cpu":
        options.append("a GPU (training.device: cuda) with more memory")
    options.append("fewer features (pre-filter by variance) or a machine with more memory")
    options.append("training.check_memory: false to try anyway (the estimate errs on the high side)")
    raise ResourceLimitError(
        f"training on {d} features x {n} samples ({regime.name} regime, {schedule} schedule) needs about "
        f"{estimate.total_bytes / gib:.1f} GiB on {device}, but only {limit / gib:.1f} GiB is available. "
        f"Options: {'; '.join(options)}."
    )
