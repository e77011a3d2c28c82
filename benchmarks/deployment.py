"""The cost of a scheduled refresh, measured as an operator's job runs it.

    python -m benchmarks.deployment --dataset ALLAML --keep /tmp/deployment
    python -m benchmarks.deployment --synthetic 200x60 --set training.epochs=2 --out /tmp/d.md   # a quick look

In a throw-away copy of the project, the table is written as a user's file
(genes in rows, samples in columns, ``.tsv.gz``, gene ids as names) and
declared as the data source ``expr``; then the refreshes run one after the
other exactly as the Airflow DAG's task runs them, ``python -m iclfs --source
expr`` in a fresh process with the project's default settings (``--set``
changes them, for a quick look). The first refresh reads the table as it is;
the second reads it with 20 genes dropped (5 of them on the first list) and 5
new ones, as a monthly table does, so its summary and report show the
changes. Each refresh's wall time is the whole process (start-up, reading,
training, the report, MLflow); the training time is what the run's
``training_log.csv`` records. The report and a JSON copy go to ``--out``;
``--keep`` keeps the project copy (its ``mlflow.db`` and its ``data/latest/``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("../shared/datasets", "../shared/validation")
SOURCE = "expr"
DROPPED, ON_THE_LIST, ADDED = 20, 5, 5


def expression_table(dataset: str | None, synthetic: str | None) -> pd.DataFrame:
    """Genes (rows) x samples (columns), gene ids as the index: a benchmark dataset's table, or a random one."""
    if synthetic:
        d, n = (int(v) for v in synthetic.split("x"))
        values = np.random.default_rng(0).gamma(2.0, 2.0, size=(n, d))
    else:
        from iclfs.io import find_dataset, read_feature_table

        values = np.asarray(read_feature_table(str(find_dataset(dataset, FOLDERS))).X, dtype=np.float64)
    n, d = values.shape
    return pd.DataFrame(values.T, index=pd.Index([f"ENSG{100000 + 7 * j:08d}" for j in range(d)], name="gene_id"),
                        columns=[f"GSM{200000 + i}" for i in range(n)])


def write_table(path: Path, table: pd.DataFrame) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", newline="") as handle:
        table.to_csv(handle, sep="\t", float_format="%.6g")


def project_copy(folder: Path, overrides: dict) -> Path:
    """The project's conf in ``folder``, with the source declared and MLflow in the copy's own file."""
    shutil.copytree(ROOT / "conf", folder / "conf", ignore=shutil.ignore_patterns("local"))
    shutil.copy(ROOT / "pyproject.toml", folder / "pyproject.toml")
    (folder / "src").mkdir()
    local = folder / "conf" / "local"
    local.mkdir()
    (local / "parameters_sources.yml").write_text(yaml.safe_dump(
        {"sources": {SOURCE: {"input": "data/01_raw/expr.tsv.gz", "orientation": "features_in_rows"}}}))
    store = f"sqlite:///{folder / 'mlflow.db'}"
    (local / "mlflow.yml").write_text(yaml.safe_dump({"server": {"mlflow_tracking_uri": store}}))
    if overrides:
        (local / "parameters.yml").write_text(yaml.safe_dump(overrides))
    return folder


def nested(overrides: str) -> dict:
    from iclfs.method._config import parse_overrides

    out: dict = {}
    for key, value in parse_overrides(overrides).items():
        section, _, name = key.rpartition(".")
        (out.setdefault(section, {}) if section else out)[name] = value
    return out


def refresh(project: Path) -> dict:
    """One refresh as the DAG's task runs it; its wall time, exit code and output."""
    env = {**os.environ, "KEDRO_DISABLE_TELEMETRY": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("MLFLOW_TRACKING_URI", None)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "iclfs", "--source", SOURCE], cwd=project, env=env,
                          capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"the refresh failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    latest = project / "data" / "latest" / SOURCE / "iclfs"
    log = pd.read_csv(latest / "training_log.csv")
    summary = done.stdout[done.stdout.index("Run summary"):].strip().splitlines()
    return {"seconds": seconds, "training_seconds": float(log.drop_duplicates("member")["member_seconds"].sum()),
            "epochs": int(len(log)), "list": pd.read_csv(latest / "feature_list.csv")["feature_name"].tolist(),
            "version": os.readlink(latest).rsplit("/", 1)[-1], "summary": summary}


def measure(table: pd.DataFrame, folder: Path, overrides: dict) -> dict:
    project = project_copy(folder, overrides)
    raw = project / "data" / "01_raw" / "expr.tsv.gz"
    write_table(raw, table)
    first = refresh(project)
    # the next month's table: 20 genes gone (5 of them listed), 5 new ones
    rng = np.random.default_rng(1)
    listed = [g for g in first["list"] if g in table.index][:ON_THE_LIST]
    others = [g for g in table.index if g not in set(first["list"])]
    dropped = listed + list(rng.choice(others, size=DROPPED - len(listed), replace=False))
    new = pd.DataFrame(rng.choice(table.to_numpy().ravel(), size=(ADDED, table.shape[1])),
                       index=pd.Index([f"ENSG9{j:07d}" for j in range(ADDED)], name="gene_id"), columns=table.columns)
    write_table(raw, pd.concat([table.drop(index=dropped), new]))
    second = refresh(project)
    return {"first": first, "second": second, "dropped": dropped, "added": new.index.tolist(),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}


def render(result: dict, command: str) -> str:
    first, second = result["first"], result["second"]
    d, n = result["shape"]
    lines = [
        "# One scheduled refresh, timed",
        "",
        f"Generated by `{command}` ({result['measured_at']}, {result['machine']}).",
        "",
        f"The table: {result['table']}, written as a user's file ({d:,} genes in rows x {n} samples, `.tsv.gz`), "
        "declared as the data source `expr` and refreshed twice by `python -m iclfs --source expr`, the Airflow "
        "task's command, each in a fresh process with "
        + (f"these settings: `{result['settings']}`." if result["settings"] else "the project's default settings.")
        + f" The second refresh reads the table with {DROPPED} genes dropped ({ON_THE_LIST} of them on the first "
        f"list) and {ADDED} new ones.",
        "",
        "| refresh | wall s (the whole process) | training s | epochs | list version |",
        "|---|---|---|---|---|",
    ]
    for name, run in (("first", first), ("second (carried, on the changed table)", second)):
        lines.append(f"| {name} | {run['seconds']:.0f} | {run['training_seconds']:.0f} | {run['epochs']} | "
                     f"{run['version']} |")
    lines += ["", f"Peak memory of a refresh process: {result['peak_rss_bytes'] / 2**30:.2f} GiB.", "",
              "The second refresh's run summary, as its log shows it:", "", "```text", *second["summary"], "```", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.deployment", description=__doc__.split("\n\n")[0])
    table = parser.add_mutually_exclusive_group(required=True)
    table.add_argument("--dataset", help="a .mat dataset of ../shared (e.g. ALLAML, 72 x 7,129)")
    table.add_argument("--synthetic", help="a random DxN table (d genes x n samples), for a quick look")
    parser.add_argument("--set", dest="overrides", default="", help="settings, as kedro run --params")
    parser.add_argument("--out", default="benchmarks/results/deployment.md")
    parser.add_argument("--keep", help="keep the project copy in this (new) folder")
    args = parser.parse_args(argv)
    expression = expression_table(args.dataset, args.synthetic)
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="iclfs-deployment-"))
    if args.keep and folder.exists():
        parser.error(f"{folder} exists: --keep makes a new folder")
    try:
        result = measure(expression, folder, nested(args.overrides))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    result.update(shape=expression.shape, table=args.dataset or f"random {args.synthetic}", settings=args.overrides,
                  measured_at=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  machine=f"{platform.machine()}, {os.cpu_count()} CPUs")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=2, default=str))
    out.write_text(render(result, "python -m benchmarks.deployment " + " ".join(argv or sys.argv[1:])))
    print(f"wrote {out} and {out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
