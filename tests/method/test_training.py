"""method.md §4: the two training schedules and the training loop."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclfs.method import _training as training_module
from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method._replay import paper_step
from iclfs.method._runtime import (
    BLOCKED_ATTENTION_MIN_SAMPLES,
    ResourceLimitError,
    attention_kernel_for,
    check_memory,
    compute_settings,
    estimate_training_memory,
    loss_block_rows,
    resolve_device,
    select_regime,
)
from iclfs.method._scores import embed
from iclfs.method._training import (
    Trainer,
    build_model,
    fast_step,
    paper_equivalent_momenta,
    plan_training,
    train,
)
from iclfs.method._views import generate_views
from tests.method.test_thread_invariance import torch_threads

TAU = 0.05
CPU = RuntimeConfig(device="cpu", progress=False)


def dense_objective(model, A, views, tau, lam):
    """method.md §4 step loss written densely: sum_m (L_con(m)/4 + lam L_dec)."""
    _, za = model(A)
    _, zn = model(views.negative)
    a = za / za.norm(dim=1, keepdim=True)
    ng = zn / zn.norm(dim=1, keepdim=True)
    d = a.shape[0]
    eye = torch.eye(d, dtype=a.dtype)
    l_dec = ((a @ a.T - eye) ** 2).mean()
    total = 0.0
    for view in (views.light, views.heavy, views.pair_a, views.pair_b):
        _, zp = model(view)
        p = zp / zp.norm(dim=1, keepdim=True)
        logits = torch.cat([a @ p.T, (a * ng).sum(dim=1, keepdim=True)], dim=1) / tau
        l_con = F.cross_entropy(logits, torch.arange(d))
        total = total + l_con / 4 + lam * l_dec
    return total


def _setup(d=24, n=10, dtype=torch.float64, seed=0):
    config = TrainingConfig(dropout=0.0)
    torch.manual_seed(seed)
    plan = plan_training(d, n, config, CPU)
    model, regime = build_model(plan, config).to(dtype).train(), plan.regime
    A = torch.randn(d, n, generator=torch.Generator().manual_seed(seed + 1), dtype=dtype)
    views = generate_views(A, ViewConfig(), torch.Generator().manual_seed(seed + 2))
    return model, regime, A, views


@pytest.mark.parametrize("lam", [0.2, 0.0])
@pytest.mark.parametrize("block_rows", [None, 5])
def test_paper_and_fast_steps_same_loss_and_gradients(lam, block_rows):
    model, _, A, views = _setup()
    m_paper = copy.deepcopy(model)
    m_fast = copy.deepcopy(model)
    m_ref = copy.deepcopy(model)

    out_paper = paper_step(m_paper, A, views, TAU, lam)
    out_fast = fast_step(m_fast, A, views, TAU, lam, block_rows)
    ref = dense_objective(m_ref, A, views, TAU, lam)
    ref.backward()

    assert out_paper["loss"] == pytest.approx(ref.item(), rel=1e-9)
    assert out_fast["loss"] == pytest.approx(ref.item(), rel=1e-9)
    assert out_paper["contrastive"] == pytest.approx(out_fast["contrastive"], rel=1e-9)
    assert out_paper["decorrelation"] == pytest.approx(out_fast["decorrelation"], rel=1e-9, abs=1e-12)

    ref_grads = dict(m_ref.named_parameters())
    fast_grads = dict(m_fast.named_parameters())
    n_nonzero = 0
    for name, p in m_paper.named_parameters():
        assert p.grad is not None, name
        torch.testing.assert_close(p.grad, fast_grads[name].grad, atol=1e-9, rtol=1e-7, msg=name)
        torch.testing.assert_close(p.grad, ref_grads[name].grad, atol=1e-9, rtol=1e-7, msg=name)
        n_nonzero += int(p.grad.abs().sum() > 0)
    assert n_nonzero > len(ref_grads) // 2


def test_paper_and_fast_steps_float32():
    model, _, A, views = _setup(d=40, n=12, dtype=torch.float32, seed=3)
    m_paper, m_fast = copy.deepcopy(model), copy.deepcopy(model)
    lp = paper_step(m_paper, A, views, TAU, 0.2)["loss"]
    lf = fast_step(m_fast, A, views, TAU, 0.2)["loss"]
    assert lp == pytest.approx(lf, rel=1e-5)
    fast = dict(m_fast.named_parameters())
    # float32: the paper path sums dense logits, the fast one blocks of them, so
    # parameters whose gradient is a near-cancelling sum (e.g. out_proj.bias,
    # ~1e-6) differ by round-off of the order of the largest gradient's ulp;
    # the float64 test above checks them strictly.
    overall = max(float(p.grad.abs().max()) for p in m_paper.parameters())
    for name, p in m_paper.named_parameters():
        scale = float(p.grad.abs().max()) + 1e-12
        assert float((p.grad - fast[name].grad).abs().max()) <= 1e-4 * scale + 1e-5 * overall, name


def test_first_epoch_loss_equals_dense_objective():
    """history[0] is the objective (method.md §4) of the seeded initial model on the first views."""
    d, n, seed = 30, 12, 11
    A = np.random.default_rng(0).normal(size=(d, n)).astype(np.float32)
    config = TrainingConfig(epochs=1, dropout=0.0)
    result = train(A, config, ViewConfig(), CPU, seed=seed)

    torch.manual_seed(seed)
    plan = plan_training(d, n, config, CPU)
    model, regime = build_model(plan, config).train(), plan.regime
    anchor = torch.as_tensor(A)
    views = generate_views(anchor, ViewConfig(), torch.Generator().manual_seed(seed))
    expected = dense_objective(model, anchor, views, TAU, regime.decorrelation_weight).item()
    assert result.history[0]["loss"] == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("schedule", ["fast", "paper"])
def test_train_tiny_map(schedule):
    d, n = 40, 12
    A = np.random.default_rng(5).normal(size=(d, n)).astype(np.float32)
    config = TrainingConfig(epochs=3, schedule=schedule)
    result = train(A, config, ViewConfig(), CPU, seed=1)
    assert len(result.history) == 3
    assert [row["epoch"] for row in result.history] == [1, 2, 3]
    for row in result.history:
        for key in ("loss", "contrastive", "decorrelation", "seconds"):
            assert np.isfinite(row[key]), key
        assert row["loss"] > 0
    assert result.regime.name == "small"
    assert result.device == "cpu"
    assert not result.model.training
    # the schedule was the one asked for: paper runs the literal kernel and dense losses
    assert result.attention_kernel == ("literal" if schedule == "paper" else "fused")
    assert result.model.attention.kernel == result.attention_kernel
    assert (result.loss_block_rows is None) == (schedule == "paper")
    h, z = embed(result.model, A)
    assert h.shape == (d, 512) and z.shape == (d, 16)
    assert np.isfinite(h).all() and np.isfinite(z).all()


@pytest.mark.threads
def test_train_changes_parameters():
    d, n = 20, 8
    A = np.random.default_rng(6).normal(size=(d, n)).astype(np.float32)
    config = TrainingConfig(epochs=2)
    torch.manual_seed(4)
    initial = build_model(plan_training(d, n, config, CPU), config)
    result = train(A, config, ViewConfig(), CPU, seed=4)
    before = dict(initial.named_parameters())
    changed = [not torch.equal(before[k], p.detach()) for k, p in result.model.named_parameters()]
    assert all(changed)


@pytest.mark.threads
def test_train_is_deterministic_for_a_seed():
    d, n = 40, 12
    A = np.random.default_rng(7).normal(size=(d, n)).astype(np.float32)
    config = TrainingConfig(epochs=2)
    r1 = train(A, config, ViewConfig(), CPU, seed=42)
    r2 = train(A, config, ViewConfig(), CPU, seed=42)
    r3 = train(A, config, ViewConfig(), CPU, seed=43)
    h1, z1 = embed(r1.model, A)
    h2, z2 = embed(r2.model, A)
    h3, z3 = embed(r3.model, A)
    assert np.array_equal(h1, h2) and np.array_equal(z1, z2)
    assert [r["loss"] for r in r1.history] == [r["loss"] for r in r2.history]
    assert not np.array_equal(z1, z3)


def test_embed_restores_mode_and_is_eval():
    d, n = 10, 6
    config = TrainingConfig()
    torch.manual_seed(0)
    model = build_model(plan_training(d, n, config, CPU), config).train()
    A = np.random.default_rng(0).normal(size=(d, n)).astype(np.float32)
    h, z = embed(model, A)
    assert model.training
    model.eval()
    with torch.no_grad():
        h_ref, z_ref = model(torch.as_tensor(A))
    np.testing.assert_array_equal(h, h_ref.numpy())
    np.testing.assert_array_equal(z, z_ref.numpy())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epochs": 0},
        {"epochs": -3},
        {"epochs": 1.5},
        {"schedule": "x"},
        {"temperature": 0.0},
        {"learning_rate": 0.0},
        {"weight_decay": -1.0},
        {"dropout": 1.0},
    ],
)
def test_invalid_config_raises(kwargs):
    with pytest.raises(ValueError):
        TrainingConfig(**kwargs)


@pytest.mark.parametrize("device", ["tpu", "not a device"])
def test_invalid_device_raises(device):
    with pytest.raises(ValueError, match="runtime.device"):
        resolve_device(device)
    A = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="runtime.device"):
        train(A, TrainingConfig(epochs=1), ViewConfig(), RuntimeConfig(device=device, progress=False))


@pytest.mark.parametrize(
    ("d", "device", "expected"),
    [
        (5966, "cpu", 2 * 2**20 // (4 * 5966)),  # 87 rows: about 2 MiB, cache-sized
        (500, "cpu", 500),  # 500 x 500 fits 2 MiB: one block
        (5966, "cuda", 5966),  # 136 MiB fits the 256 MiB budget: one block
        (10_000, "cuda", 256 * 2**20 // (4 * 10_000)),  # 6710 rows
    ],
)
def test_loss_block_rows(d, device, expected):
    assert loss_block_rows(d, device) == expected
    assert loss_block_rows(d, torch.device(device)) == expected


def _run_trainer(A, training, seed, **overrides):
    """train()'s loop on CPU, with some of the Trainer's choices (attributes) overridden."""
    trainer = Trainer(A, training, ViewConfig(), CPU, seed)
    for name, value in overrides.items():
        setattr(trainer, name, value)
    with compute_settings(trainer.device, trainer.precision, None):
        history = [trainer.train_epoch() for _ in range(training.epochs)]
    trainer.model.eval()
    return trainer, history


def test_train_uses_and_reports_the_cpu_loss_block():
    """By default, fast training on CPU forms the InfoNCE logits in ~2 MiB
    blocks: the same run, bit for bit, as naming that block size, and not the run
    one block of all 800 rows gives (the order of the float additions differs)."""
    d, n = 800, 10
    A = np.random.default_rng(3).normal(size=(d, n)).astype(np.float32)
    config = TrainingConfig(epochs=2, dropout=0.0)
    default = train(A, config, ViewConfig(), CPU, seed=0)
    rows = 2 * 2**20 // (4 * d)
    assert default.loss_block_rows == rows == 655
    named, named_history = _run_trainer(A, config, 0, loss_block_rows=rows)
    whole, _ = _run_trainer(A, config, 0, loss_block_rows=d)
    assert [r["loss"] for r in default.history] == [r["loss"] for r in named_history]
    for key, value in default.model.state_dict().items():
        assert torch.equal(value, named.model.state_dict()[key]), key
    assert any(not torch.equal(value, whole.model.state_dict()[key])
               for key, value in default.model.state_dict().items())
    paper = train(A, config.replace(schedule="paper", epochs=1), ViewConfig(), CPU, seed=0)
    assert paper.loss_block_rows is None  # paper's losses are dense: no block


@pytest.mark.skipif(torch.cuda.is_available(), reason="only meaningful without CUDA")
def test_cuda_without_cuda_raises():
    with pytest.raises(ValueError, match="CUDA"):
        resolve_device("cuda")
    A = np.zeros((4, 3), dtype=np.float32)
    with pytest.raises(ValueError, match="CUDA"):
        train(A, TrainingConfig(epochs=1), ViewConfig(), RuntimeConfig(device="cuda", progress=False))


@pytest.mark.parametrize(
    ("schedule", "n", "device", "expected"),
    [
        ("paper", 5000, "cpu", "literal"),
        ("paper", 10, "cpu", "literal"),
        ("paper", 5000, "cuda", "literal"),
        ("fast", BLOCKED_ATTENTION_MIN_SAMPLES - 1, "cpu", "fused"),
        ("fast", BLOCKED_ATTENTION_MIN_SAMPLES, "cpu", "blocked"),
        ("fast", 5000, "cuda", "fused"),
    ],
)
def test_attention_kernel_for(schedule, n, device, expected):
    assert attention_kernel_for(schedule, n, device) == expected
    assert attention_kernel_for(schedule, n, torch.device(device)) == expected


def test_auto_kernel_is_the_one_the_trained_model_uses():
    A = torch.randn(6, BLOCKED_ATTENTION_MIN_SAMPLES)
    result = train(A, TrainingConfig(epochs=1), ViewConfig(), CPU, seed=0)
    assert result.model.attention.kernel == "blocked"
    assert result.attention_kernel == "blocked"


def test_resolve_device():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")


def test_training_that_cannot_fit_is_refused_with_the_estimate_and_options():
    regime = select_regime(200)
    paper = estimate_training_memory(50_000, 200, regime, "paper", "literal")
    fast = estimate_training_memory(50_000, 200, regime, "fast", "fused")
    assert paper.total_bytes > 10 * fast.total_bytes  # the d x d buffers dominate the literal loop
    with pytest.raises(ResourceLimitError, match=r"50,000 features x 200 samples .* needs about \d+\.\d GiB on cpu, "
                                                 r"but only 8\.0 GiB is available; the features cost it: .* "
                                                 r"Options: training.schedule: fast") as refused:
        check_memory(paper, torch.device("cpu"), 50_000, 200, regime, "paper", limit=8 * 2**30)
    assert "members.subsample" not in str(refused.value)  # no remedy for samples where the features cost
    check_memory(fast, torch.device("cpu"), 50_000, 200, regime, "fast", limit=8 * 2**30)  # fits: no error


def test_many_samples_are_named_as_the_cost_with_the_remedies_that_help():
    """20,000 samples x 50 features: the attention's n x n weights cost it, and the smaller regime does not help."""
    regime = select_regime(20_000)
    estimate = estimate_training_memory(50, 20_000, regime, "fast", "blocked")
    assert estimate.parameters_bytes > estimate.activations_bytes + estimate.work_bytes
    with pytest.raises(ResourceLimitError, match=r"the samples cost it: the attention over the 20,000 samples holds "
                                                 r"20,000 x 20,000 weights") as refused:
        check_memory(estimate, torch.device("cpu"), 50, 20_000, regime, "fast", limit=8 * 2**30)
    message = str(refused.value)
    assert "members.per_run: 2 or more with members.subsample: 0." in message
    assert "training.regime: small" not in message and "feature_blocks" not in message


def test_memory_estimate_counts_the_loss_block_it_is_given():
    regime = select_regime(200)
    d = 10_000
    default = estimate_training_memory(d, 200, regime, "fast", "fused").work_bytes
    small = estimate_training_memory(d, 200, regime, "fast", "fused", loss_block_rows=52).work_bytes
    assert default - small == 3 * (256 * 2**20 - 52 * d * 4)  # three blocks of logits alive at once
    paper = estimate_training_memory(d, 200, regime, "paper", "literal", loss_block_rows=52).work_bytes
    assert paper == estimate_training_memory(d, 200, regime, "paper", "literal").work_bytes  # dense losses


@pytest.mark.parametrize(("d", "kept"), [(3000, True), (50_000, False)])
def test_memory_estimate_counts_the_weights_the_blocked_kernel_keeps(d, kept):
    """Where one block holds all d rows (d = 3000 fits 256 MiB), each of fast's six
    forward passes keeps its d x d weights; at d = 50,000 the blocks are recomputed."""
    regime = select_regime(1500)
    work = estimate_training_memory(d, 1500, regime, "fast", "blocked").work_bytes
    block_and_kept = (3 + 6) * d * d * 4  # the forward's transient block, and the six kept
    assert (work >= block_and_kept) is kept


def test_one_random_view_paper_and_fast_agree_with_the_dense_objective():
    """WLDAR: L = L_con(random view) + lam L_dec, the same in both schedules."""
    config = TrainingConfig(dropout=0.0)
    torch.manual_seed(0)
    model = build_model(plan_training(24, 10, config, CPU), config).to(torch.float64).train()
    A = torch.randn(24, 10, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    views = generate_views(A, ViewConfig(positives="random"), torch.Generator().manual_seed(2))
    m_paper, m_fast, m_ref = copy.deepcopy(model), copy.deepcopy(model), copy.deepcopy(model)
    lp = paper_step(m_paper, A, views, TAU, 0.2)["loss"]
    lf = fast_step(m_fast, A, views, TAU, 0.2)["loss"]

    _, za = m_ref(A)
    _, zn = m_ref(views.negative)
    _, zp = m_ref(views.random)
    a, ng, p = (F.normalize(z, dim=1) for z in (za, zn, zp))
    logits = torch.cat([a @ p.T, (a * ng).sum(dim=1, keepdim=True)], dim=1) / TAU
    ref = F.cross_entropy(logits, torch.arange(24)) + 0.2 * ((a @ a.T - torch.eye(24, dtype=a.dtype)) ** 2).mean()
    assert lp == pytest.approx(ref.item(), rel=1e-9)
    assert lf == pytest.approx(ref.item(), rel=1e-9)


@pytest.mark.parametrize("schedule", ["fast", "paper"])
def test_train_with_one_random_view(schedule):
    A = np.random.default_rng(0).standard_normal((30, 12)).astype(np.float32)
    result = train(A, TrainingConfig(epochs=2, schedule=schedule),
                   ViewConfig(positives="random"), RuntimeConfig(progress=False), seed=0)
    assert len(result.history) == 2 and np.isfinite(result.history[-1]["loss"])


@pytest.mark.parametrize("n_views", [4, 1])
def test_paper_equivalent_momenta_reproduce_the_papers_update_sequence(n_views):
    rng = np.random.default_rng(0)
    stats = {"anchor": rng.standard_normal(), "negative": rng.standard_normal(),
             **{f"view{i}": rng.standard_normal() for i in range(n_views)}}
    paper = start = 0.7
    for i in range(n_views):
        for name in ("anchor", "negative", f"view{i}"):
            paper = 0.99 * paper + 0.01 * stats[name]
    fast = start
    for mu, value in zip(paper_equivalent_momenta(0.01, n_views), stats.values(), strict=True):
        assert 0 < mu < 1
        fast = (1 - mu) * fast + mu * value
    assert fast == pytest.approx(paper, rel=1e-12)


def test_fast_step_leaves_the_papers_batchnorm_statistics():
    model, _, A, views = _setup()
    m_paper, m_fast = copy.deepcopy(model), copy.deepcopy(model)
    paper_step(m_paper, A, views, TAU, 0.2)
    fast_step(m_fast, A, views, TAU, 0.2)
    fast_buffers = dict(m_fast.named_buffers())
    compared = 0
    for name, buffer in m_paper.named_buffers():
        if name.endswith(("running_mean", "running_var")):
            torch.testing.assert_close(fast_buffers[name], buffer, rtol=1e-10, atol=1e-12, msg=name)
            compared += 1
    assert compared == 6
    momenta = {layer.momentum for layer in m_fast.modules() if isinstance(layer, torch.nn.BatchNorm1d)}
    assert momenta == {0.01}  # restored after the step


@pytest.mark.threads
def test_a_training_on_several_threads_warms_up_once_and_leaves_the_seeded_streams_alone(monkeypatch):
    d, n = 30, 10
    A = np.random.default_rng(3).normal(size=(d, n)).astype(np.float32)
    config, runtime = TrainingConfig(epochs=2), RuntimeConfig(device="cpu", progress=False, num_threads=2)
    spares = []
    real_embed = training_module.embed
    monkeypatch.setattr(training_module, "embed", lambda model, X: spares.append(model) or real_embed(model, X))
    monkeypatch.setattr(training_module, "_WARM", set())
    warmed = train(A, config, ViewConfig(), runtime, seed=5)
    assert len(spares) == 1 and training_module._WARM == {(d, n, config, ViewConfig(), 2)}
    again = train(A, config, ViewConfig(), runtime, seed=5)  # warm already: no second spare network
    assert len(spares) == 1
    monkeypatch.setattr(training_module, "_WARM", set())
    monkeypatch.setattr(training_module, "warm_up", lambda trainer, threads: None)
    cold = train(A, config, ViewConfig(), runtime, seed=5)
    for result in (again, cold):
        assert [r["loss"] for r in result.history] == [r["loss"] for r in warmed.history]
        assert all(torch.equal(p, q) for p, q in zip(result.model.parameters(), warmed.model.parameters()))


def test_no_warm_up_on_one_thread(monkeypatch):
    monkeypatch.setattr(training_module, "_WARM", set())
    trainer = Trainer(np.ones((8, 6), dtype=np.float32), TrainingConfig(epochs=1), ViewConfig(), CPU, seed=1)
    training_module.warm_up(trainer, 1)
    assert training_module._WARM == set()


# --- the thread count a training's epochs run on ------------------------------------------------------------------


class _Clock:
    """Seconds that advance only when an epoch runs: each count's epochs take the time ``pace`` gives."""

    def __init__(self, pace):
        self.now, self.pace, self.count = 0.0, pace, None

    def __call__(self):
        return self.now

    def run(self, choice):
        with choice.epoch() as count:
            self.now += self.pace(count, choice.epochs)
        return count


def test_a_thread_choice_times_each_count_once_then_runs_the_faster_and_times_the_other_again_every_20_epochs():
    from iclfs.method._runtime import RETIME_EPOCHS, ThreadChoice

    clock = _Clock(lambda count, epoch: {2: 3.0, 1: 2.0}[count] if epoch < 30 else {2: 1.0, 1: 2.0}[count])
    choice = ThreadChoice((2, 1), clock)
    with torch_threads(2):
        counts = [clock.run(choice) for _ in range(45)]
        assert torch.get_num_threads() == counts[-1]
    assert RETIME_EPOCHS == 20
    # 2, then 1 (timed once each); 1 is faster; epoch 20 and 40 time 2 again; from epoch 30 two threads are faster,
    # which the retime at epoch 40 finds
    assert counts[:2] == [2, 1] and counts[2:20] == [1] * 18 and counts[20] == 2 and counts[21:40] == [1] * 19
    assert counts[40] == 2 and counts[41:] == [2] * 4


def test_a_choice_of_one_count_never_touches_torchs_threads(monkeypatch):
    from iclfs.method._runtime import ThreadChoice

    monkeypatch.setattr(torch, "set_num_threads", lambda n: pytest.fail("set the thread count"))
    choice = ThreadChoice((3, 3))
    assert choice.counts == (3,)
    for _ in range(25):
        with choice.epoch() as count:
            assert count == 3


@pytest.mark.parametrize(("schedule", "num_threads", "counts"), [("fast", None, (2, 1)), ("paper", None, (2,)),
                                                                  ("fast", 2, (2,))])
def test_only_a_thread_invariant_training_without_a_count_of_the_users_may_choose(monkeypatch, schedule,
                                                                                    num_threads, counts):
    """The paper schedule's bits depend on the thread count; runtime.num_threads is the user's count."""
    from iclfs import _threads
    from iclfs.method._runtime import thread_choice

    monkeypatch.setattr(_threads, "APPLIED", _threads.AppliedPolicy("adaptive-timed", {}, {}, False, "passive", 1.0,
                                                                    2))
    plan = plan_training(40, 12, TrainingConfig(schedule=schedule), RuntimeConfig(device="cpu"))
    assert thread_choice(plan, num_threads, 2).counts == counts


@pytest.mark.parametrize(("epochs", "estimate_at"), [(3, 2), (4, 3), (10, 3)])
def test_a_training_that_times_two_counts_estimates_from_the_count_kept_if_an_epoch_follows(monkeypatch, epochs,
                                                                                            estimate_at):
    """Its second epoch runs on the other count: the first estimate comes from the third, unless the third is
    the last (then from the second, as without a choice): a short training still gets its estimate."""
    from iclfs import _threads
    from iclfs.method._progress import Progress

    monkeypatch.setattr(_threads, "APPLIED", _threads.AppliedPolicy("adaptive-timed", {}, {}, False, "passive", 1.0,
                                                                    2))
    progress = Progress(epochs, "net")
    A = np.random.default_rng(0).normal(size=(20, 8)).astype(np.float32)
    with torch_threads(2):
        train(A, TrainingConfig(epochs=epochs), runtime=RuntimeConfig(device="cpu"), seed=0, progress=progress)
    assert progress.estimate_at == estimate_at and progress.first_estimate is not None
