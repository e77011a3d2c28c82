"""SPEC §4 — the training loop. It alone owns device, seeding and progress.

Two schedules give the same objective:

``paper``
    The paper's literal loop: for each of the four positive views it embeds the
    anchor, the negative and the view (12 forward passes an epoch, fresh
    dropout each time) with ``nn.MultiheadAttention``'s own code path, forms
    the dense logits and Gram matrices, and back-propagates that view's loss;
    one optimizer step per epoch.
``fast``
    Embeds the anchor and the negative once per epoch (6 forward passes) with
    fused attention, computes the decorrelation term once in O(d d_z^2) and
    the InfoNCE terms block-wise with bounded memory. Each pass updates the
    BatchNorm running statistics with a momentum chosen so that, after the
    epoch, they equal what the paper's 12 updates (anchor, negative, view m,
    for m = 1..4) give (:func:`paper_equivalent_momenta`): eval-mode scores
    read those statistics. With dropout off and the same views, its loss,
    gradients and running statistics equal the paper's (tested); with dropout
    on it differs in which dropout masks are drawn.

With ``views.stream: reference`` (:mod:`iclfs.core.views`) and the ``paper``
schedule, an epoch draws from torch's global generator exactly what the
paper's published loop draws (views, then the 12 passes' dropout on CPU),
and the network's reference attention takes ``nn.MultiheadAttention``'s own
packed projection, so on CPU the trained weights equal the published code's
bit for bit (tested).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from tqdm.auto import tqdm

from .losses import (
    decorrelation_dense,
    decorrelation_loss,
    default_loss_chunk_size,
    info_nce_dense,
    info_nce_with_negative,
)
from .model import ATTENTION_KERNELS, ICLFSNetwork, Regime, select_regime
from .resources import available_cpus, check_memory, estimate_training_memory
from .views import ViewConfig, ViewMasks, Views, generate_masks, generate_views, reference_masks

SCHEDULES = ("fast", "paper")
#: From this many samples (the attention's embed dimension) up, ``fast`` on CPU
#: uses the query-chunked attention: with such wide rows its block products run
#: at GEMM speed while PyTorch's CPU flash kernel falls behind (a pass at
#: BASEHOCK's 4862 x 1993: 3.63 s against 4.45 s; at Prostate_GE's 102-wide
#: rows the flash kernel wins, 0.46 s against 0.79 s; docs/performance.md).
CHUNKED_ATTENTION_MIN_SAMPLES = 1000
#: Arithmetic of the training passes. ``fp32``: strict float32. ``tf32``
#: (CUDA only): float32 tensors, TensorFloat-32 matrix products. ``bf16``
#: (CUDA only): the network's forward passes under bfloat16 autocast, with
#: float32 weights, TF32 for the remaining float32 products, and the losses
#: and the scores always in float32. ``auto``: ``tf32`` for ``fast`` on CUDA,
#: else ``fp32``. On CPU only ``fp32`` is allowed: bf16 there is about 100x
#: slower than fp32 on the CPUs this was measured on.
PRECISIONS = ("auto", "fp32", "tf32", "bf16")


@dataclass(frozen=True)
class TrainingConfig:
    """Every training setting, SPEC §3-4 defaults."""

    epochs: int = 100
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    temperature: float = 0.05
    schedule: str = "fast"  # paper: the literal loop, ~2-3x slower, for fidelity checks
    device: str = "auto"
    regime: str = "auto"
    regime_threshold: int = 1000
    decorrelation_weight: float | None = None  # None: the regime's lambda
    dropout: float = 0.1
    leaky_slope: float = 0.2
    bn_momentum: float = 0.01
    use_attention: bool = True
    use_decorrelation: bool = True
    attention_kernel: str = "auto"  # auto: see attention_kernel_for
    attention_chunk_size: int | None = None
    loss_chunk_size: int | None = None
    precision: str = "auto"  # see PRECISIONS
    compile: str | None = None  # a torch.compile backend for the network ("inductor"); None: eager
    num_threads: int | None = None  # None: on CPU, torch's count capped at the CPUs this process may use
    check_memory: bool = True  # refuse up front a run whose estimated memory exceeds the device's
    progress: bool = True

    def __post_init__(self) -> None:
        if int(self.epochs) != self.epochs or self.epochs < 1:
            raise ValueError(f"training.epochs must be a positive integer, got {self.epochs!r}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"training.schedule must be one of {SCHEDULES}, got {self.schedule!r}")
        if self.temperature <= 0:
            raise ValueError(f"training.temperature must be > 0, got {self.temperature!r}")
        if self.learning_rate <= 0:
            raise ValueError(f"training.learning_rate must be > 0, got {self.learning_rate!r}")
        if self.weight_decay < 0:
            raise ValueError(f"training.weight_decay must be >= 0, got {self.weight_decay!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"training.dropout must be in [0, 1), got {self.dropout!r}")
        if self.attention_kernel != "auto" and self.attention_kernel not in ATTENTION_KERNELS:
            raise ValueError(
                f"training.attention_kernel must be 'auto' or one of {ATTENTION_KERNELS}, got {self.attention_kernel!r}"
            )
        if self.precision not in PRECISIONS:
            raise ValueError(f"training.precision must be one of {PRECISIONS}, got {self.precision!r}")
        for name in ("attention_chunk_size", "loss_chunk_size"):
            value = getattr(self, name)
            if value is not None and (int(value) != value or value < 1):
                raise ValueError(f"training.{name} must be a positive integer or null, got {value!r}")
        if self.num_threads is not None and (int(self.num_threads) != self.num_threads or self.num_threads < 1):
            raise ValueError(f"training.num_threads must be a positive integer or null, got {self.num_threads!r}")
        if self.compile is not None:
            import torch._dynamo

            known = torch._dynamo.list_backends(exclude_tags=())
            if self.compile not in known:
                raise ValueError(f"training.compile must be null or a torch.compile backend ({', '.join(known)}), "
                                 f"got {self.compile!r}")
        device = resolve_device(self.device)  # fail on an unknown device before any work
        if device.type == "cpu" and self.precision in ("tf32", "bf16"):
            raise ValueError(
                f"training.precision {self.precision!r} needs a CUDA device, but training.device "
                f"{self.device!r} runs on the CPU, where only fp32 is supported (bf16 on CPU is about 100x "
                "slower than fp32); use 'auto' or 'fp32'"
            )

    def attention_kernel_for(self, n_samples: int, device: torch.device | str = "cpu") -> str:
        """The attention kernel a run on maps with ``n_samples`` columns uses.

        ``auto`` is the paper's literal kernel for ``paper``; for ``fast`` it is
        the fused kernel, except on CPU with at least
        :data:`CHUNKED_ATTENTION_MIN_SAMPLES` columns (the attention's embed
        dimension), where the query-chunked kernel is faster.
        """
        if self.attention_kernel != "auto":
            return self.attention_kernel
        if self.schedule == "paper":
            return "reference"
        if torch.device(device).type == "cpu" and n_samples >= CHUNKED_ATTENTION_MIN_SAMPLES:
            return "chunked"
        return "fused"

    def loss_chunk_size_for(self, n_features: int, device: torch.device | str = "cpu") -> int | None:
        """Rows of the InfoNCE logits ``fast`` forms at a time: ``loss_chunk_size``, or by default
        blocks of about 2 MiB on CPU (cache-sized) and 256 MiB elsewhere (see
        :func:`iclfs.core.losses.default_loss_chunk_size`). None for ``paper``, whose losses are dense."""
        if self.schedule == "paper":
            return None
        return int(self.loss_chunk_size or default_loss_chunk_size(n_features, device))

    def precision_for(self, device: torch.device | str = "cpu") -> str:
        """The precision (one of ``fp32``, ``tf32``, ``bf16``) a run on ``device`` uses; see :data:`PRECISIONS`."""
        if self.precision != "auto":
            return self.precision
        return "tf32" if torch.device(device).type == "cuda" and self.schedule == "fast" else "fp32"


def resolve_device(device: str) -> torch.device:
    """``auto`` -> ``cuda`` when available, else ``cpu``; anything else must exist here."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"training.device {device!r} is not a device name (use auto, cpu, cuda, cuda:N)") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"training.device is {device!r} but no CUDA device is available; use 'auto' or 'cpu'")
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"training.device {device!r} is not supported (use auto, cpu, cuda, cuda:N)")
    return dev


@dataclass
class TrainingResult:
    """A trained network and what happened while training it."""

    model: ICLFSNetwork
    regime: Regime
    device: str
    precision: str = "fp32"  # the resolved precision (fp32, tf32 or bf16)
    threads: int = 1  # torch's intra-op threads during training
    loss_chunk_size: int | None = None  # InfoNCE logits rows per block (fast); None for paper's dense losses
    history: list[dict] = field(default_factory=list)  # one row per epoch
    config: dict = field(default_factory=dict)


def build_model(n_samples: int, config: TrainingConfig,
                device: torch.device | str = "cpu") -> tuple[ICLFSNetwork, Regime]:
    """The network for maps with ``n_samples`` columns, sized by the regime, its kernels chosen for ``device``."""
    regime = select_regime(n_samples, config.regime, config.regime_threshold)
    model = ICLFSNetwork(
        n_samples,
        regime,
        dropout=config.dropout,
        leaky_slope=config.leaky_slope,
        bn_momentum=config.bn_momentum,
        use_attention=config.use_attention,
        attention_kernel=config.attention_kernel_for(n_samples, device),
        attention_chunk_size=config.attention_chunk_size,
    )
    return model, regime


def _decorrelation_weight(config: TrainingConfig, regime: Regime) -> float:
    if not config.use_decorrelation:
        return 0.0
    if config.decorrelation_weight is not None:
        return float(config.decorrelation_weight)
    return regime.decorrelation_weight


#: A factory of the context the network's forward passes run in (autocast or nothing).
ForwardContext = Callable[[], contextlib.AbstractContextManager]


def paper_step(model: ICLFSNetwork, A: torch.Tensor, views: Views, temperature: float, lam: float,
               loss_chunk_size: int | None = None,
               forward_context: ForwardContext = contextlib.nullcontext) -> dict[str, float]:
    """Accumulate gradients of the literal loop for one epoch (no optimizer step).

    Dense losses, as the paper writes them; ``loss_chunk_size`` is ignored.
    Only the network's passes run in ``forward_context``; the losses are float32.
    """
    con_total = dec_total = 0.0
    m = len(views.positives)
    for view in views.positives:
        with forward_context():
            _, z_anchor = model(A)
            _, z_neg = model(views.negative)
            _, z_pos = model(view)
        con = info_nce_dense(z_anchor, z_pos, z_neg, temperature)
        dec = decorrelation_dense(z_anchor) if lam else z_anchor.new_zeros(())
        (con / m + lam * dec).backward()
        con_total += con.item() / m
        dec_total += dec.item()
    return {"loss": con_total + lam * dec_total, "contrastive": con_total, "decorrelation": dec_total / m}


def paper_equivalent_momenta(momentum: float, n_views: int) -> list[float]:
    """BatchNorm momenta for the passes anchor, negative, view 1..m of ``fast_step``.

    The paper's epoch updates the running statistics 3 m times, in the order
    (anchor, negative, view i) for i = 1..m, each with ``momentum``: a statistic
    seen at update t of T = 3 m ends with weight momentum (1 - momentum)^(T - t).
    Summing the anchor's m weights, the negative's m weights and each view's
    one weight, and solving the EMA recursion of the fast order backwards,
    gives per-pass momenta whose 2 + m updates leave the same running
    statistics (exactly, when each map's batch statistics are the same in
    every pass, i.e. with dropout off).
    """
    keep = 1.0 - momentum
    total = 3 * n_views
    weight = lambda t: momentum * keep ** (total - t)  # noqa: E731  (t = 1..total)
    anchor = sum(weight(3 * i + 1) for i in range(n_views))
    negative = sum(weight(3 * i + 2) for i in range(n_views))
    targets = [anchor, negative, *(weight(3 * i + 3) for i in range(n_views))]
    momenta: list[float] = []
    later = 1.0  # product of (1 - mu) over the passes after this one
    for target in reversed(targets):
        mu = target / later
        momenta.append(mu)
        later *= 1.0 - mu
    return momenta[::-1]


class _BatchNormMomentum:
    """Set the momentum of every BatchNorm layer for one forward pass, then restore it."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.layers = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        self.saved = [layer.momentum for layer in self.layers]

    def __call__(self, momentum: float) -> _BatchNormMomentum:
        for layer in self.layers:
            layer.momentum = momentum
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        for layer, momentum in zip(self.layers, self.saved, strict=True):
            layer.momentum = momentum


def fast_step(model: ICLFSNetwork, A: torch.Tensor, views: Views, temperature: float, lam: float,
              loss_chunk_size: int | None = None,
              forward_context: ForwardContext = contextlib.nullcontext) -> dict[str, float]:
    """Accumulate gradients of the same objective with anchor/negative embedded once.

    The BatchNorm running statistics end the epoch as the paper's loop leaves
    them (see :func:`paper_equivalent_momenta`). Only the network's passes run
    in ``forward_context``; the losses are float32.
    """
    m = len(views.positives)
    bn = _BatchNormMomentum(model)
    momenta = paper_equivalent_momenta(bn.saved[0], m) if bn.layers else [None] * (2 + m)
    with bn(momenta[0]), forward_context():
        _, z_anchor = model(A)
    with bn(momenta[1]), forward_context():
        _, z_neg = model(views.negative)
    positives = []
    for view, momentum in zip(views.positives, momenta[2:], strict=True):
        with bn(momentum), forward_context():
            positives.append(model(view)[1])
    con = sum(
        info_nce_with_negative(z_anchor, z_pos, z_neg, temperature, loss_chunk_size) for z_pos in positives
    ) / m
    dec = decorrelation_loss(z_anchor) if lam else z_anchor.new_zeros(())
    # The paper adds lambda * L_dec once per positive view: m (four) times per step.
    loss = con + m * lam * dec
    loss.backward()
    return {"loss": loss.item(), "contrastive": con.item(), "decorrelation": dec.item()}


STEPS = {"paper": paper_step, "fast": fast_step}


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


def train(
    A: np.ndarray | torch.Tensor,
    config: TrainingConfig | None = None,
    view_config: ViewConfig | None = None,
    seed: int = 42,
) -> TrainingResult:
    """Train the ICLFS network on the inverted map ``A``.

    Args:
        A: (d, n) inverted, standardized data (one row per feature).
        config: training settings; SPEC defaults when None.
        view_config: keep ratios of the views; SPEC defaults when None.
        seed: seeds weights, dropout and views.

    Returns:
        The trained network (eval mode, on ``config.device``) and the per-epoch history.
        torch's thread count and TF32 flags are set for the run
        (:func:`compute_settings`) and restored when it ends.
    """
    config = config or TrainingConfig()
    view_config = view_config or ViewConfig()
    device = resolve_device(config.device)
    precision = config.precision_for(device)

    torch.manual_seed(seed)
    anchor = torch.as_tensor(A, dtype=torch.float32, device=device)
    d, n = anchor.shape
    model, regime = build_model(n, config, device)
    loss_chunk = config.loss_chunk_size_for(d, device)
    if config.check_memory:
        estimate = estimate_training_memory(d, n, regime, config.schedule, config.attention_kernel_for(n, device),
                                            config.use_attention, loss_chunk)
        check_memory(estimate, device, d, n, regime, config.schedule)
    model.to(device).train()
    if config.compile:
        # In place, so the state dict keeps its keys. Each BatchNorm momentum of
        # fast_step, and eval mode, is one more graph: up to 7 compilations.
        model.compile(backend=config.compile)
    lam = _decorrelation_weight(config, regime)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    generator = torch.Generator(device=device).manual_seed(seed)
    step = STEPS[config.schedule]
    forward_context = forward_context_for(device, precision)

    history: list[dict] = []
    bar = tqdm(range(1, config.epochs + 1), desc=f"ICLFS {config.schedule} d={d} n={n}",
               unit="epoch", disable=not config.progress)
    with compute_settings(device, precision, config.num_threads) as threads:
        for epoch in bar:
            started = time.perf_counter()
            views = generate_views(anchor, view_config, generator)
            optimizer.zero_grad(set_to_none=True)
            losses = step(model, anchor, views, config.temperature, lam, loss_chunk, forward_context)
            optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            if not np.isfinite(losses["loss"]):
                raise FloatingPointError(f"training diverged at epoch {epoch}: loss is {losses['loss']}")
            history.append({"epoch": epoch, **losses, "seconds": time.perf_counter() - started})
            bar.set_postfix(loss=f"{losses['loss']:.4f}")
    model.eval()
    return TrainingResult(model, regime, str(device), precision, threads, loss_chunk, history, asdict(config))


def first_epoch_masks(A: np.ndarray | torch.Tensor, config: TrainingConfig | None = None,
                      view_config: ViewConfig | None = None, seed: int = 42) -> ViewMasks:
    """The masks :func:`train` draws in its first epoch on CPU with these settings, without training.

    The ``reference`` stream draws after the network's initialization from
    torch's global generator, so the network is built here too (and thrown
    away); that generator's state is restored on return.
    """
    config = config or TrainingConfig()
    view_config = view_config or ViewConfig()
    d, n = torch.as_tensor(A).shape
    if view_config.stream != "reference":
        return generate_masks(d, n, view_config, torch.Generator(device="cpu").manual_seed(seed), "cpu")
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed)  # train()'s torch.manual_seed, on CPU only
        build_model(n, config, "cpu")
        return reference_masks(d, n, view_config)


@torch.no_grad()
def embed(model: ICLFSNetwork, A: np.ndarray | torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Embed the anchor map once in eval mode: (H of shape (d, d_h), Z of shape (d, d_z))."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    anchor = torch.as_tensor(A, dtype=torch.float32, device=device)
    h, z = model(anchor)
    model.train(was_training)
    return h.float().cpu().numpy(), z.float().cpu().numpy()
