"""The full-run benchmark command: parameters, one real tiny run, merging, the fast/paper comparison."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.io
import yaml

from iclfs.apps import benchmark as full_run
from tests.conftest import PROJECT_ROOT


def test_parameters_are_the_pipelines(base_parameters):
    parameters = full_run.load_parameters(PROJECT_ROOT / "conf", envs=("base",))
    assert parameters == {key: base_parameters[key] for key in ("seed", *full_run.PARAMETER_SECTIONS)}
    assert full_run.TARGET_POINTS == base_parameters["benchmark_report"]["target_points"]


def test_a_local_section_sets_only_the_keys_it_names(tmp_path):
    base, local = tmp_path / "base", tmp_path / "local"
    base.mkdir(), local.mkdir()
    sections = {key: {"a": 1, "b": 2} for key in full_run.PARAMETER_SECTIONS}
    (base / "parameters.yml").write_text(yaml.safe_dump({"seed": 42, **sections}))
    (local / "parameters.yml").write_text(yaml.safe_dump({"seed": 7, "training": {"b": 3}}))
    parameters = full_run.load_parameters(tmp_path)
    assert parameters["seed"] == 7 and parameters["training"] == {"a": 1, "b": 3} and parameters["lgrc"]["b"] == 2
    with pytest.raises(FileNotFoundError, match="parameters .*'views'.* not found"):
        (base / "parameters.yml").write_text(yaml.safe_dump({"seed": 42, "training": {}}))
        full_run.load_parameters(tmp_path)


def _tiny(path):
    rng = np.random.default_rng(0)
    y = np.repeat([1, 2], 15)
    X = rng.normal(size=(30, 40))
    X[:, :5] += 3 * (y[:, None] - 1)
    scipy.io.savemat(path, {"X": X, "Y": y[:, None]})


def _conf(tmp_path, base_parameters):
    """conf/base as the project's, with 2 epochs, k in {5, 10} and 3 k-means runs."""
    base = tmp_path / "conf" / "base"
    base.mkdir(parents=True)
    parameters = {key: base_parameters[key] for key in ("seed", *full_run.PARAMETER_SECTIONS)}
    parameters["training"] = {**parameters["training"], "epochs": 2}
    parameters["lgrc"] = {**parameters["lgrc"], "k_values": [5, 10, 50]}  # 50 > d: left out
    parameters["evaluation"] = {"n_runs": 3}
    (base / "parameters.yml").write_text(yaml.safe_dump(parameters))
    return tmp_path / "conf"


def test_command_runs_both_schedules_then_keeps_and_replaces_runs(tmp_path, base_parameters):
    _tiny(tmp_path / "COIL20.mat")
    conf = _conf(tmp_path, base_parameters)
    output = tmp_path / "full_run.md"
    common = ["--datasets", "COIL20", "--datasets-dir", str(tmp_path), "--device", "cpu", "--conf", str(conf),
              "--output", str(output), "--notes", str(tmp_path / "absent.md")]
    full_run.main([*common, "--schedules", "fast", "paper"])

    report = json.loads(output.with_suffix(".json").read_text())
    assert [(r["schedule"], r["precision"], r["seed"], r["epochs"]) for r in report["runs"]] == [
        ("fast", "fp32", 42, 2), ("paper", "fp32", 42, 2)]
    run = report["runs"][0]
    assert (run["d"], run["n"], run["classes"], run["regime"]) == (40, 30, 2, "small")
    assert [row["k"] for row in run["rows"]] == [5, 10] and run["best"] in run["rows"]
    assert len(run["epoch_seconds"]) == 2 and run["peak_cuda_bytes"] is None
    text = output.read_text()
    assert "| COIL20 | 30 x 40 | fast | fp32 | 42 | 2 |" in text and "## Analysis" not in text
    assert "| cpu | fast | fp32 | 42 | 2 | 1 of 10 |" in text.split("## Total training time")[1]
    assert "| COIL20 | cpu | 2 |" in text.split("## `fast` against `paper`")[1]

    full_run.main([*common, "--schedules", "fast", "--seeds", "43", "--keep", str(output.with_suffix(".json"))])
    again = json.loads(output.with_suffix(".json").read_text())
    assert [(r["schedule"], r["seed"]) for r in again["runs"]] == [("fast", 42), ("fast", 43), ("paper", 42)]
    assert again["runs"][0] == run  # kept as it was
    assert [c["command"].split("--schedules")[1].strip() for c in again["commands"]] == [
        "fast paper", "fast --seeds 43 --keep " + str(output.with_suffix(".json"))]

    full_run.main([*common, "--schedules", "fast", "--keep", str(output.with_suffix(".json"))])
    assert len(json.loads(output.with_suffix(".json").read_text())["runs"]) == 3  # seed 42 replaced, not added


def test_a_run_without_attention_records_no_kernel(tmp_path, base_parameters):
    _tiny(tmp_path / "t.mat")
    parameters, params = full_run.apply_params(full_run.load_parameters(_conf(tmp_path, base_parameters)),
                                               "training.use_attention=false")
    run = full_run.run_one(tmp_path / "t.mat", "t", parameters, "fast", 42, {"device": "cpu"}, params)
    assert run["attention_kernel"] is None and run["params"] == "training.use_attention=false"


def test_same_seed_same_result_on_cpu(tmp_path, base_parameters):
    _tiny(tmp_path / "t.mat")
    parameters = full_run.load_parameters(_conf(tmp_path, base_parameters))
    first, second = (full_run.run_one(tmp_path / "t.mat", "t", parameters, "fast", 3, {"device": "cpu"})
                     for _ in range(2))
    assert first["rows"] == second["rows"] and first["final_loss"] == second["final_loss"]


def test_a_missing_file_or_bad_setting_stops_before_any_output(tmp_path, capsys):
    output = tmp_path / "full_run.md"
    with pytest.raises(SystemExit):
        full_run.main(["--datasets", "nci9", "--datasets-dir", str(tmp_path), "--device", "cpu",
                       "--conf", str(PROJECT_ROOT / "conf"), "--output", str(output)])
    assert f"dataset file(s) not found: {tmp_path / 'nci9.mat'}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        full_run.main(["--device", "cpu", "--precision", "bf16", "--conf", str(PROJECT_ROOT / "conf"),
                       "--output", str(output)])
    assert "training.precision 'bf16' needs a CUDA device" in capsys.readouterr().err
    assert not output.exists() and not output.with_suffix(".json").exists()


def _run(schedule, seed, accuracy, std=0.01, precision=None):
    return {"dataset": "X", "device": "cuda", "epochs": 100, "schedule": schedule, "seed": seed,
            "precision": precision or ("tf32" if schedule == "fast" else "fp32"),
            "best": {"accuracy_mean": accuracy, "accuracy_std": std}}


def test_parity_uses_the_k_means_std_and_with_several_seeds_the_seed_spread():
    one_seed = full_run.parity([_run("fast", 42, 0.60), _run("paper", 42, 0.62, std=0.015)])
    assert [(round(a["difference"], 4), a["noise"], a["agree"]) for a in one_seed] == [(-0.02, 0.015, False)]

    runs = [_run("fast", 42, 0.60), _run("fast", 43, 0.70), _run("paper", 42, 0.62), _run("paper", 43, 0.66)]
    [several] = full_run.parity(runs)
    assert several["noise"] == pytest.approx(np.std([0.60, 0.70], ddof=1)) and several["agree"]

    by_precision = full_run.parity(runs + [_run("fast", 42, 0.9, precision="bf16")])
    assert [(a["fast_precision"], a["agree"]) for a in by_precision] == [("bf16", False), ("tf32", True)]
    assert full_run.parity([_run("fast", 42, 0.6)]) == []  # nothing to compare with


def test_render_appends_the_notes(tmp_path):
    report = {"environment": {"date": "d", "device": "cpu", "torch": "2", "python": "3.11", "command": "c"},
              "runs": []}
    (tmp_path / "r.json").write_text(json.dumps(report))
    (tmp_path / "notes.md").write_text("Why.")
    full_run.main(["--render", str(tmp_path / "r.json"), "--notes", str(tmp_path / "notes.md"),
                   "--output", str(tmp_path / "r.md")])
    text = (tmp_path / "r.md").read_text()
    assert "# d\nc\n" in text and text.rstrip().endswith("## Analysis\n\nWhy.")


def test_params_override_conf_keys_and_name_the_variant(base_parameters):
    parameters = {key: base_parameters[key] for key in ("seed", *full_run.PARAMETER_SECTIONS)}
    updated, params = full_run.apply_params(
        parameters, "training.use_decorrelation=false, lgrc.k_values=[50,100],lgrc.enabled=false")
    assert updated["lgrc"]["k_values"] == [50, 100] and updated["lgrc"]["enabled"] is False
    assert updated["training"]["use_decorrelation"] is False
    assert parameters["lgrc"]["enabled"] is True  # the caller's dict is left as it was
    assert params == "lgrc.enabled=false,lgrc.k_values=[50, 100],training.use_decorrelation=false"
    assert full_run.apply_params(parameters, None) == (parameters, "")
    with pytest.raises(ValueError, match="'training.use_decorelation' is not a parameter of conf; known: .*"):
        full_run.apply_params(parameters, "training.use_decorelation=false")
    with pytest.raises(ValueError, match="'seed=1' is not section.key=value"):
        full_run.apply_params(parameters, "seed=1")
    with pytest.raises(ValueError, match=r"the value of 'lgrc.k_values' is not valid YAML \('\[50'\)"):
        full_run.apply_params(parameters, "lgrc.k_values=[50")


def test_a_bad_score_stops_before_any_output(tmp_path, capsys):
    with pytest.raises(SystemExit):
        full_run.main(["--device", "cpu", "--params", "ranking.score=l1", "--conf", str(PROJECT_ROOT / "conf"),
                       "--output", str(tmp_path / "r.md")])
    assert "ranking.score must be one of" in capsys.readouterr().err and not (tmp_path / "r.md").exists()


def test_a_variant_adds_its_own_runs(tmp_path, base_parameters):
    _tiny(tmp_path / "COIL20.mat")
    conf = _conf(tmp_path, base_parameters)
    output = tmp_path / "full_run.md"
    common = ["--datasets", "COIL20", "--datasets-dir", str(tmp_path), "--device", "cpu", "--conf", str(conf),
              "--output", str(output), "--notes", str(tmp_path / "absent.md"), "--schedules", "fast"]
    full_run.main(common)
    full_run.main([*common, "--params", "lgrc.enabled=false", "--keep", str(output.with_suffix(".json"))])
    runs = json.loads(output.with_suffix(".json").read_text())["runs"]
    assert [r["params"] for r in runs] == ["", "lgrc.enabled=false"]
    text = output.read_text()
    assert "| COIL20 (lgrc.enabled=false) | 30 x 40 | fast |" in text and "| COIL20 | 30 x 40 | fast |" in text
    totals = text.split("## Total training time")[1]
    assert "| lgrc.enabled=false | cpu | fast | fp32 | 42 | 2 | 1 of 10 |" in totals and totals.count("| – |\n") == 1
    assert "| – (a variant) |" in text  # the paper's number is the full model's


def test_a_reference_stream_run_is_the_full_model_and_exports_to_the_benchmark_table(tmp_path, base_parameters):
    """views.stream changes only the random draws: the run is judged against the paper, and
    --export-benchmark merges it into the pipeline's result table as 'ICLFS [reference stream]'."""
    import pandas as pd

    from iclfs.pipelines.benchmark.nodes import RESULT_COLUMNS

    assert not full_run.is_variant("") and not full_run.is_variant('views.stream="reference"')
    assert full_run.is_variant('lgrc.enabled=false,views.stream="reference"')
    _tiny(tmp_path / "COIL20.mat")
    conf = _conf(tmp_path, base_parameters)
    output = tmp_path / "full_run.md"
    common = ["--datasets", "COIL20", "--datasets-dir", str(tmp_path), "--device", "cpu", "--conf", str(conf),
              "--output", str(output), "--notes", str(tmp_path / "absent.md"), "--schedules", "paper"]
    full_run.main([*common, "--params", "views.stream=reference"])
    full_run.main([*common, "--params", "lgrc.enabled=false,views.stream=reference",
                   "--keep", str(output.with_suffix(".json"))])
    text = output.read_text()
    assert "| COIL20 (views.stream=\"reference\") | 30 x 40 | paper |" in text
    assert text.count("| – (a variant) |") == 1  # only the ablation
    totals = text.split("## Total training time")[1]
    assert "| views.stream=\"reference\" | cpu | paper | fp32 | 42 | 2 | 1 of 10 |" in totals

    bench = tmp_path / "benchmark"
    bench.mkdir()
    earlier = pd.DataFrame([{**dict.fromkeys(RESULT_COLUMNS, 0), "dataset": "COIL20", "method": "LS", "k": 5,
                             "seed": 42, "versions": "v", "device": "cpu", "schedule": "none", "run_at": "t"}])
    earlier.to_csv(bench / "COIL20.csv", index=False)
    export = ["--render", str(output.with_suffix(".json")), "--export-benchmark", str(bench), "--conf", str(conf),
              "--datasets", "COIL20", "--schedules", "paper", "--params", "views.stream=reference"]
    full_run.main(export)
    table = pd.read_csv(bench / "COIL20.csv")
    assert list(table.columns) == RESULT_COLUMNS
    assert sorted(set(table["method"])) == ["ICLFS [reference stream]", "LS"]  # the ablation run was not selected
    iclfs = table[table["method"] == "ICLFS [reference stream]"].sort_values("k")
    run = next(r for r in json.loads(output.with_suffix(".json").read_text())["runs"]
               if r["params"] == 'views.stream="reference"')
    assert iclfs["accuracy_mean"].tolist() == [row["accuracy_mean"] for row in run["rows"]]
    assert set(iclfs["n_runs"]) == {3} and set(iclfs["schedule"]) == {"paper"} and set(iclfs["epochs"]) == {2}
    assert iclfs["seconds"].iloc[0] == pytest.approx(run["training_seconds"])
    full_run.main(export)  # a second export replaces the run's rows, adds none
    assert len(pd.read_csv(bench / "COIL20.csv")) == len(table)


def test_export_needs_a_json_and_a_matching_run(tmp_path, capsys):
    with pytest.raises(SystemExit):
        full_run.main(["--export-benchmark", str(tmp_path), "--conf", str(PROJECT_ROOT / "conf")])
    assert "--export-benchmark reads the runs of --render JSON" in capsys.readouterr().err
    (tmp_path / "r.json").write_text(json.dumps({"runs": []}))
    with pytest.raises(SystemExit):
        full_run.main(["--render", str(tmp_path / "r.json"), "--export-benchmark", str(tmp_path),
                       "--conf", str(PROJECT_ROOT / "conf"), "--params", "views.stream=reference"])
    assert "has no run of those datasets, schedules, seeds and --params 'views.stream=\"reference\"'" in \
        capsys.readouterr().err
