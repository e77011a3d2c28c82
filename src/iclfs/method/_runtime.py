"""The training plan and its runtime: regime, device, precision, kernels, threads and memory.

Nothing here changes what the method computes beyond float rounding. It
decides a network's size regime, resolves the device, chooses the attention
kernel and the attention's and InfoNCE's blocks for that device, sets torch's
thread count and TF32 flags for one run, and estimates the memory an epoch
needs so that a run that cannot fit stops before it starts.
:func:`plan_training` works all of that out once for one network, into a
:class:`TrainingPlan`: the chain's check plans a member's largest network
before any artifact is written (:func:`~iclfs.method._members.largest_network_plan`),
and each network's :class:`~iclfs.method._training.Trainer` is built from its plan.

The memory estimate counts the float32 tensors one epoch keeps alive at its peak:
the anchor map and its views, the activations autograd saves for the forward
passes alive at once (6 for ``fast``; 3 for ``paper``, which back-propagates
each view before the next), the attention and loss work buffers (d x d for the
``literal`` kernel and the paper's dense losses, bounded blocks otherwise,
plus the weights the ``blocked`` kernel keeps when one block holds them all),
and the parameters with their gradients and Adam state. It is checked against
the benchmark's measured peaks in ``docs/performance.md``.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import torch

from iclfs._threads import RETIME_EPOCHS, available_cpus, counts_to_time

from ._config import ParameterError, RuntimeConfig, TrainingConfig

#: A factory of the context the network's forward passes run in (autocast or nothing).
ForwardContext = Callable[[], contextlib.AbstractContextManager]

FLOAT = 4
PROCESS_OVERHEAD = 600 * 2**20  # interpreter, torch, numpy, scipy, kedro


class ResourceLimitError(MemoryError):
    """Raised before training when the estimated memory exceeds what the device has."""


@dataclass(frozen=True)
class Regime:
    """Layer sizes and decorrelation weight of one size regime (docs/method.md §3)."""

    name: str
    d_e: int
    d_h: int
    d_p: int
    d_z: int
    decorrelation_weight: float


REGIMES: dict[str, Regime] = {
    "small": Regime("small", d_e=16, d_h=512, d_p=128, d_z=16, decorrelation_weight=0.20),
    "large": Regime("large", d_e=64, d_h=1440, d_p=2048, d_z=32, decorrelation_weight=0.40),
}


def select_regime(n_samples: int, regime: str = "auto", threshold: int = 1000) -> Regime:
    """The size regime for ``n_samples``: ``small`` below ``threshold``, else ``large``.

    ``regime`` may force ``"small"`` or ``"large"``; ``"auto"`` decides from n.
    """
    if regime == "auto":
        return REGIMES["small" if n_samples < threshold else "large"]
    if regime not in REGIMES:
        raise ValueError(f"regime must be 'auto', 'small' or 'large', got {regime!r}")
    return REGIMES[regime]


#: Bytes of one block of InfoNCE logits, by device type. On CPU a block of
#: about 2 MiB stays in cache through the half-dozen elementwise passes over
#: it, where blocks of hundreds of MiB stream through main memory on each pass
#: (whole ``fast`` epochs 12-13 % faster on arcene and Prostate_GE,
#: docs/guides/performance.md); on CUDA large blocks mean fewer kernel launches.
LOSS_BLOCK_BYTES = {"cpu": 2 * 2**20}
DEFAULT_LOSS_BLOCK_BYTES = 256 * 2**20


def rows_per_block(rows: int, budget_bytes: int = 256 * 2**20, itemsize: int = 4) -> int:
    """The largest block of query rows whose (block x rows) weights fit ``budget_bytes``."""
    return max(1, min(rows, budget_bytes // max(1, rows * itemsize)))


def keeps_weights(rows: int, block_rows: int) -> bool:
    """Whether :func:`~iclfs.method._attention.blocked_attention` keeps its weights for the backward pass: when
    one block holds every row.

    Keeping that block spares the backward pass an (L x L x e) product and an
    exp over L x L, for memory the block budget already allowed (held longer).
    The kept weights are the very bits the recomputation would give, so the
    gradients do not change.
    """
    return block_rows >= rows


def loss_block_rows(rows: int, device: torch.device | str) -> int:
    """Rows of the (rows x rows) InfoNCE logits formed at a time on ``device``."""
    budget = LOSS_BLOCK_BYTES.get(torch.device(device).type, DEFAULT_LOSS_BLOCK_BYTES)
    return rows_per_block(rows, budget)


@dataclass(frozen=True)
class MemoryEstimate:
    total_bytes: int
    activations_bytes: int
    work_bytes: int
    parameters_bytes: int


def parameter_count(n: int, regime: Regime, use_attention: bool = True) -> int:
    """Trainable parameters of :class:`~iclfs.method._model.ICLFSNetwork` for n samples."""
    attention = (3 * n * n + 3 * n + n * n + n) if use_attention else 0
    encoder = n * regime.d_e + regime.d_e + 2 * regime.d_e + regime.d_e * regime.d_h + regime.d_h
    projector = (regime.d_h * regime.d_p + 3 * regime.d_p) + (regime.d_p * regime.d_p + 3 * regime.d_p)
    return attention + encoder + projector + regime.d_p * regime.d_z + regime.d_z


#: Query rows per block of the fused kernel's backward pass on CPU
#: (:class:`~iclfs.method._attention._FlashAttention`): small enough that a block's weights stay in cache.
#: At Prostate_GE's 5966 x 102 maps, forward and backward of the attention core took 0.56 s with 256-row
#: blocks, 0.68 s with 64 and 0.64 s with PyTorch's own flash backward; at warpPIE10P's 2420 x 210, 0.13 s
#: against 0.16 s (2 threads, median of 5; docs/guides/performance.md, "What the `fast` schedule changes").
FLASH_BACKWARD_ROWS = 256


def estimate_training_memory(
    d: int, n: int, regime: Regime, schedule: str = "fast", attention_kernel: str = "fused",
    use_attention: bool = True, loss_block_rows: int | None = None,
) -> MemoryEstimate:
    """Peak bytes of one training epoch on a (d, n) map (float32).

    ``loss_block_rows`` is the rows of InfoNCE logits ``fast`` forms at a time
    (:func:`loss_block_rows`); None counts the largest default block, 256 MiB.
    """
    per_forward = d * (
        (6 * n if use_attention else 0) + n + 4 * regime.d_e + 2 * regime.d_h + 6 * regime.d_p + 2 * regime.d_z
    )
    alive_forwards = 3 if schedule == "paper" else 6
    maps = 6 * d * n  # anchor and the five views
    activations = (alive_forwards * per_forward + maps) * FLOAT

    if attention_kernel == "literal" and use_attention:
        attention_work = 3 * alive_forwards * d * d * FLOAT  # scores, softmax, averaged weights
    elif attention_kernel == "blocked" and use_attention:
        block = rows_per_block(d)
        attention_work = 3 * block * d * FLOAT
        if keeps_weights(d, block):  # each forward pass keeps its d x d weights for its backward pass
            attention_work += alive_forwards * d * d * FLOAT
    else:
        # flash kernels: small per-row buffers; on CPU the backward pass's block of weights and their gradient
        attention_work = 8 * d * n * FLOAT + 2 * min(d, FLASH_BACKWARD_ROWS) * d * FLOAT
    if schedule == "paper":
        loss_work = 4 * d * (d + 1) * FLOAT  # dense logits, their softmax and grad, the Gram matrix
    else:
        loss_block = (min(d, loss_block_rows) * d * FLOAT if loss_block_rows
                      else min(DEFAULT_LOSS_BLOCK_BYTES, d * d * FLOAT))
        loss_work = 3 * loss_block
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
    address_space = _address_space_left()
    if address_space is not None:
        limits.append(address_space)
    return min(limits)


def _address_space_left() -> int | None:
    """What ``ulimit -v`` (RLIMIT_AS) leaves this process: the limit less the address space it holds; None
    when unlimited."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft in (resource.RLIM_INFINITY, -1):
        return None
    held = 0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                held = int(line.split()[1]) * 1024
    except OSError:
        pass
    return max(int(soft) - held, 0)


def check_memory(estimate: MemoryEstimate, device: torch.device, d: int, n: int, regime: Regime,
                 schedule: str, limit: int | None = None) -> None:
    """Raise :class:`ResourceLimitError` with the numbers, the dimension that costs, and the options that help.

    The network's weights grow with the samples (the attention over the n samples holds n x n weights, with
    their gradients and Adam's moments); the activations and the InfoNCE work with the features. The message
    names the larger and offers only what shrinks it.
    """
    limit = available_memory(device) if limit is None else limit
    if limit is None or estimate.total_bytes <= limit:
        return
    gib = 2**30
    by_samples = estimate.parameters_bytes > estimate.activations_bytes + estimate.work_bytes
    options = []
    if by_samples:
        share = max(0.05, math.floor(20 * 0.8 * math.sqrt(max(limit - PROCESS_OVERHEAD, 0) /
                                                           max(estimate.parameters_bytes, 1))) / 20)
        cost = (f"the samples cost it: the attention over the {n:,} samples holds {n:,} x {n:,} weights "
                f"({estimate.parameters_bytes / gib:.1f} GiB with their gradients and optimizer state)")
        options.append(f"members of a subsample of the samples (members.per_run: 2 or more with members.subsample: "
                       f"{share:g}: each trains on {share:.0%} of them)")
        options.append("fewer samples in the table")
    else:
        cost = (f"the features cost it: {estimate.activations_bytes / gib:.1f} GiB of activations and "
                f"{estimate.work_bytes / gib:.1f} GiB of attention and InfoNCE work grow with the {d:,} features")
        if schedule == "paper":
            options.append("training.schedule: fast (no d x d matrices)")
        options.append("fewer features (filter them first, e.g. by variance: selection.method=variance)")
        options.append("members.feature_blocks: 4 (one network per block of features)")
    if regime.name == "large" and by_samples is False:
        options.append("training.regime: small (smaller layers)")
    if device.type == "cpu":
        options.append("a GPU (runtime.device: cuda) with more memory")
    options.append("runtime.check_memory: false to try anyway (the estimate errs on the high side)")
    raise ResourceLimitError(
        f"training on {d:,} features x {n:,} samples ({regime.name} regime, {schedule} schedule) needs about "
        f"{estimate.total_bytes / gib:.1f} GiB on {device}, but only {limit / gib:.1f} GiB is available; {cost}. "
        f"Options: {'; '.join(options)}."
    )


#: From this many samples (the attention's embed dimension) up, ``fast`` on CPU
#: uses the blocked attention: with such wide rows its block products run at
#: GEMM speed while PyTorch's CPU flash kernel falls behind (a pass at
#: BASEHOCK's 4862 x 1993: 3.63 s against 4.45 s; at Prostate_GE's 102-wide
#: rows the flash kernel wins, 0.46 s against 0.79 s; docs/guides/performance.md).
BLOCKED_ATTENTION_MIN_SAMPLES = 1000


def resolve_device(device: str) -> torch.device:
    """``auto`` -> ``cuda`` when available, else ``cpu``; anything else must exist here."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ParameterError(f"runtime.device {device!r} is not a device name (use auto, cpu, cuda, cuda:N)") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ParameterError(f"runtime.device is {device!r} but no CUDA device is available; use 'auto' or 'cpu'")
    if dev.type not in ("cpu", "cuda"):
        raise ParameterError(f"runtime.device {device!r} is not supported (use auto, cpu, cuda, cuda:N)")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ParameterError(f"runtime.device is {device!r} but there are {torch.cuda.device_count()} CUDA "
                             "device(s); use 'cuda' or 'auto'")
    return dev


def resolve_precision(precision: str, schedule: str, device: torch.device) -> str:
    """The arithmetic of the training passes on ``device``: ``fp32``, ``tf32`` or ``bf16``.

    ``auto`` is TF32 matrix products for ``fast`` on CUDA, else strict fp32.
    ``bf16`` runs the network's forward passes under bfloat16 autocast with
    float32 weights; the losses and the scores are float32 whatever the
    precision. On CPU only fp32 is accepted: bf16 there is about 100x slower
    than fp32 on the CPUs this was measured on.
    """
    if precision == "auto":
        return "tf32" if device.type == "cuda" and schedule == "fast" else "fp32"
    if device.type == "cpu" and precision in ("tf32", "bf16"):
        raise ParameterError(
            f"runtime.precision {precision!r} needs a CUDA device, but training runs on the CPU, where only fp32 "
            "is supported (bf16 on CPU is about 100x slower than fp32); use 'auto' or 'fp32'"
        )
    return precision


def attention_kernel_for(schedule: str, n_samples: int, device: torch.device | str) -> str:
    """The attention kernel a run on maps with ``n_samples`` columns uses.

    The paper's literal kernel for ``paper``; for ``fast`` the fused kernel,
    except on CPU with at least :data:`BLOCKED_ATTENTION_MIN_SAMPLES` columns,
    where the blocked kernel is faster.
    """
    if schedule == "paper":
        return "literal"
    if torch.device(device).type == "cpu" and n_samples >= BLOCKED_ATTENTION_MIN_SAMPLES:
        return "blocked"
    return "fused"


def forward_context_for(device: torch.device, precision: str) -> ForwardContext:
    """bfloat16 autocast for ``bf16``; no context otherwise."""
    if precision == "bf16":
        return lambda: torch.autocast(device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext


@contextlib.contextmanager
def compute_settings(device: torch.device, precision: str, num_threads: int | None) -> Iterator[int]:
    """Set torch's thread count and CUDA TF32 flags for one training run; restore them after.

    Threads: ``num_threads`` when given; else, on CPU, torch's current count
    capped at :func:`available_cpus` (torch's default counts the machine's
    cores, which oversubscribes a container or affinity set limited to fewer;
    a lower count the caller chose is kept). TF32 is on for ``tf32`` and
    ``bf16`` only. Yields the thread count in effect.
    """
    threads = torch.get_num_threads()
    tf32 = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        wanted = num_threads or (min(threads, available_cpus()) if device.type == "cpu" else None)
        if wanted and wanted != threads:
            torch.set_num_threads(int(wanted))
        if device.type == "cuda":
            allow = precision in ("tf32", "bf16")
            torch.backends.cuda.matmul.allow_tf32 = allow
            torch.backends.cudnn.allow_tf32 = allow
        yield torch.get_num_threads()
    finally:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = tf32


class ThreadChoice:
    """Which of a few thread counts a training's next epoch runs on: the faster, as timed.

    Beside busy processes a small map trains faster on the CPUs they leave
    free (on two threads lung_small's many short parallel regions each wait
    for a descheduled thread) and a large one on every CPU (each thread takes
    its share of the machine): contention round five measured both. With
    ``counts`` of one, every epoch runs on it. With more, the epochs run on
    each count in turn until each has been timed once, then on the one whose
    latest epoch was the fastest, and every :data:`RETIME_EPOCHS` epochs on
    the count timed longest ago. Only a training that ends in the same bits
    at any thread count may choose (:attr:`TrainingPlan.thread_invariant`).

    Parameters
    ----------
    counts : tuple of int
        The thread counts, the first the one the training started on.
    clock : callable
        Seconds, for the tests; :func:`time.perf_counter`.
    """

    def __init__(self, counts: tuple[int, ...], clock: Callable[[], float] = time.perf_counter) -> None:
        self.counts = tuple(dict.fromkeys(counts))
        self.clock = clock
        self.seconds: dict[int, float] = {}  # each count's latest epoch
        self.timed_at: dict[int, int] = {}  # the epoch each count was last timed on
        self.epochs = 0

    def next_count(self) -> int:
        """The thread count the next epoch runs on."""
        untimed = [count for count in self.counts if count not in self.seconds]
        if untimed:
            return untimed[0]
        if self.epochs % RETIME_EPOCHS == 0:
            return min(self.counts, key=lambda count: self.timed_at[count])
        return min(self.counts, key=lambda count: self.seconds[count])

    @contextlib.contextmanager
    def epoch(self) -> Iterator[int]:
        """Run one epoch on :meth:`next_count` threads (set here when there is a choice) and time it."""
        count = self.next_count()
        if len(self.counts) > 1 and torch.get_num_threads() != count:
            torch.set_num_threads(count)
        started = self.clock()
        yield count
        self.seconds[count] = self.clock() - started
        self.timed_at[count] = self.epochs
        self.epochs += 1


def thread_choice(plan: TrainingPlan, num_threads: int | None, threads: int) -> ThreadChoice:
    """The :class:`ThreadChoice` of a training that :func:`compute_settings` started on ``threads`` threads:
    between those and the CPUs busy processes leave free when the thread policy in force times its threads
    and read the machine as busy (:func:`iclfs._threads.counts_to_time`), the network trains to the same
    bits at any count, and the user chose no count (``runtime.num_threads``); else ``threads`` alone.
    """
    if num_threads is not None or not plan.thread_invariant:
        return ThreadChoice((threads,))
    return ThreadChoice(counts_to_time(threads))


def flushing_denormals() -> bool:
    """Whether this thread's CPU arithmetic flushes subnormal floats to zero (torch has no getter)."""
    return float((torch.tensor([1e-39]) * 1.0).item()) == 0.0


@contextlib.contextmanager
def denormals_flushed(device: torch.device) -> Iterator[None]:
    """On the CPU, compute with subnormal floats as zero for one training; restore the setting after.

    A concrete selector's softmax at a low temperature leaves most of its
    probabilities, and so their gradients and Adam moments, subnormal, and x86
    CPUs compute on subnormals many times slower: on PCMAC, LS-CAE's CPU time
    halved once they were flushed. A subnormal float32 is below 1.2e-38, so
    flushing it moves no sum of normal numbers; four benchmark cells recomputed
    with it came out identical (docs/guides/methods.md). Other devices are left as they are.
    """
    if device.type != "cpu":
        yield
        return
    before = flushing_denormals()
    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(before)


@dataclass(frozen=True)
class TrainingPlan:
    """Where and how one network trains, worked out once before it is built (:func:`plan_training`).

    The chain's check plans a member's largest network before anything is
    written; each member plans each of its networks once, and its
    :class:`~iclfs.method._training.Trainer` is built from that plan.

    Attributes
    ----------
    d, n : int
        The map's shape: features (the batch) and samples (the attention's width).
    schedule : str
        ``training.schedule``.
    device : torch.device
    precision : str
        The resolved precision: ``fp32``, ``tf32`` or ``bf16``.
    regime : Regime
        The layer sizes.
    attention_kernel : str
        The kernel the network is built with: ``fused``, ``blocked`` or ``literal``.
    use_attention : bool
        False for the ablation without attention (the kernel is then never called).
    loss_block_rows : int or None
        Rows of InfoNCE logits ``fast`` forms at a time; None for the ``paper`` schedule's dense losses.
    memory : MemoryEstimate
        The peak memory of one epoch.
    """

    d: int
    n: int
    schedule: str
    device: torch.device
    precision: str
    regime: Regime
    attention_kernel: str
    use_attention: bool
    loss_block_rows: int | None
    memory: MemoryEstimate

    @property
    def kernel_used(self) -> str:
        """The attention kernel that runs: the planned one, or ``none`` without attention."""
        return self.attention_kernel if self.use_attention else "none"

    @property
    def thread_invariant(self) -> bool:
        """Whether the network trains to the same bits at any thread count: ``fast`` on CPU (the ``paper``
        schedule keeps torch's own batch norm, to repeat the published loop bit for bit)."""
        return self.device.type == "cpu" and self.schedule != "paper"


def plan_training(d: int, n: int, training: TrainingConfig, runtime: RuntimeConfig) -> TrainingPlan:
    """The plan of one network on a (d, n) map: device, precision, layer sizes, kernels and memory.

    Raises ``ValueError`` for a device that is not here or a precision it
    cannot run, and, with ``runtime.check_memory``, :class:`ResourceLimitError`
    when one epoch will not fit the device (:func:`check_memory`); allocates
    nothing.
    """
    device = resolve_device(runtime.device)
    precision = resolve_precision(runtime.precision, training.schedule, device)
    regime = select_regime(n, training.regime)
    kernel = attention_kernel_for(training.schedule, n, device)
    rows = None if training.schedule == "paper" else loss_block_rows(d, device)
    memory = estimate_training_memory(d, n, regime, training.schedule, kernel, training.use_attention, rows)
    if runtime.check_memory:
        check_memory(memory, device, d, n, regime, training.schedule)
    return TrainingPlan(d, n, training.schedule, device, precision, regime, kernel, training.use_attention, rows,
                        memory)
