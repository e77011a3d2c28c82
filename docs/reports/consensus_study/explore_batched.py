"""Would training members batched save time on a CPU? (a timing sketch, not the package's network)

    python docs/reports/consensus_study/explore_batched.py 325 73     # lung_small's d and n

Times one epoch of E members trained at once, E = 1, 8 and 64: each layer of
the small regime's network (method.md §3: attention over the d rows, encoder
n -> 16 -> 512, projector 512 -> 128 -> 128 -> 16, BatchNorm over the rows)
holds the E members' weights stacked, and every product is one batched
matrix product over the members, as grouped layers or ``torch.func.vmap``
would run them on a GPU. An epoch embeds the anchor, the negative and four
masked views and takes one Adam step on the summed InfoNCE losses (dense
logits; no decorrelation term), on random data of the given shape, with
torch's threads at 2. If batching saved per-call overhead, E members would
cost well under E times one.
"""

import sys
import time

import torch
import torch.nn.functional as F

D_E, D_H, D_P, D_Z, TAU = 16, 512, 128, 16, 0.05


def epoch_seconds(d: int, n: int, members: int, repeats: int = 10) -> float:
    generator = torch.Generator().manual_seed(0)

    def weights(*shape: int) -> torch.Tensor:
        return (torch.randn(members, *shape, generator=generator) * 0.05).requires_grad_()

    layers = {"qkv": (n, 3 * n), "out": (n, n), "e1": (n, D_E), "e2": (D_E, D_H), "p1": (D_H, D_P),
              "p2": (D_P, D_P), "p3": (D_P, D_Z)}
    params = {name: (weights(fan_in, fan_out), weights(1, fan_out)) for name, (fan_in, fan_out) in layers.items()}
    optimizer = torch.optim.Adam([t for pair in params.values() for t in pair], lr=1e-3)

    def linear(name: str, x: torch.Tensor) -> torch.Tensor:
        weight, bias = params[name]
        return torch.baddbmm(bias, x, weight)

    def batch_norm(x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean(1, keepdim=True)) / torch.sqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)

    def network(x: torch.Tensor) -> torch.Tensor:
        q, k, v = linear("qkv", x).chunk(3, dim=-1)
        x = linear("out", F.scaled_dot_product_attention(q[:, None], k[:, None], v[:, None])[:, 0])
        h = linear("e2", F.dropout(F.leaky_relu(batch_norm(linear("e1", x)), 0.2), 0.1))
        u1 = F.relu(batch_norm(linear("p1", h)))
        u2 = F.relu(batch_norm(linear("p2", u1)))
        return linear("p3", u1 + u2)

    def info_nce(za: torch.Tensor, zp: torch.Tensor, zn: torch.Tensor) -> torch.Tensor:
        za, zp, zn = (F.normalize(z, dim=-1) for z in (za, zp, zn))
        logits = torch.cat([torch.bmm(za, zp.transpose(1, 2)), (za * zn).sum(-1, keepdim=True)], -1) / TAU
        return (torch.logsumexp(logits, -1) - logits.diagonal(dim1=1, dim2=2)).mean()

    A = torch.randn(members, d, n, generator=generator)

    def epoch() -> None:
        optimizer.zero_grad()
        z_anchor = network(A)
        z_negative = network(A[:, :, torch.randperm(n, generator=generator)])
        positives = [network(A * (torch.rand(members, d, n, generator=generator) < 0.5)) for _ in range(4)]
        (sum(info_nce(z_anchor, z, z_negative) for z in positives) * members).backward()
        optimizer.step()

    epoch()  # warm-up
    started = time.perf_counter()
    for _ in range(repeats):
        epoch()
    return (time.perf_counter() - started) / repeats


torch.set_num_threads(2)
d, n = int(sys.argv[1]), int(sys.argv[2])
one = epoch_seconds(d, n, 1)
print(f"d = {d}, n = {n}: one member {1000 * one:.1f} ms per epoch")
for members in (8, 64):
    seconds = epoch_seconds(d, n, members)
    print(f"{members} members batched: {1000 * seconds:.1f} ms per epoch, {seconds / one:.1f}x one member")
