"""The README's "Your own file", followed word for word on a genes x samples TSV without labels, twice.

Its bash block is read from the README and each line run as a real process in a copy of the project (the
project's commands with this interpreter), so the README's commands are the ones tested, and the latest list
they read is one header and k rows after any number of runs.
"""

from __future__ import annotations

import gzip
import re
import shlex
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.conftest import FAST_OVERRIDES
from tests.project_copy import PROJECT_ROOT, copy_project

pytestmark = pytest.mark.slow  # two runs, each a real process

K = 5


def readme_commands() -> list[str]:
    section = (PROJECT_ROOT / "README.md").read_text().split("## Your own file", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip().splitlines()


def test_the_readme_reads_a_genes_by_samples_file_and_its_latest_list_after_each_run(tmp_path, base_parameters):
    commands = readme_commands()
    assert commands == [".venv/bin/iclfs --input data/01_raw/expr.tsv.gz --orientation features_in_rows",
                        "cat data/latest/expr/iclfs/feature_list.csv"]
    project = tmp_path / "project"
    local = copy_project(project)
    fast = {section: {**base_parameters[section], **FAST_OVERRIDES[section]} for section in FAST_OVERRIDES}
    fast["selection"] = {**fast["selection"], "k": K, "k_values": [K, 10]}
    (local / "parameters.yml").write_text(yaml.safe_dump(fast))
    genes = [f"ENSG{j:05d}" for j in range(60)]
    values = np.random.default_rng(0).normal(loc=8.0, size=(60, 24)).round(3)
    frame = pd.DataFrame(values, index=pd.Index(genes, name="gene_id"), columns=[f"patient_{i}" for i in range(24)])
    (project / "data/01_raw").mkdir(parents=True)
    with gzip.open(project / "data/01_raw/expr.tsv.gz", "wt") as handle:
        frame.to_csv(handle, sep="\t")

    env = {"KEDRO_DISABLE_TELEMETRY": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    for run in (1, 2):
        words = shlex.split(commands[0])
        done = subprocess.run([sys.executable, "-m", "iclfs", *words[1:]], cwd=project, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        summary = done.stdout[done.stdout.index("Run summary"):]
        assert "data source: expr" in summary and "60 features x 24 samples" in summary
        assert "data/latest/expr/iclfs/feature_list.csv" in summary
        shown = subprocess.run(commands[1], shell=True, cwd=project, env=env, capture_output=True, text=True,
                               timeout=60, check=True).stdout.splitlines()
        assert shown[0].startswith("rank,feature_name") and len(shown) == K + 1, (run, shown)
        listed = pd.read_csv(project / "data/latest/expr/iclfs/feature_list.csv")
        assert set(listed["feature_name"]) <= set(genes)
        versions = sorted((project / "data/07_model_output/expr/iclfs/feature_list.csv").iterdir())
        assert len(versions) == run
        assert shown == (versions[-1] / "feature_list.csv").read_text().splitlines()  # the newest run's
    assert "first run of iclfs on this data source" not in summary  # the second run compares with the first
    reduced = pd.read_parquet(project / "data/latest/expr/iclfs/reduced_data.parquet")
    assert list(reduced.columns) == ["gene_id", *listed["feature_name"]] or list(reduced.columns)[1:] == list(
        listed["feature_name"])
    assert listed["feature_name"].iloc[0] in (project / "data/latest/expr/iclfs/run_report.html").read_text()
