"""views.stream 'published': the published code's random draws, replayed.

The published loop is written out below as that code is structured (a
per-feature ``Dataset`` drawing ``randperm`` masks, a ``DataLoader`` with one
batch, ``nn.MultiheadAttention``, 12 passes and one step an epoch), so the
replay is checked against the structure it replays, not against itself.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, Dataset

from iclfs.method._config import RuntimeConfig, TrainingConfig, ViewConfig
from iclfs.method._model import FeatureAttention
from iclfs.method._replay import published_masks
from iclfs.method._scores import embed
from iclfs.method._training import build_model, first_epoch_masks, plan_training, train
from iclfs.method._views import keep_count, pair_counts

CPU = RuntimeConfig(device="cpu", progress=False)


class _PublishedFeatureRows(Dataset):
    """One item per feature: anchor, light, heavy, pair a, pair b, negative."""

    def __init__(self, A: torch.Tensor) -> None:
        self.A, self.n = A, A.shape[1]

    def __len__(self) -> int:
        return len(self.A)

    def __getitem__(self, j: int):
        x, n = self.A[j], self.n
        keep, overlap = pair_counts(n)
        perm = torch.randperm(n)  # the pair's permutation comes first
        pair_a, pair_b = torch.zeros(n), torch.zeros(n)
        half = keep - overlap
        pair_a[perm[:overlap]] = 1.0
        pair_b[perm[:overlap]] = 1.0
        pair_a[perm[overlap:][:half]] = 1.0
        pair_b[perm[overlap:][half:2 * half]] = 1.0
        short = keep - int(pair_b.sum())
        if short > 0:  # top up from positions neither mask uses, in index order
            unused = ((pair_a + pair_b) == 0).nonzero().flatten()
            pair_b[unused[:short]] = 1.0
        light, heavy = torch.zeros(n), torch.zeros(n)
        light[torch.randperm(n)[:keep_count(n, 0.9)]] = 1.0
        heavy[torch.randperm(n)[:keep_count(n, 0.6)]] = 1.0
        negative = x[torch.randperm(n)]
        return x, x * light, x * heavy, x * pair_a, x * pair_b, negative


class _PublishedNetwork(nn.Module):
    def __init__(self, n: int, d_e: int = 16, d_h: int = 512, d_p: int = 128, d_z: int = 16) -> None:
        super().__init__()
        self.attention = nn.MultiheadAttention(n, 1)
        self.encoder = nn.Sequential(nn.Linear(n, d_e), nn.BatchNorm1d(d_e, momentum=0.01), nn.LeakyReLU(0.2),
                                     nn.Dropout(0.1), nn.Linear(d_e, d_h))
        self.block1 = nn.Sequential(nn.Linear(d_h, d_p), nn.BatchNorm1d(d_p, momentum=0.01), nn.ReLU())
        self.block2 = nn.Sequential(nn.Linear(d_p, d_p), nn.BatchNorm1d(d_p, momentum=0.01), nn.ReLU())
        self.out = nn.Linear(d_p, d_z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.unsqueeze(1)
        mixed, _ = self.attention(tokens, tokens, tokens)
        u1 = self.block1(self.encoder(mixed.squeeze(1)))
        return self.out(u1 + self.block2(u1))


def _published_loss(za, zp, zn, lam, tau=0.05):
    a, p = F.normalize(za, dim=1), F.normalize(zp, dim=1)
    logits = torch.mm(a, p.t()) / tau
    negative = torch.sum(a * F.normalize(zn, dim=1), dim=1, keepdim=True) / tau
    con = F.cross_entropy(torch.cat([logits, negative], dim=1), torch.arange(len(a)))
    unit = F.normalize(za, dim=1)
    dec = (torch.mm(unit, unit.t()) - torch.eye(len(a))).pow(2).mean()
    return con / 4 + lam * dec


def _published_training(A: torch.Tensor, epochs: int, seed: int) -> _PublishedNetwork:
    torch.manual_seed(seed)
    loader = DataLoader(_PublishedFeatureRows(A), batch_size=len(A), shuffle=False)
    net = _PublishedNetwork(A.shape[1])
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
    net.train()
    for _ in range(epochs):
        for anchor, *positives, negative in loader:
            optimizer.zero_grad()
            for view in positives:
                z_anchor = net(anchor)  # anchor, negative, view: the order of the dropout draws
                z_negative = net(negative)
                _published_loss(z_anchor, net(view), z_negative, lam=0.2).backward()
            optimizer.step()
    return net.eval()


@pytest.mark.parametrize("d, n", [(90, 24), (60, 7)])
def test_paper_schedule_with_published_stream_is_the_published_loop_bit_for_bit(d, n):
    A = torch.from_numpy(np.random.default_rng(d).standard_normal((d, n)).astype(np.float32))
    published = _published_training(A, epochs=3, seed=5)
    ours = train(A.numpy(), TrainingConfig(epochs=3, schedule="paper"),
                 ViewConfig(stream="published"), CPU, seed=5).model
    theirs = list(published.state_dict().values())
    mine = list(ours.state_dict().values())
    assert len(theirs) == len(mine)
    for a, b in zip(theirs, mine, strict=True):
        assert torch.equal(a, b)
    with torch.no_grad():
        expected = published(A).numpy()
    np.testing.assert_array_equal(embed(ours, A.numpy())[1], expected)  # the scores' embeddings


def test_vectorized_stream_is_not_the_published_draw():
    A = torch.from_numpy(np.random.default_rng(0).standard_normal((40, 12)).astype(np.float32))
    published = _published_training(A, epochs=2, seed=5)
    ours = train(A.numpy(), TrainingConfig(epochs=2, schedule="paper"),
                 ViewConfig(), CPU, seed=5).model
    assert not torch.equal(published.attention.in_proj_weight, ours.attention.in_proj_weight)


def test_literal_attention_takes_the_packed_projection_of_multihead_attention():
    """Same bits as nn.MultiheadAttention(x, x, x) with one tensor, gradients included."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(24, 1)
    ours = FeatureAttention(24, "literal")
    ours.load_state_dict(mha.state_dict())
    x = torch.randn(200, 24)
    grad = torch.randn(200, 24)
    tokens = x.unsqueeze(1)
    (mha(tokens, tokens, tokens)[0].squeeze(1) * grad).sum().backward()
    (ours(x) * grad).sum().backward()
    for name, parameter in mha.named_parameters():
        assert torch.equal(parameter.grad, dict(ours.named_parameters())[name].grad), name


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 24, 101])
def test_published_masks_keep_the_spec_counts(n):
    d = 15
    torch.manual_seed(1)
    masks = published_masks(d, n, ViewConfig(stream="published"))
    keep, overlap = pair_counts(n)
    assert masks.light.sum(dim=1).tolist() == [keep_count(n, 0.9)] * d
    assert masks.heavy.sum(dim=1).tolist() == [keep_count(n, 0.6)] * d
    assert masks.pair_a.sum(dim=1).tolist() == [keep] * d
    # m4 gets keep positions unless m3 and m4 together already use all n
    assert masks.pair_b.sum(dim=1).tolist() == [min(keep, overlap + n - keep)] * d
    assert ((masks.pair_a & masks.pair_b).sum(dim=1) == min(overlap, keep)).all()
    assert torch.equal(masks.negative_order.sort(dim=1).values, torch.arange(n).expand(d, n))


def test_published_masks_consume_the_global_generator():
    config = ViewConfig(stream="published")
    torch.manual_seed(3)
    first = published_masks(20, 9, config)
    torch.manual_seed(3)
    again = published_masks(20, 9, config)
    later = published_masks(20, 9, config)
    assert torch.equal(first.negative_order, again.negative_order)
    assert not torch.equal(first.negative_order, later.negative_order)


@pytest.mark.parametrize("stream", ["vectorized", "published"])
@pytest.mark.parametrize("schedule", ["fast", "paper"])
def test_first_epoch_masks_are_the_masks_training_draws(monkeypatch, stream, schedule):
    from iclfs.method import _training as training
    from iclfs.method._training import Trainer

    monkeypatch.setattr(training, "_WARM", set())  # two threads: a spare network warms up and draws first
    drawn = []
    original = Trainer.draw_views

    def spy(self):
        views = original(self)
        drawn.append(views)
        return views

    monkeypatch.setattr(Trainer, "draw_views", spy)
    A = np.random.default_rng(2).standard_normal((25, 11)).astype(np.float32)
    config, view_config = TrainingConfig(epochs=1, schedule=schedule), ViewConfig(stream=stream)
    state = torch.random.get_rng_state()
    masks = first_epoch_masks(A, config, view_config, seed=8)
    assert torch.equal(torch.random.get_rng_state(), state)  # the global generator is left as it was
    train(A, config, view_config, RuntimeConfig(device="cpu", progress=False, num_threads=2), seed=8)
    assert len(drawn) == 2  # the spare's epoch, then the training's own
    A_t = torch.as_tensor(A)
    assert torch.equal(drawn[1].heavy, torch.where(masks.heavy, A_t, 0.0))
    assert torch.equal(drawn[1].negative, A_t.gather(1, masks.negative_order))


def test_published_stream_refuses_the_random_positive_and_unknown_streams():
    with pytest.raises(ValueError, match=r"views.stream 'published' .* views.positives 'random'"):
        ViewConfig(stream="published", positives="random")
    with pytest.raises(ValueError, match=r"parameter views.stream = 'cpu' is invalid: expected one of "
                                         r"vectorized, published"):
        ViewConfig(stream="cpu")
    with pytest.raises(ValueError, match=r"views.stream = 'reference'"):  # the old name is gone
        ViewConfig(stream="reference")


def test_published_stream_runs_the_fast_schedule_too():
    A = np.random.default_rng(4).standard_normal((30, 10)).astype(np.float32)
    config = TrainingConfig(epochs=2)
    one = train(A, config, ViewConfig(stream="published"), CPU, seed=3)
    two = train(A, config, ViewConfig(stream="published"), CPU, seed=3)
    assert [r["loss"] for r in one.history] == [r["loss"] for r in two.history]
    model = build_model(plan_training(30, 10, config, CPU), config)
    assert set(one.model.state_dict()) == set(model.state_dict())
