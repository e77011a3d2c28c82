"""The concrete-autoencoder baselines, written from the authors' papers and public code.

- **CAE**: Balın, Abid and Zou, "Concrete Autoencoders: Differentiable
  Feature Selection and Reconstruction", ICML 2019
  (github.com/mfbalin/Concrete-Autoencoders, Keras).
- **LS-CAE**: Shaham, Lindenbaum, Svirsky and Kluger, "Deep unsupervised
  feature selection by discarding nuisance and correlated features", Neural
  Networks 2022 (github.com/jsvir/lscae, PyTorch).

Both learn a concrete selector: k categorical distributions over the d
features, sampled with Gumbel noise at a temperature that falls during
training, whose argmax picks one feature each. The settings are the
reference code's (the options' defaults); what this module does differently
is said here.

**One model per k.** Both papers train one selector per k, and so does
:func:`select_cae` / :func:`select_lscae` for every k of the grid; the
training cost is therefore the sum over the grid (about 3.5x one model at
k = 300 for the grid 50..300, since the selector and decoder grow with k).
A ranking derived from one model at the largest k would cost one model but
select for k < 300 from a model never asked to choose k features; the
benchmark measures the methods as published. The order of the largest k's
model (each feature's highest selection probability) scores every feature
for ``scores_`` and ``ranking_``.

**Exactly k distinct features.** The argmax of two rows (CAE) or columns
(LS-CAE) can be the same feature. The selection keeps each distinct argmax,
in order of its row's probability, and fills up to k with the features of
highest selection probability not yet chosen (ties by index).

CAE follows its paper's experiment code (``concrete_estimator.py``): a
decoder of one hidden layer of 3k/2 units (leaky ReLU, slope 0.2; dropout
0.1), the temperature from 10 to 0.01 over every step, a try ending early
once the mean over rows of the largest selection probability exceeds 0.998,
and another try with twice the epochs while that mean is at most 0.99.

Departures from the reference code:

- **CAE makes one try** (``tries: 1``; the reference allows five). On the
  small tables the selector is nowhere near sure after 300 epochs (ALLAML at
  k = 300: a mean largest probability of 0.0002, 118 s on this CPU), so the
  reference would run all five tries, 31 times the epochs; ``tries: 5``
  restores it where the time is there (a GPU).
- CAE trains on every sample; the experiments held out 10 % for validation.
- A CAE try's early end is checked after each epoch (the reference: each
  step); its Adam has PyTorch's epsilon 1e-8 (TensorFlow's: 1e-7 or 1e-8 by
  version); the logits start as the package's (Glorot normal, (k, d)).
- LS-CAE's kernel scale is floored at 1e-7 so duplicated samples cannot make
  it zero; its Laplacian term needs no neighbour search beyond the scale
  (the reference's ``laplacian_k`` neighbours are computed but unused).
- Both: the Gumbel noise, the batches, the weights and dropout come from one
  torch seed per model, so a CPU run is repeatable.
- Both: on the CPU, subnormal floats are flushed to zero while they train
  (:func:`iclfs.method._runtime.denormals_flushed`): at a low temperature most
  selection probabilities are subnormal, and the CPU's slow path for them
  took half of LS-CAE's time. No selection changed where compared.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from iclfs.method._config import RuntimeConfig, Section, integer, number, optional, param
from iclfs.method._runtime import compute_settings, denormals_flushed, resolve_device

from ._result import BaselineResult

CAE_UNIFORM_LOW = float(np.finfo(np.float32).tiny)  # the lower bound of CAE's uniform noise (its experiments)
LSCAE_UNIFORM_LOW = 1e-6  # the lower bound of LS-CAE's uniform noise


# ---------------------------------------------------------------- options


#: The reference implementations' constants. CAE: no further try once the mean over rows of the selector's
#: largest probability exceeds the target, and a try ends early past the stop. LS-CAE: both learning rates are
#: multiplied by the decay every step epochs, the decoder's never below the floor.
CAE_MEAN_MAX_TARGET = 0.99
CAE_STOP_MEAN_MAX = 0.998
LSCAE_LR_DECAY = 0.1
LSCAE_LR_STEP = 100
LSCAE_MIN_DECODER_LR = 1e-5


@dataclass(frozen=True)
class CAEOptions(Section):
    """The concrete autoencoder's training (Balın, Abid and Zou, 2019); the reference code's settings."""

    SECTION: ClassVar[str] = "baselines.cae"

    epochs: int = param(300, integer(1, 100_000), "epochs of the first try")
    learning_rate: float = param(1e-3, number(0, low_open=True), "Adam learning rate")
    batch_size: int | None = param(None, optional(integer(1)), "null: max(n // 256, 16)")
    start_temperature: float = param(10.0, number(0, low_open=True), "the temperature of the first step")
    end_temperature: float = param(0.01, number(0, low_open=True), "the temperature of the last step")
    hidden: int | None = param(None, optional(integer(1)), "the decoder's hidden width; null: 3k / 2")
    dropout: float = param(0.1, number(0, 1, high_open=True), "dropout after the hidden layer")
    tries: int = param(1, integer(1, 10), "trainings at most, each with twice the epochs of the last "
                                          "(the reference: 5)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.end_temperature > self.start_temperature:
            from iclfs.method._config import ParameterError

            raise ParameterError(f"baselines.cae.end_temperature ({self.end_temperature}) must not exceed "
                                 f"start_temperature ({self.start_temperature})")


@dataclass(frozen=True)
class LSCAEOptions(Section):
    """LS-CAE's training (Shaham et al., 2022); the reference code's settings."""

    SECTION: ClassVar[str] = "baselines.lscae"

    epochs: int = param(500, integer(1, 100_000), "epochs")
    batch_size: int = param(64, integer(2), "the last partial batch is dropped; n < batch_size: one batch of all")
    hidden: int = param(128, integer(1), "width of the decoder's two hidden layers")
    decoder_lr: float = param(1e-3, number(0, low_open=True), "the decoder's Adam learning rate")
    selector_lr: float = param(1e-1, number(0, low_open=True), "the selector's Adam learning rate")
    start_temperature: float = param(10.0, number(0, low_open=True), "the temperature of the first epoch")
    end_temperature: float = param(0.01, number(0, low_open=True), "the temperature it falls to")
    scale_neighbor: int = param(2, integer(2), "the kernel scale: the largest distance to this neighbour "
                                               "(the sample itself first)")


# ---------------------------------------------------------------- schedules


def cae_temperatures(start: float, end: float, steps: int) -> np.ndarray:
    """CAE's temperature at each of ``steps`` training steps: ``max(end, start * alpha^(s + 1))``,
    ``alpha = exp(log(end / start) / steps)`` (the reference updates it before each step's use)."""
    alpha = math.exp(math.log(end / start) / steps)
    return np.maximum(end, start * alpha ** np.arange(1, steps + 1, dtype=np.float64))


def lscae_temperature(epoch: int, epochs: int, start: float, end: float) -> float:
    """LS-CAE's temperature in ``epoch``: ``max(end, start (end / start)^(epoch / epochs))``. The
    reference divides the noisy logits by it twice, so the softmax's effective temperature is its square."""
    return max(end, start * (end / start) ** (epoch / epochs))


def lscae_learning_rates(epoch: int, options: LSCAEOptions) -> tuple[float, float]:
    """(decoder, selector) learning rates in ``epoch``: ``0.1^floor((epoch + 1) / 100)`` times the initial rates
    (the reference's LambdaLR, stepped after each epoch), the decoder's floored at 1e-5."""
    factor = LSCAE_LR_DECAY ** math.floor((epoch + 1) / LSCAE_LR_STEP)
    return max(options.decoder_lr * factor, LSCAE_MIN_DECODER_LR), options.selector_lr * factor


def distinct_selection(argmax: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """Exactly k distinct features from a selector's k argmaxes (module docstring).

    Parameters
    ----------
    argmax : ndarray of shape (k,)
        Each selector row's chosen feature (possibly repeated).
    probabilities : ndarray of shape (k, d)
        Each row's selection probabilities.

    Returns
    -------
    ndarray of shape (k,), dtype=int64
        The distinct argmaxes by their row's probability, then the other
        features by their highest probability over the rows, best first.
    """
    argmax = np.asarray(argmax, dtype=np.int64)
    k, d = probabilities.shape
    row_best = probabilities[np.arange(k), argmax]
    chosen: list[int] = []
    for row in np.lexsort((np.arange(k), -row_best)):
        if int(argmax[row]) not in chosen:
            chosen.append(int(argmax[row]))
    if len(chosen) < k:
        rest = feature_probability_order(probabilities)
        chosen += [int(j) for j in rest if j not in set(chosen)][: k - len(chosen)]
    return np.asarray(chosen, dtype=np.int64)


def feature_probability_order(probabilities: np.ndarray) -> np.ndarray:
    """Features by their highest selection probability over the rows, best first (ties by index)."""
    best = probabilities.max(axis=0)
    return np.lexsort((np.arange(len(best)), -best)).astype(np.int64)


# ---------------------------------------------------------------- training


@dataclass
class ConcreteFit:
    """One trained selector.

    Attributes
    ----------
    selected : ndarray of shape (k,)
        Exactly k distinct features, best first.
    probabilities : ndarray of shape (k, d)
        Each selector row's softmax of its logits.
    history : list of dict
        One row per epoch: ``try``, ``epoch``, ``loss``, ``temperature``, ``mean_max_probability``.
    """

    selected: np.ndarray
    probabilities: np.ndarray
    history: list[dict]


def _keras_dense(inputs: int, outputs: int) -> nn.Linear:
    layer = nn.Linear(inputs, outputs)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


def _glorot_normal_logits(k: int, d: int) -> torch.Tensor:
    """Keras's glorot_normal for a (k, d) weight: a normal truncated at two deviations, std sqrt(2 / (k + d))."""
    std = math.sqrt(2.0 / (k + d)) / 0.87962566103423978  # the truncation's variance correction, as Keras
    logits = torch.empty(k, d)
    nn.init.trunc_normal_(logits, std=std, a=-2 * std, b=2 * std)
    return logits


def train_cae(X: torch.Tensor, k: int, options: CAEOptions, progress: bool = False) -> ConcreteFit:
    """Train CAE's selector and decoder for ``k`` on standardized ``X`` (n, d), restarting with doubled
    epochs while the selector is unsure (module docstring). Seed torch before calling."""
    n, d = X.shape
    batch = options.batch_size or max(n // 256, 16)
    steps_per_epoch = math.ceil(n / batch)
    hidden = options.hidden or (3 * k) // 2
    history: list[dict] = []
    epochs = options.epochs
    for attempt in range(options.tries):
        logits = nn.Parameter(_glorot_normal_logits(k, d).to(X.device))
        decoder = nn.Sequential(_keras_dense(k, hidden), nn.LeakyReLU(0.2), nn.Dropout(options.dropout),
                                _keras_dense(hidden, d)).to(X.device)
        optimizer = torch.optim.Adam([logits, *decoder.parameters()], lr=options.learning_rate)
        temperatures = torch.as_tensor(cae_temperatures(options.start_temperature, options.end_temperature,
                                                        epochs * steps_per_epoch), dtype=torch.float32)
        step = 0
        decoder.train()
        for epoch in tqdm(range(epochs), desc=f"CAE k={k} try {attempt + 1}", disable=not progress, leave=False):
            order = torch.randperm(n, device=X.device)
            total = 0.0
            for start in range(0, n, batch):
                xb = X[order[start:start + batch]]
                uniform = torch.rand(k, d, device=X.device) * (1.0 - CAE_UNIFORM_LOW) + CAE_UNIFORM_LOW
                gumbel = -torch.log(-torch.log(uniform))
                weights = torch.softmax((logits + gumbel) / temperatures[step], dim=1)
                loss = torch.mean((decoder(xb @ weights.T) - xb) ** 2)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                total += loss.item() * len(xb)
                step += 1
            with torch.no_grad():
                mean_max = float(torch.softmax(logits, dim=1).max(dim=1).values.mean())
            history.append({"try": attempt, "epoch": epoch, "loss": total / n,
                            "temperature": float(temperatures[step - 1]), "mean_max_probability": mean_max})
            if mean_max > CAE_STOP_MEAN_MAX:
                break
        if mean_max > CAE_MEAN_MAX_TARGET:
            break
        epochs *= 2
    with torch.no_grad():
        probabilities = torch.softmax(logits, dim=1).cpu().numpy().astype(np.float64)
        argmax = logits.argmax(dim=1).cpu().numpy()
    return ConcreteFit(distinct_selection(argmax, probabilities), probabilities, history)


def _lscae_decoder(k: int, hidden: int, d: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(k, hidden, bias=False), nn.BatchNorm1d(hidden), nn.LeakyReLU(0.2),
        nn.Linear(hidden, hidden, bias=False), nn.BatchNorm1d(hidden), nn.LeakyReLU(0.2),
        nn.Linear(hidden, d),
    )


def laplacian_term(gated: torch.Tensor, k: int, batch_size: int, scale_neighbor: int = 2) -> torch.Tensor:
    """LS-CAE's Laplacian-score term on the gated batch (b, d): ``-trace(xx^T L^2 xx) / (batch_size k)``.

    D holds squared distances; the scale is the largest distance to the
    ``scale_neighbor``-th neighbour (the sample itself first); the kernel is
    ``exp(-D^2 / scale^2)`` (the reference squares D again), symmetrized;
    ``L = D_W^{-1} W`` is the random-walk matrix.
    """
    squared = torch.cdist(gated, gated).pow(2)
    distances = squared.clamp_min(0).sqrt()
    nearest = torch.sort(distances, dim=1).values[:, min(scale_neighbor, len(gated)) - 1]
    scale = nearest.max().detach().clamp_min(1e-7)
    W = torch.exp(-squared.pow(2) / scale**2)
    W = (W + W.T) / 2
    L = W / W.sum(dim=1, keepdim=True)
    L2 = L @ L
    return -torch.sum((L2 @ gated) * gated) / (batch_size * k)


def train_lscae(X: torch.Tensor, k: int, options: LSCAEOptions, progress: bool = False) -> ConcreteFit:
    """Train LS-CAE's selector and decoder for ``k`` on standardized ``X`` (n, d). Seed torch before calling."""
    n, d = X.shape
    batch = min(options.batch_size, n)
    logits = nn.Parameter(torch.zeros(d, k, device=X.device))
    decoder = _lscae_decoder(k, options.hidden, d).to(X.device)
    optimizer = torch.optim.Adam([{"params": decoder.parameters(), "lr": options.decoder_lr},
                                  {"params": [logits], "lr": options.selector_lr}], betas=(0.5, 0.999))
    history: list[dict] = []
    decoder.train()
    for epoch in tqdm(range(options.epochs), desc=f"LS-CAE k={k}", disable=not progress, leave=False):
        decoder_lr, selector_lr = lscae_learning_rates(epoch, options)
        optimizer.param_groups[0]["lr"], optimizer.param_groups[1]["lr"] = decoder_lr, selector_lr
        temperature = lscae_temperature(epoch, options.epochs, options.start_temperature, options.end_temperature)
        order = torch.randperm(n, device=X.device)
        losses = []
        for start in range(0, n - batch + 1, batch):  # the last partial batch is dropped
            xb = X[order[start:start + batch]]
            uniform = torch.rand(d, k, device=X.device) * (1.0 - LSCAE_UNIFORM_LOW) + LSCAE_UNIFORM_LOW
            gumbel = -torch.log(-torch.log(uniform))
            weights = torch.softmax((logits + gumbel) / temperature / temperature, dim=0)
            reconstruction = decoder(xb @ weights)
            gated = xb * weights.max(dim=1).values
            ls = laplacian_term(gated, k, options.batch_size, options.scale_neighbor)
            rec = torch.mean((xb - reconstruction) ** 2)
            loss = rec / rec.item() + ls / abs(ls.item())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append((loss.item(), ls.item(), rec.item()))
        with torch.no_grad():
            mean_max = float(torch.softmax(logits, dim=0).max(dim=0).values.mean())
        history.append({"try": 0, "epoch": epoch, "loss": float(np.mean([v[0] for v in losses])),
                        "laplacian": float(np.mean([v[1] for v in losses])),
                        "reconstruction": float(np.mean([v[2] for v in losses])),
                        "temperature": temperature, "mean_max_probability": mean_max})
    with torch.no_grad():
        probabilities = torch.softmax(logits, dim=0).T.cpu().numpy().astype(np.float64)  # (k, d)
        argmax = logits.argmax(dim=0).cpu().numpy()
    return ConcreteFit(distinct_selection(argmax, probabilities), probabilities, history)


# ---------------------------------------------------------------- the registry's entries


def cae_memory(n: int, d: int, k: int) -> int:
    """Peak bytes (float32) of CAE at the largest k: the data, the (k, d) logits with their noise, softmax,
    gradients and Adam moments, the decoder's (3k/2, d) output layer with its own."""
    return 4 * (n * d + 8 * k * d + 4 * (3 * k // 2 + 1) * d)


def lscae_memory(n: int, d: int, k: int) -> int:
    """Peak bytes (float32) of LS-CAE at the largest k: as CAE, with a 128-wide decoder and the gated batch."""
    return 4 * (2 * n * d + 8 * k * d + 4 * 129 * d)


def _fit_every_k(train, X: np.ndarray, k_values: Sequence[int], seed: int, options: Section,
                 runtime: RuntimeConfig | None) -> BaselineResult:
    runtime = runtime or RuntimeConfig(progress=False)
    device = resolve_device(runtime.device)
    k_values = [int(k) for k in k_values]
    d = X.shape[1]
    if any(k > d for k in k_values):
        raise ValueError(f"k must be at most the {d} features, got {max(k_values)}")
    selections: dict[int, np.ndarray] = {}
    history: list[dict] = []
    scores = None
    with compute_settings(device, "fp32", runtime.num_threads), denormals_flushed(device), torch.random.fork_rng(
            devices=[device.index or 0] if device.type == "cuda" else []):
        data = torch.as_tensor(np.asarray(X, dtype=np.float32), device=device)
        for k in sorted(k_values):
            torch.manual_seed(seed)  # one model per k, each from the run's seed
            fit = train(data, k, options, progress=runtime.progress)
            selections[k] = fit.selected
            history += [{"k": k, **row} for row in fit.history]
            if k == max(k_values):
                best = fit.probabilities.max(axis=0)
                scores = best.copy()
                scores[fit.selected] = 1.0 + best[fit.selected]  # the k chosen first, then by probability
    return BaselineResult({k: selections[k] for k in k_values}, scores, history)


def select_cae(X: np.ndarray, k_values: Sequence[int], *, seed: int, options: CAEOptions,
               runtime: RuntimeConfig | None = None, **_: object) -> BaselineResult:
    """CAE's selection at every k: one model per k (module docstring)."""
    return _fit_every_k(train_cae, X, k_values, seed, options, runtime)


def select_lscae(X: np.ndarray, k_values: Sequence[int], *, seed: int, options: LSCAEOptions,
                 runtime: RuntimeConfig | None = None, **_: object) -> BaselineResult:
    """LS-CAE's selection at every k: one model per k (module docstring)."""
    return _fit_every_k(train_lscae, X, k_values, seed, options, runtime)
