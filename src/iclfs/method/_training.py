"""Training one network: the loop alone owns device, seeding and progress (docs/method.md §4).

Two schedules give the same objective:

``fast`` (the default)
    Embeds the anchor and the negative once per epoch (6 forward passes) with
    fused attention, computes the decorrelation term once in O(d d_z^2) and
    the InfoNCE terms block-wise with bounded memory. Each pass updates the
    BatchNorm running statistics with a momentum chosen so that, after the
    epoch, they equal what the paper's 12 updates (anchor, negative, view m,
    for m = 1..4) give (:func:`paper_equivalent_momenta`): eval-mode scores
    read those statistics. With dropout off and the same views, its loss,
    gradients and running statistics equal the paper's (tested); with dropout
    on it differs in which dropout masks are drawn.
``paper``
    The paper's literal loop, :func:`iclfs.method._replay.paper_step`.

:class:`Trainer` holds one network's training state and runs one epoch per
:meth:`Trainer.train_epoch`; :func:`train` runs ``training.epochs`` of them. The
speed benchmark times :meth:`Trainer.train_epoch` itself.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch

from ._config import RuntimeConfig, TrainingConfig, ViewConfig
from ._losses import decorrelation_loss, info_nce_with_negative
from ._model import ICLFSNetwork
from ._progress import Progress
from ._replay import paper_step, published_masks
from ._runtime import (ForwardContext, Regime, ThreadChoice, TrainingPlan, compute_settings, forward_context_for,
                       plan_training, thread_choice)
from ._scores import embed
from ._views import ViewMasks, Views, apply_masks, generate_masks, generate_views


@dataclass
class TrainingResult:
    """A trained network and what happened while training it."""

    model: ICLFSNetwork
    regime: Regime
    device: str
    precision: str = "fp32"  # the resolved precision (fp32, tf32 or bf16)
    # torch's intra-op threads during training, the count most epochs ran on (each history row has its epoch's;
    # ``paper`` on CPU: its bits depend on them)
    threads: int = 1
    attention_kernel: str = "fused"  # fused, blocked, literal, or none without attention
    loss_block_rows: int | None = None  # InfoNCE logits rows per block (fast); None for paper's dense losses
    history: list[dict] = field(default_factory=list)  # one row per epoch
    seconds: float = 0.0  # wall time of the whole run: building the network, every epoch


def build_model(plan: TrainingPlan, training: TrainingConfig) -> ICLFSNetwork:
    """The network a plan describes: ``plan.n`` columns, its regime's layer sizes, its attention kernel
    (docs/method.md §3), with ``training``'s dropout.

    On CPU the ``fast`` schedule's network trains to the same result at any
    thread count (``thread_invariant``); the ``paper`` schedule keeps torch's
    own batch norm, to repeat the published loop bit for bit.
    """
    return ICLFSNetwork(plan.n, plan.regime, dropout=training.dropout, use_attention=plan.use_attention,
                        attention_kernel=plan.attention_kernel,
                        thread_invariant=plan.thread_invariant)


def decorrelation_weight(training: TrainingConfig, regime: Regime) -> float:
    """lambda: 0 without decorrelation (the ablation), else the regime's (docs/method.md §4)."""
    return regime.decorrelation_weight if training.use_decorrelation else 0.0


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
              loss_block_rows: int | None = None,
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
        info_nce_with_negative(z_anchor, z_pos, z_neg, temperature, loss_block_rows) for z_pos in positives
    ) / m
    dec = decorrelation_loss(z_anchor) if lam else z_anchor.new_zeros(())
    # The paper adds lambda * L_dec once per positive view: m (four) times per step.
    loss = con + m * lam * dec
    loss.backward()
    return {"loss": loss.item(), "contrastive": con.item(), "decorrelation": dec.item()}


class Trainer:
    """One network, its optimizer and its random streams: :meth:`step` runs one epoch.

    Parameters
    ----------
    A : array of shape (d, n)
        The inverted, standardized map (one row per feature).
    training, views, runtime : configs
        Defaults when None.
    seed : int
        Seeds the weights, the dropout and the views.
    plan : TrainingPlan, optional
        This network's plan (device, precision, regime, kernels, memory), as
        its member made it (:func:`~iclfs.method._members.train_member`);
        planned here for ``A``'s shape from ``training`` and ``runtime`` when
        None (a lone network, as the speed benchmark trains).

    The thread count and TF32 flags are the caller's to set around the steps
    (:func:`iclfs.method._runtime.compute_settings`), as :func:`train` does.
    """

    def __init__(self, A: np.ndarray | torch.Tensor, training: TrainingConfig | None = None,
                 views: ViewConfig | None = None, runtime: RuntimeConfig | None = None, seed: int = 42,
                 plan: TrainingPlan | None = None) -> None:
        self.training = training = training or TrainingConfig()
        self.views = views or ViewConfig()
        self.runtime = runtime = runtime or RuntimeConfig()
        d, n = A.shape
        self.plan = plan = plan or plan_training(d, n, training, runtime)
        if (d, n) != (plan.d, plan.n):
            raise ValueError(f"the training plan is for a ({plan.d}, {plan.n}) map, but the map is ({d}, {n})")
        self.device, self.precision, self.regime = plan.device, plan.precision, plan.regime
        self.attention_kernel, self.loss_block_rows = plan.kernel_used, plan.loss_block_rows
        torch.manual_seed(seed)
        self.anchor = torch.as_tensor(A, dtype=torch.float32, device=plan.device)
        self.model = build_model(plan, training).to(plan.device).train()
        self.lam = decorrelation_weight(training, plan.regime)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=training.learning_rate,
                                          weight_decay=training.weight_decay)
        self.generator = torch.Generator(device=plan.device).manual_seed(seed)
        self.forward_context = forward_context_for(plan.device, plan.precision)
        self.epoch = 0

    def draw_views(self) -> Views:
        """This epoch's views: from the training's generator, or the published code's draws."""
        if self.views.stream == "published":
            d, n = self.anchor.shape
            masks = published_masks(d, n, self.views)
            return apply_masks(self.anchor, ViewMasks(**{k: m.to(self.device) for k, m in masks.as_dict().items()}))
        return generate_views(self.anchor, self.views, self.generator)

    def train_epoch(self) -> dict:
        """One epoch: draw the views, accumulate the gradients, one optimizer step.

        Returns the epoch's row: ``epoch``, ``loss``, ``contrastive``, ``decorrelation``, ``seconds``.
        """
        started = time.perf_counter()
        views = self.draw_views()
        self.optimizer.zero_grad(set_to_none=True)
        if self.plan.schedule == "fast":
            losses = fast_step(self.model, self.anchor, views, self.training.temperature, self.lam,
                               self.loss_block_rows, self.forward_context)
        else:
            losses = paper_step(self.model, self.anchor, views, self.training.temperature, self.lam,
                                self.forward_context)
        self.optimizer.step()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.epoch += 1
        if not np.isfinite(losses["loss"]):
            raise FloatingPointError(f"training diverged at epoch {self.epoch}: loss is {losses['loss']}")
        return {"epoch": self.epoch, **losses, "seconds": time.perf_counter() - started}


def train(
    A: np.ndarray | torch.Tensor,
    training: TrainingConfig | None = None,
    views: ViewConfig | None = None,
    runtime: RuntimeConfig | None = None,
    seed: int = 42,
    *,
    epochs: int | None = None,
    progress: Progress | None = None,
    plan: TrainingPlan | None = None,
) -> TrainingResult:
    """Train one ICLFS network on the inverted map ``A`` of shape (d, n).

    Parameters
    ----------
    A : array of shape (d, n)
        Inverted, standardized data (one row per feature).
    training, views, runtime : configs, optional
        Defaults when None.
    seed : int
        Seeds the weights, the dropout and the views.
    epochs : int, optional
        Epochs to run; ``training.epochs`` when None (a member runs ``members.epochs``).
    progress : Progress, optional
        Counts this network's epochs (a run's members share one); else its own, logging when
        ``runtime.progress``.
    plan : TrainingPlan, optional
        The network's plan (:class:`Trainer`); planned for ``A``'s shape when None.

    Returns
    -------
    TrainingResult
        The network in eval mode on the training device, and one history row
        per epoch, with the threads it ran on. torch's thread count and TF32
        flags are set for the run and restored when it ends; under load the
        default thread policy may run the epochs on fewer threads
        (:func:`~iclfs.method._runtime.thread_choice`), which moves no bit.
    """
    started = time.perf_counter()
    runtime = runtime or RuntimeConfig()
    trainer = Trainer(A, training, views, runtime, seed, plan)
    epochs = trainer.training.epochs if epochs is None else int(epochs)
    d, n = trainer.anchor.shape
    if progress is None:
        progress = Progress(epochs, f"ICLFS {trainer.training.schedule} d={d} n={n}", runtime.progress)
    history: list[dict] = []
    with compute_settings(trainer.device, trainer.precision, runtime.num_threads) as threads:
        choice = thread_choice(trainer.plan, runtime.num_threads, threads)
        warm_up_each(trainer, choice)
        if progress.done == 0:  # the first estimate waits for an epoch on the count the choice keeps, if the
            # training has one after it (a shorter one is estimated at its second epoch, as without a choice)
            progress.estimate_at = max(progress.estimate_at, min(1 + len(choice.counts), progress.total - 1))
        for _ in range(epochs):
            with choice.epoch() as count:
                row = trainer.train_epoch()
            history.append(row | {"threads": count})
            progress.update(row["loss"])
    trainer.model.eval()
    most = Counter(row["threads"] for row in history).most_common(1)  # a tie: the count run first
    return TrainingResult(trainer.model, trainer.regime, str(trainer.device), trainer.precision,
                          most[0][0] if most else threads, trainer.attention_kernel, trainer.loss_block_rows,
                          history, time.perf_counter() - started)


_WARM: set[tuple] = set()  # (d, n, training, views, threads) this process has warmed up for


def warm_up(trainer: Trainer, threads: int) -> None:
    """One throwaway epoch and scoring pass on a spare network, before the first CPU training of its shape
    on several threads in this process.

    torch's CPU kernels can compute the worker threads' share differently
    the first time a process runs them: ``logsumexp`` over lung_small's
    325 x 325 logits on two threads differed in the worker's rows by up to
    47 ulps in 4 of 60 fresh processes, on its first call only, and in none
    on one thread (``benchmarks/results/replay_kernel.md``). A training that
    met it drifted from its first epoch on, and its list moved. With every kernel
    of a step and of the scoring run once first, the seeded training starts
    from warm kernels; the spare network leaves the seeded streams as they
    were (torch's global generator is forked and restored).
    """
    d, n = trainer.anchor.shape
    key = (d, n, trainer.training, trainer.views, threads)
    if trainer.device.type != "cpu" or threads < 2 or key in _WARM:
        return
    with torch.random.fork_rng(devices=[]):
        spare = Trainer(trainer.anchor, trainer.training, trainer.views, trainer.runtime, seed=0, plan=trainer.plan)
        spare.train_epoch()
        embed(spare.model, trainer.anchor)
    _WARM.add(key)


def warm_up_each(trainer: Trainer, choice: ThreadChoice) -> None:
    """:func:`warm_up` on each thread count ``choice`` may run an epoch on, its first last (training starts on
    it)."""
    for count in reversed(choice.counts):
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)
        warm_up(trainer, count)


def first_epoch_masks(A: np.ndarray | torch.Tensor, training: TrainingConfig | None = None,
                      views: ViewConfig | None = None, seed: int = 42) -> ViewMasks:
    """The masks :func:`train` draws in its first epoch on CPU with these settings, without training.

    The ``published`` stream draws after the network's initialization from
    torch's global generator, so the network is built here too (and thrown
    away); that generator's state is restored on return.
    """
    training = training or TrainingConfig()
    views = views or ViewConfig()
    d, n = torch.as_tensor(A).shape
    if views.stream != "published":
        return generate_masks(d, n, views, torch.Generator(device="cpu").manual_seed(seed), "cpu")
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed)  # the Trainer's torch.manual_seed, on CPU only
        build_model(plan_training(d, n, training, RuntimeConfig(device="cpu", check_memory=False)), training)
        return published_masks(d, n, views)
