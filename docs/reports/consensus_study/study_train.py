import os
STUDY = os.environ.get("STUDY", ".")  # where members and results are kept
SHARED = os.environ.get("SHARED", "../shared")  # the .mat files
"""Consensus study: train members with checkpoints, save their scores (scratch, not committed)."""
import sys, time, json, os
import numpy as np, torch
from iclfs.core.tables import read_feature_table
from iclfs.core.preprocessing import prepare, invert
from iclfs.core.training import TrainingConfig, build_model, fast_step, compute_settings, _decorrelation_weight, embed
from iclfs.core.views import ViewConfig, generate_views
from iclfs.core.model import select_regime
from iclfs.core.scores import feature_scores

CHECKPOINTS = [0, 1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 75, 100]
OUT = STUDY + "/study"

def member(A_full, seed, epochs, subsample, regime_name, threads=1):
    rng = np.random.default_rng(seed)
    d, n_full = A_full.shape
    if subsample < 1:
        cols = np.sort(rng.choice(n_full, size=max(4, round(subsample * n_full)), replace=False))
        A = np.ascontiguousarray(A_full[:, cols])
    else:
        A = A_full
    config = TrainingConfig(epochs=epochs, regime=regime_name, progress=False, num_threads=threads, device="cpu")
    torch.manual_seed(seed)
    anchor = torch.as_tensor(A)
    full_anchor = anchor
    model, regime = build_model(A.shape[1], config, "cpu")
    loss_chunk = config.loss_chunk_size_for(d, "cpu")
    model.train()
    lam = _decorrelation_weight(config, regime)
    opt = torch.optim.Adam(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    gen = torch.Generator().manual_seed(seed)
    zs, hs, secs, cps = [], [], [], []
    def snap(ep):
        h, z = embed(model, anchor)
        s = feature_scores(h, z)
        zs.append(s["z_norm"]); hs.append(s["h_norm"]); cps.append(ep)
    with compute_settings(torch.device("cpu"), "fp32", threads):
        snap(0)
        for ep in range(1, epochs + 1):
            t = time.perf_counter()
            views = generate_views(anchor, ViewConfig(), gen)
            opt.zero_grad(set_to_none=True)
            fast_step(model, anchor, views, config.temperature, lam, loss_chunk)
            opt.step()
            secs.append(time.perf_counter() - t)
            if ep in CHECKPOINTS:
                snap(ep)
    return dict(z=np.array(zs), h=np.array(hs), checkpoints=np.array(cps), seconds=np.array(secs))

if __name__ == "__main__":
    path, config_name, subsample, epochs = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    seeds = [int(s) for s in sys.argv[5].split(",")]
    name = os.path.basename(path).split(".")[0]
    p = prepare(read_feature_table(path)); A = invert(p.standardized)
    regime = select_regime(A.shape[1]).name
    for seed in seeds:
        out = f"{OUT}/{name}__{config_name}__{seed}.npz"
        if os.path.exists(out):
            continue
        t = time.time()
        r = member(A, seed, epochs, subsample, regime)
        np.savez(out + ".tmp.npz", **r)
        os.replace(out + ".tmp.npz", out)
        print(name, config_name, seed, f"{time.time()-t:.1f}s", flush=True)
