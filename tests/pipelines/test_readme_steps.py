"""The README's "your own file, in three commands", followed literally on a genes x samples TSV without labels."""

from __future__ import annotations

import glob
import logging

import numpy as np
import pandas as pd

from tests.pipelines.conftest import run_session


def test_a_tsv_of_genes_by_samples_without_labels_follows_the_readme(project, caplog):
    (project / "conf/local/catalog.yml").unlink()  # the README edits no conf: the input is a runtime parameter
    genes = [f"ENSG{j:05d}" for j in range(60)]
    values = np.random.default_rng(0).normal(size=(60, 24)).round(3)
    frame = pd.DataFrame(values, index=pd.Index(genes, name="gene"), columns=[f"patient_{i}" for i in range(24)])
    frame.to_csv(project / "expr.tsv", sep="\t")

    caplog.set_level(logging.INFO)
    run_session(project, pipeline_names=["select"],
                runtime_params={"input": str(project / "expr.tsv"), "orientation": "features_in_rows"})

    # the README's literal paths, under the data source named after the file
    (listing,) = glob.glob(str(project / "data/07_model_output/expr/feature_list.csv/*/feature_list.csv"))
    selected = pd.read_csv(listing)
    assert len(selected) == 5 and set(selected["feature_name"]) <= set(genes)
    (reduced,) = glob.glob(str(project / "data/07_model_output/expr/reduced_data.parquet/*/reduced_data.parquet"))
    table = pd.read_parquet(reduced)
    assert list(table.columns) == ["sample_id", *selected["feature_name"]]  # the sample ids first
    assert table["sample_id"].tolist() == [f"patient_{i}" for i in range(24)]
    (report,) = glob.glob(str(project / "data/08_reporting/expr/run_report.html/*/run_report.html"))
    assert selected["feature_name"].iloc[0] in open(report).read()
    # the summary at the end of the run
    summary = "\n".join(r.getMessage() for r in caplog.records if r.name == "iclfs.summary")
    assert summary.startswith("Run summary\n  ")
    assert "data source: expr" in summary and "60 features x 24 samples" in summary
    assert listing in summary and selected["feature_name"].iloc[0] in summary
    assert "first run of iclfs on this data source" in summary
