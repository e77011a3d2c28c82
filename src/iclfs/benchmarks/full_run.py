"""Full training runs: every benchmark dataset, all epochs, the ICLFS chain and the k-means protocol.

    python -m iclfs.benchmarks.full_run --device cuda --schedules fast paper --seeds 42 \
        --output docs/full_run.md

For each dataset, schedule and seed it trains the network for ``training.epochs``
(100), scores and ranks the features, corrects the ranking with LGRC for every
k of ``lgrc.k_values`` and runs the k-means protocol (SPEC §8): the same core
functions, in the same order and with the same parameters (read from
``conf/base``, then ``conf/local``), as ``kedro run --pipeline benchmark``, without Kedro or
MLflow, so that it runs on a machine that has only the numeric stack (a GPU
box). The report gives each run's training time (every epoch, the first one
included: a run pays for its start), peak memory, best-k accuracy against the
paper's, the total training time of each (schedule, precision, seed) over the
datasets, and, where both schedules ran, whether ``fast`` and ``paper`` agree.

Each finished run is written to the JSON at once (``--output`` with suffix
``.json``), so a run cut short keeps what it finished; ``--keep`` merges an
earlier JSON (a run of the same dataset, schedule, precision, seed, epochs
and device replaces the earlier one). On a CPU, 100 epochs of the ten datasets
take hours (``docs/benchmark.md``, "Runs"): this is a GPU benchmark that also
runs, slowly, anywhere.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from iclfs.benchmarks.paper import PAPER_RESULTS, target_status
from iclfs.core.config import config_from_dict
from iclfs.core.evaluation import best_k, evaluate_selections
from iclfs.core.laplacian import laplacian_scores
from iclfs.core.lgrc import select_features
from iclfs.core.preprocessing import invert, prepare
from iclfs.core.scores import SCORE_NAMES, feature_scores, rank_features
from iclfs.core.tables import read_feature_table
from iclfs.core.training import TrainingConfig, embed, resolve_device, train
from iclfs.core.views import ViewConfig

DATASETS = ("ALLAML", "arcene", "BASEHOCK", "COIL20", "nci9", "PCMAC", "Prostate_GE", "RELATHE", "TOX_171",
            "warpPIE10P")
PARAMETER_SECTIONS = ("training", "views", "ranking", "laplacian", "lgrc", "evaluation")
# The key that says two runs measured the same thing: a later one replaces the earlier.
RUN_KEY = ("dataset", "params", "schedule", "precision", "seed", "epochs", "device")
TARGET_POINTS = 2.0  # conf/base/parameters_benchmark.yml, benchmark_report.target_points
#: ``--params`` keys that change which random draws a run takes, not the method:
#: a run that sets only these is the full model and is judged against the paper.
SAME_METHOD_KEYS = frozenset({"views.stream"})


def load_parameters(conf: str | Path = "conf", envs: tuple[str, ...] = ("base", "local")) -> dict:
    """The parameters the benchmark pipeline runs with: ``seed`` and :data:`PARAMETER_SECTIONS`.

    Read from the ``parameters*.yml`` files of each environment of ``conf``
    that exists, as plain YAML (the sections used here hold no interpolation);
    a later environment's section sets only the keys it names, as Kedro merges
    them (``conf/local`` over ``conf/base``).
    """
    merged: dict = {}
    for env in envs:
        for path in sorted((Path(conf) / env).glob("parameters*.yml")):
            for key, value in (yaml.safe_load(path.read_text()) or {}).items():
                both_sections = isinstance(value, dict) and isinstance(merged.get(key), dict)
                merged[key] = {**merged[key], **value} if both_sections else value
    missing = [key for key in ("seed", *PARAMETER_SECTIONS) if key not in merged]
    if missing:
        raise FileNotFoundError(f"{conf}: parameters {missing} not found in {'/'.join(envs)}/parameters*.yml; "
                                "run from the project root or pass --conf")
    return {key: merged[key] for key in ("seed", *PARAMETER_SECTIONS)}


def apply_params(parameters: dict, text: str | None) -> tuple[dict, str]:
    """``parameters`` with the overrides of ``text``, written as Kedro's ``--params``:
    ``"lgrc.enabled=false,training.use_decorrelation=false"`` (values read as YAML).

    Only keys that ``conf`` defines in :data:`PARAMETER_SECTIONS` may be set
    (the seed is ``--seeds``), so a misspelt key stops the command. Returns the
    new parameters and the overrides in a canonical form (sorted, ``""`` for
    none), which names the variant in the report.
    """
    updated = {key: dict(value) if isinstance(value, dict) else value for key, value in parameters.items()}
    pairs = []
    for item in _split_params(text or ""):
        name, sep, raw = item.partition("=")
        section, dot, key = name.strip().partition(".")
        if not sep or not dot or not key:
            raise ValueError(f"--params: {item!r} is not section.key=value")
        if section not in PARAMETER_SECTIONS or key not in parameters[section]:
            known = ", ".join(f"{s}.{k}" for s in PARAMETER_SECTIONS for k in parameters[s])
            raise ValueError(f"--params: {name.strip()!r} is not a parameter of conf; known: {known}")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as err:
            raise ValueError(f"--params: the value of {name.strip()!r} is not valid YAML ({raw!r})") from err
        updated[section][key] = value
        pairs.append(f"{section}.{key}={json.dumps(value)}")
    return updated, ",".join(sorted(pairs))


def is_variant(params: str) -> bool:
    """Whether the ``--params`` overrides (:func:`apply_params`' canonical form) change the method
    (an ablation, another score): any key outside :data:`SAME_METHOD_KEYS`."""
    return any(item.partition("=")[0].strip() not in SAME_METHOD_KEYS for item in _split_params(params))


def _split_params(text: str) -> list[str]:
    """Split on the commas outside brackets, so a list value (``lgrc.k_values=[50,100]``) stays whole."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += char
    return [item for item in (*items, current) if item.strip()]


def _peak_memory_start(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def _peak_memory_bytes(device: torch.device) -> int | None:
    """Max allocated CUDA memory since the run started; None on CPU (one process runs
    many trainings, so its peak RSS would not be this run's)."""
    return int(torch.cuda.max_memory_allocated(device)) if device.type == "cuda" else None


def run_one(path: str | Path, dataset: str, parameters: dict, schedule: str, seed: int,
            overrides: dict | None = None, params: str = "") -> dict:
    """Train, select and evaluate one dataset with one schedule and seed.

    Args:
        path: the dataset's ``.mat`` file (scikit-feature layout, labels under ``Y``).
        parameters: :func:`load_parameters`' sections.
        overrides: ``training`` keys set on top of ``parameters["training"]``
            (``device``, ``precision``, ``epochs``).
        params: the ``--params`` overrides already applied to ``parameters``
            (:func:`apply_params`), recorded to name the variant.

    Returns:
        One JSON-ready record: shapes, settings, times, peak memory, the k-means
        rows of every k and the best one.
    """
    prepared = prepare(read_feature_table(path))
    if prepared.labels is None:
        raise ValueError(f"{path}: no labels under key 'Y'; the k-means protocol needs class labels")
    codes = prepared.labels
    A = invert(prepared.standardized)
    training = {**parameters["training"], **(overrides or {}), "schedule": schedule, "progress": False}
    config = config_from_dict(TrainingConfig, training, "training")
    view_config = config_from_dict(ViewConfig, parameters["views"], "views")
    device = resolve_device(config.device)

    _peak_memory_start(device)
    started = time.perf_counter()
    result = train(A, config, view_config, seed=seed)
    training_seconds = time.perf_counter() - started
    peak = _peak_memory_bytes(device)

    started = time.perf_counter()
    h, z = embed(result.model, A)
    ranking = rank_features(feature_scores(h, z)[parameters["ranking"]["score"]])
    ls = laplacian_scores(prepared.standardized, n_neighbors=int(parameters["laplacian"]["n_neighbors"]))
    lgrc = parameters["lgrc"]
    d = A.shape[0]
    selections = {k: select_features(ranking, ls, k, enabled=lgrc.get("enabled", True), alpha=float(lgrc["alpha"]),
                                     quantile=float(lgrc["quantile"]))
                  for k in (int(k) for k in lgrc["k_values"]) if k <= d}
    selection_seconds = time.perf_counter() - started
    started = time.perf_counter()
    rows = evaluate_selections(prepared.standardized, codes, selections,
                               n_runs=int(parameters["evaluation"]["n_runs"]), seed=seed)
    evaluation_seconds = time.perf_counter() - started
    epoch_seconds = [epoch["seconds"] for epoch in result.history]
    return {
        "dataset": dataset,
        "params": params,
        "d": int(d),
        "n": int(A.shape[1]),
        "classes": int(len(np.unique(codes))),
        "regime": result.regime.name,
        "schedule": schedule,
        "precision": result.precision,
        "device": result.device,
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "threads": result.threads,
        # None without attention (training.use_attention=false, the WLDA ablation)
        "attention_kernel": result.model.attention.kernel if result.model.attention is not None else None,
        "seed": int(seed),
        "epochs": len(result.history),
        "training_seconds": training_seconds,
        "epoch_seconds": epoch_seconds,
        "median_epoch_seconds": statistics.median(epoch_seconds),
        "final_loss": result.history[-1]["loss"],
        "peak_cuda_bytes": peak,
        "selection_seconds": selection_seconds,
        "evaluation_seconds": evaluation_seconds,
        "rows": rows,
        "best": dict(best_k(rows)),
        "torch": torch.__version__,
        "run_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def benchmark_rows(run: dict, parameters: dict) -> pd.DataFrame:
    """One run as rows of the ``benchmark`` pipeline's result table (``docs/benchmark/<dataset>.csv``).

    The method is named as the pipeline names it (``ICLFS [reference stream]``)
    from ``parameters`` (conf's) with the run's ``--params``, schedule and
    precision; ``seconds`` is the training time and ``evaluation_seconds`` the
    protocol's time spread evenly over the k.
    """
    # The pipeline package imports Kedro: this runs where the project is installed, not on a GPU box.
    from iclfs.pipelines.benchmark.nodes import RESULT_COLUMNS, iclfs_variant

    parameters, _ = apply_params(parameters, run.get("params", ""))
    parameters["training"].update(schedule=run["schedule"], precision=run["precision"])
    rows = pd.DataFrame(run["rows"])
    rows["dataset"] = run["dataset"]
    rows["method"] = iclfs_variant(parameters)
    rows["n_runs"] = int(parameters["evaluation"]["n_runs"])
    rows["seconds"] = run["training_seconds"]
    rows["evaluation_seconds"] = run["evaluation_seconds"] / len(rows)
    rows["seed"] = run["seed"]
    rows["device"] = run["device"]
    rows["schedule"] = run["schedule"]
    rows["epochs"] = run["epochs"]
    rows["run_at"] = datetime.strptime(run["run_at"], "%Y-%m-%d %H:%M UTC").strftime("%Y-%m-%dT%H:%M:%SZ")
    rows["versions"] = f"iclfs={_project_version()} torch={run['torch']} (iclfs.benchmarks.full_run)"
    return rows[RESULT_COLUMNS]


def export_benchmark(runs: list[dict], parameters: dict, directory: str | Path) -> list[Path]:
    """Merge ``runs`` into ``directory/<dataset>.csv`` as the pipeline's ``merge_results`` does:
    a run's (method, seed) rows replace earlier ones, every other row stays. Returns the files written."""
    from iclfs.pipelines.benchmark.nodes import merge_results

    written = []
    for dataset in sorted({run["dataset"] for run in runs}):
        path = Path(directory) / f"{dataset}.csv"
        table = pd.read_csv(path) if path.is_file() else None
        for run in (r for r in runs if r["dataset"] == dataset):
            table = merge_results(benchmark_rows(run, parameters), table)
        table.to_csv(path, index=False)
        written.append(path)
    return written


def _project_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("iclfs")
    except PackageNotFoundError:  # run from a source tree (PYTHONPATH=src)
        return "source"


def merge_runs(previous: list[dict], new: list[dict]) -> list[dict]:
    """``previous`` with every run of ``new`` added, replacing one with the same :data:`RUN_KEY`."""
    by_key = {_run_key(run): run for run in previous}
    for run in new:
        by_key[_run_key(run)] = run
    return sorted(by_key.values(), key=lambda r: (r["dataset"].lower(), r.get("params", ""), r["schedule"],
                                                  r["precision"], r["seed"]))


def _run_key(run: dict) -> tuple:
    return tuple(run.get(key, "") for key in RUN_KEY)  # runs from before --params have none


def _name(dataset: str, params: str) -> str:
    return f"{dataset} ({params})" if params else dataset


def _pct(value: float) -> str:
    return f"{100 * value:.2f}"


def _gib(value: int | None) -> str:
    return "–" if value is None else f"{value / 2 ** 30:.2f}"


def parity(runs: list[dict]) -> list[dict]:
    """Per dataset, device, epochs and ``fast`` precision: best-k accuracy of ``fast`` against ``paper``.

    They agree within noise when the difference of their means over seeds is
    at most the noise: the largest k-means std of the runs compared and, with
    two seeds or more of each, the larger std over seeds.
    """
    out = []
    groups: dict[tuple, list[dict]] = {}
    for run in runs:
        groups.setdefault((run["dataset"], run.get("params", ""), run["device"], run["epochs"]), []).append(run)
    for (dataset, params, device, epochs), group in sorted(groups.items(),
                                                           key=lambda item: (item[0][0].lower(), item[0][1])):
        paper = [r for r in group if r["schedule"] == "paper"]
        if not paper:
            continue
        for precision in sorted({r["precision"] for r in group if r["schedule"] == "fast"}):
            fast = [r for r in group if r["schedule"] == "fast" and r["precision"] == precision]
            accuracy = {"fast": [r["best"]["accuracy_mean"] for r in fast],
                        "paper": [r["best"]["accuracy_mean"] for r in paper]}
            noise = max(r["best"]["accuracy_std"] for r in fast + paper)
            if min(len(a) for a in accuracy.values()) >= 2:
                noise = max(noise, *(statistics.stdev(a) for a in accuracy.values()))
            difference = statistics.mean(accuracy["fast"]) - statistics.mean(accuracy["paper"])
            out.append({"dataset": dataset, "params": params, "device": device, "epochs": epochs,
                        "fast_precision": precision,
                        "paper_precision": "/".join(sorted({r["precision"] for r in paper})),
                        "fast": accuracy["fast"], "paper": accuracy["paper"],
                        "difference": difference, "noise": noise, "agree": abs(difference) <= noise})
    return out


def render(report: dict, notes: str = "") -> str:
    """The Markdown report of a JSON report (``environment``, ``commands``, ``runs``);
    ``notes`` (hand-written analysis) goes at the end."""
    env, runs = report["environment"], report["runs"]
    lines = [
        "# Full training runs",
        "",
        f"Last measured {env['date']} on {env['device']} (torch {env['torch']}, Python {env['python']}).",
        "",
        "Commands (each run's `run_at` says when it finished):",
        "",
        "```bash",
        *[f"# {c['date']}\n{c['command']}" for c in report.get("commands", [env])],
        "```",
        "",
        "Each run trains for all its epochs, then scores, ranks, applies LGRC for every k of `lgrc.k_values` and "
        "runs the k-means protocol (`evaluation.n_runs` runs per k), with the parameters of `conf` (base, then "
        "local), as the `benchmark` pipeline does. Training time counts every epoch, the first one included; "
        "peak memory is the max "
        "allocated CUDA memory of the training (– on CPU). Accuracy is the best k's mean ± std over the "
        "k-means runs, in %; the paper's is its Table 2.",
        "",
        "| dataset | n x d | schedule | precision | seed | epochs | training s | s/epoch (median) | first epoch s "
        "| peak GiB | best k | accuracy % | NMI % | paper % | vs paper | device |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        best = r["best"]
        # The paper's number is the full model's: a variant (--params) is not judged against it.
        status, diff = (("– (a variant)", None) if is_variant(r.get("params", ""))
                        else target_status(best["accuracy_mean"], r["dataset"], TARGET_POINTS))
        paper = PAPER_RESULTS.get(r["dataset"], {}).get("ICLFS")
        lines.append(
            f"| {_name(r['dataset'], r.get('params', ''))} | {r['n']} x {r['d']} | {r['schedule']} | {r['precision']} | {r['seed']} | "
            f"{r['epochs']} | {r['training_seconds']:.1f} | {r['median_epoch_seconds']:.3f} | "
            f"{r['epoch_seconds'][0]:.2f} | {_gib(r['peak_cuda_bytes'])} | {best['k']} | "
            f"{_pct(best['accuracy_mean'])} ± {_pct(best['accuracy_std'])} | {_pct(best['nmi_mean'])} | "
            f"{paper.accuracy if paper else '–'} | {status}{'' if diff is None else f' ({diff:+.2f})'} | "
            f"{r['device_name']} |"
        )
    lines += ["", "## Total training time", "",
              "Per device, schedule, precision, seed and epochs, summed over the datasets run: the training "
              "time as measured; the same without start-up (epochs x each run's median epoch: the first run "
              "of each command also pays for CUDA's start, a few seconds); the whole runs (training, "
              "selection and the k-means protocol); and on how many datasets the best-k accuracy meets the "
              f"paper's (at or above it, or below by at most max(its std, {TARGET_POINTS:g}) points).", "",
              "| parameters | device | schedule | precision | seed | epochs | datasets | training s "
              "| without start-up s | whole runs s | meets the paper |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    totals: dict[tuple, list[dict]] = {}
    for r in runs:
        totals.setdefault((r.get("params", ""), r["device_name"], r["schedule"], r["precision"], r["seed"],
                           r["epochs"]), []).append(r)
    for (params, device, schedule, precision, seed, epochs), group in sorted(totals.items()):
        whole = sum(r["training_seconds"] + r["selection_seconds"] + r["evaluation_seconds"] for r in group)
        steady = sum(r["epochs"] * r["median_epoch_seconds"] for r in group)
        met = sum(target_status(r["best"]["accuracy_mean"], r["dataset"], TARGET_POINTS)[0].startswith("met")
                  for r in group)
        verdict = "–" if is_variant(params) else f"{met} of {len(group)}"
        lines.append(f"| {params or '–'} | {device} | {schedule} | {precision} | {seed} | {epochs} | "
                     f"{len(group)} of {len(DATASETS)} | "
                     f"{sum(r['training_seconds'] for r in group):.1f} | {steady:.1f} | {whole:.1f} | "
                     f"{verdict} |")
    agreements = parity(runs)
    if agreements:
        lines += ["", "## `fast` against `paper`", "",
                  "Best-k accuracy % of each seed. They agree within noise when the difference of the means is at "
                  "most the largest k-means std of the runs compared and, with two seeds or more of each, "
                  "the larger std over seeds.", "",
                  "| dataset | device | epochs | fast (precision) | paper (precision) | fast − paper | noise "
                  "| within noise |",
                  "|---|---|---|---|---|---|---|---|"]
        for a in agreements:
            lines.append(f"| {_name(a['dataset'], a['params'])} | {a['device']} | {a['epochs']} | "
                         f"{' / '.join(map(_pct, a['fast']))} ({a['fast_precision']}) | "
                         f"{' / '.join(map(_pct, a['paper']))} ({a['paper_precision']}) | "
                         f"{100 * a['difference']:+.2f} | "
                         f"{100 * a['noise']:.2f} | {'yes' if a['agree'] else 'no'} |")
    if notes.strip():
        lines += ["", "## Analysis", "", notes.strip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--datasets-dir", default="../shared/datasets")
    parser.add_argument("--schedules", nargs="+", default=["fast"], choices=["fast", "paper"])
    parser.add_argument("--seeds", type=int, nargs="+", help="default: conf/base's seed")
    parser.add_argument("--epochs", type=int, help="default: conf/base's training.epochs")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--params", help="overrides as Kedro's --params, e.g. "
                        "\"lgrc.enabled=false,training.use_decorrelation=false\" (an ablation)")
    parser.add_argument("--conf", default="conf", help="the configuration folder: its base/ and local/ "
                        "parameters*.yml, merged as Kedro does")
    parser.add_argument("--output", default="docs/full_run.md")
    parser.add_argument("--keep", metavar="JSON", help="an earlier report's JSON whose runs are kept "
                        "(those measured again are replaced)")
    parser.add_argument("--notes", default="docs/full_run_notes.md",
                        help="hand-written analysis appended to the report, if the file exists")
    parser.add_argument("--render", metavar="JSON", help="run nothing: rewrite --output from this JSON and --notes")
    parser.add_argument("--export-benchmark", metavar="DIR", help="with --render: run nothing, merge the JSON's "
                        "runs of --datasets, --schedules, --seeds (default: all) and --params into DIR/<dataset>.csv, "
                        "the benchmark pipeline's result tables (docs/benchmark), named as the pipeline names them")
    args = parser.parse_args(argv)
    output = Path(args.output)
    notes = Path(args.notes).read_text() if args.notes and Path(args.notes).is_file() else ""
    if args.export_benchmark:
        if not args.render:
            parser.error("--export-benchmark reads the runs of --render JSON")
        try:
            parameters = load_parameters(args.conf)
            params = apply_params(parameters, args.params)[1]  # canonical, as the runs record it
        except ValueError as err:
            parser.error(str(err))
        runs = [r for r in json.loads(Path(args.render).read_text())["runs"]
                if r["dataset"] in args.datasets and r["schedule"] in args.schedules
                and r.get("params", "") == params and (args.seeds is None or r["seed"] in args.seeds)]
        if not runs:
            parser.error(f"{args.render} has no run of those datasets, schedules, seeds and --params {params!r}")
        for path in export_benchmark(runs, parameters, args.export_benchmark):
            print(f"wrote {path}")
        return
    if args.render:
        output.write_text(render(json.loads(Path(args.render).read_text()), notes))
        print(f"wrote {output}")
        return

    overrides = {"device": args.device, "precision": args.precision}
    if args.epochs is not None:
        overrides["epochs"] = args.epochs
    try:  # refuse a bad parameter, device, precision or epochs before any work
        parameters, params = apply_params(load_parameters(args.conf), args.params)
        config_from_dict(TrainingConfig, {**parameters["training"], **overrides, "progress": False}, "training")
        config_from_dict(ViewConfig, parameters["views"], "views")
        if parameters["ranking"]["score"] not in SCORE_NAMES:
            raise ValueError(f"ranking.score must be one of {SCORE_NAMES}, got {parameters['ranking']['score']!r}")
    except (TypeError, ValueError) as err:
        parser.error(str(err))
    paths = {name: Path(args.datasets_dir) / f"{name}.mat" for name in args.datasets}
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        parser.error(f"dataset file(s) not found: {', '.join(missing)} (set --datasets-dir)")
    device = resolve_device(args.device)
    previous = json.loads(Path(args.keep).read_text()) if args.keep else {"runs": [], "commands": []}
    report = {
        "environment": {
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "device": torch.cuda.get_device_name(device) if device.type == "cuda" else
            f"CPU ({platform.machine()}, {torch.get_num_threads()} threads)",
            "torch": torch.__version__,
            "python": platform.python_version(),
            "command": "python -m iclfs.benchmarks.full_run " + " ".join(argv),
        },
        "runs": previous["runs"],
    }
    # Older reports have no list: their one command is their environment's.
    report["commands"] = [*previous.get("commands", [previous["environment"]] if "environment" in previous else []),
                          {key: report["environment"][key] for key in ("date", "command")}]
    output.parent.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds or [int(parameters["seed"])]:
        for schedule in args.schedules:
            for name, path in paths.items():
                run = run_one(path, name, parameters, schedule, seed, overrides, params)
                report["runs"] = merge_runs(report["runs"], [run])
                # Written after every run, so a run cut short keeps what it finished.
                output.with_suffix(".json").write_text(json.dumps(report, indent=2))
                output.write_text(render(report, notes))
                print(f"{_name(name, params)} {schedule} seed {seed}: training {run['training_seconds']:.1f} s, best k "
                      f"{run['best']['k']} accuracy {_pct(run['best']['accuracy_mean'])} %", flush=True)
    print(f"wrote {output} and {output.with_suffix('.json')}")


if __name__ == "__main__":
    main()
