"""A genes x samples file read as samples in rows: refused with the hint orientation=features_in_rows, or, with an
id column, read with a warning that the table looks transposed."""

from __future__ import annotations

import inspect
import logging

import numpy as np
import pandas as pd
import pytest

from iclfs.io import read_feature_table
from iclfs.io._tables import _look_like_sample_ids
from iclfs.method._preprocessing import DataValidationError, as_numeric_matrix
from iclfs.pipelines.data_processing.nodes import validate_and_standardize

GENES = [f"ENSG{100001 + 137 * j:011d}" for j in range(60)]
SAMPLES = [f"GSM{1201 + i}" for i in range(4)]
TRANSPOSED = "looks transposed"


@pytest.fixture
def genes_in_rows(tmp_path):
    """60 genes x 4 GEO samples: the first column the gene ids, the header the GSM ids (60 rows x 5 columns)."""
    values = np.random.default_rng(0).normal(loc=8.0, size=(60, 4)).round(3)
    path = tmp_path / "expr.csv"
    pd.DataFrame(values, index=pd.Index(GENES, name="gene_id"), columns=SAMPLES).to_csv(path)
    return path


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "iclfs.io._tables" and r.levelno == logging.WARNING]


def test_read_without_orientation_it_is_refused_naming_orientation_features_in_rows(genes_in_rows):
    table = read_feature_table(genes_in_rows)
    assert table.X.shape == (60, 5)
    with pytest.raises(DataValidationError) as caught:
        as_numeric_matrix(table.X, table.source)
    assert str(caught.value).startswith(
        f"{genes_in_rows}: 1 column(s) are not numeric: 'gene_id'. The first column 'gene_id' holds names and the "
        "table is taller than wide: if it holds features in rows (genes x samples), read it with "
        "orientation=features_in_rows (--params orientation=features_in_rows, or orientation: in its source). Else: ")


def test_the_pipelines_first_node_refuses_it_with_the_same_hint(genes_in_rows, fast_parameters):
    sections = [name for name in inspect.signature(validate_and_standardize).parameters if name != "raw_data"]
    with pytest.raises(DataValidationError, match=r"read it with orientation=features_in_rows"):
        validate_and_standardize(read_feature_table(genes_in_rows), **{s: fast_parameters.get(s, {}) for s in sections})


def test_a_wide_table_with_a_text_column_gets_no_orientation_hint(tmp_path):
    path = tmp_path / "wide.csv"
    frame = pd.DataFrame(np.ones((4, 10)), columns=[f"g{j}" for j in range(10)])
    frame.insert(0, "tissue", ["liver", "lung", "liver", "lung"])
    frame.to_csv(path, index=False)
    table = read_feature_table(path)
    with pytest.raises(DataValidationError) as caught:
        as_numeric_matrix(table.X, table.source)
    assert "orientation" not in str(caught.value)
    assert str(caught.value).endswith("1 column(s) are not numeric: 'tissue'. Drop them or encode them as numbers "
                                      "before feature selection.")


def test_with_the_gene_column_as_id_column_it_reads_with_a_transposed_warning(genes_in_rows, caplog):
    with caplog.at_level(logging.WARNING, logger="iclfs.io._tables"):
        table = read_feature_table(genes_in_rows, id_column="gene_id")
    assert table.X.shape == (60, 4)
    assert list(table.feature_names) == SAMPLES
    assert list(table.sample_ids) == GENES
    assert [w for w in warnings_of(caplog) if TRANSPOSED in w] == [
        f"{genes_in_rows}: the id column holds 60 distinct names and the header 4 names like GSM1201, GSM1202, "
        "GSM1203: the table looks transposed (features in rows, samples in columns). If so, read it with "
        "orientation=features_in_rows, or its features are the samples."]


def test_read_with_orientation_features_in_rows_it_reads_without_a_warning(genes_in_rows, caplog):
    with caplog.at_level(logging.WARNING, logger="iclfs.io._tables"):
        table = read_feature_table(genes_in_rows, orientation="features_in_rows")
    assert table.X.shape == (4, 60)
    assert list(table.sample_ids) == SAMPLES
    assert warnings_of(caplog) == []


def test_r_row_names_of_genes_get_the_warning_without_an_id_column(tmp_path, caplog):
    """R's write.table: a header one cell short, the gene ids as row names, which are read as sample ids."""
    path = tmp_path / "expr.tsv"
    values = np.random.default_rng(1).normal(size=(60, 4)).round(3)
    lines = ["\t".join(SAMPLES)] + ["\t".join([gene, *map(str, row)]) for gene, row in zip(GENES, values)]
    path.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="iclfs.io._tables"):
        table = read_feature_table(path)
    assert table.X.shape == (60, 4)
    assert len([w for w in warnings_of(caplog) if TRANSPOSED in w]) == 1


def test_a_legitimate_wide_samples_in_rows_table_logs_no_such_warning(tmp_path, caplog):
    path = tmp_path / "wide.csv"
    frame = pd.DataFrame(np.random.default_rng(2).normal(size=(12, 50)).round(3), columns=GENES[:50])
    frame.insert(0, "sample", [f"GSM{2000 + i}" for i in range(12)])
    frame.to_csv(path, index=False)
    with caplog.at_level(logging.WARNING, logger="iclfs.io._tables"):
        table = read_feature_table(path, id_column="sample")
    assert table.X.shape == (12, 50)
    assert [w for w in warnings_of(caplog) if TRANSPOSED in w] == []


def test_a_tall_table_whose_header_is_not_sample_ids_logs_no_such_warning(tmp_path, caplog):
    path = tmp_path / "tall.csv"
    frame = pd.DataFrame(np.random.default_rng(3).normal(size=(60, 4)).round(3),
                         columns=["age", "weight", "height", "glucose"])
    frame.insert(0, "patient", [f"P{i}" for i in range(60)])
    frame.to_csv(path, index=False)
    with caplog.at_level(logging.WARNING, logger="iclfs.io._tables"):
        read_feature_table(path, id_column="patient")
    assert [w for w in warnings_of(caplog) if TRANSPOSED in w] == []


@pytest.mark.parametrize("names, expected", [
    (["GSM1201", "GSM1202", "GSM1203"], True),
    (["S1", "S2", "S10"], True),
    (["sample_12", "sample_13", "sample_14"], True),
    (["sample.1", "sample-2", "sample3"], True),
    (["GSM1", "GSM2", "GSM3", "GSM4", "age"], True),  # 4 of 5: most
    (["GSM1", "GSM2", "GSM3", "age", "sex"], False),  # 3 of 5: not most
    (["TP53", "BRCA1", "EGFR", "MYC", "KRAS"], False),
    (["GSM1", "S2", "X3", "Y4", "Z5"], False),  # every one a prefix and a number, but no common prefix
    (["age", "weight", "height"], False),
    ([], False),
])
def test_look_like_sample_ids(names, expected):
    assert _look_like_sample_ids(names) is expected
