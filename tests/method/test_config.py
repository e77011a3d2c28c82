"""The parameter sections: one typed, validated dataclass each, built the same way everywhere."""

from pathlib import Path

import pytest
import yaml

from iclfs.method.config import (
    SECTIONS,
    ConsensusConfig,
    ParameterError,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
    parse_overrides,
)

CONF = Path(__file__).resolve().parents[2] / "conf" / "base"


def test_builds_the_config_with_fixed_keys():
    config = TrainingConfig.from_dict({"learning_rate": 0.01}, "training", fixed={"epochs": 3})
    assert (config.learning_rate, config.epochs) == (0.01, 3)


def test_none_means_defaults():
    assert ViewConfig.from_dict(None) == ViewConfig()


def test_unknown_key_is_named_with_its_section_and_known_keys_listed():
    with pytest.raises(ParameterError, match=r"unknown parameter\(s\) training.learning_rat \(did you mean "
                                             r"'learning_rate'\?\), training.zz; known keys of training: .*learning_rate"):
        TrainingConfig.from_dict({"learning_rat": 1, "zz": 2})


def test_fixed_keys_are_not_offered_as_known():
    with pytest.raises(ParameterError) as error:
        TrainingConfig.from_dict({"nope": 1}, "opts", fixed={"epochs": 3})
    assert "epochs" not in str(error.value).split("known keys of opts:")[1]


def test_key_set_twice_names_who_owns_it():
    with pytest.raises(ParameterError, match="opts must not set epochs: use the epochs argument"):
        TrainingConfig.from_dict({"epochs": 5}, "opts", fixed={"epochs": 3}, fixed_by="the epochs argument")


def test_non_dict_is_a_type_error():
    with pytest.raises(TypeError, match="opts must be a dict or None, got list"):
        TrainingConfig.from_dict([], "opts")


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("training", "epochs", -1, "training.epochs = -1 is invalid: expected an integer in 1..100,000"),
        ("training", "epochs", 2.5, "training.epochs = 2.5 is invalid"),
        ("training", "use_attention", "yes", "training.use_attention = 'yes' is invalid: expected true or false"),
        ("training", "schedule", "slow", "training.schedule = 'slow' is invalid: expected one of fast, paper"),
        ("views", "heavy_keep", 1.5, r"views.heavy_keep = 1.5 is invalid: expected a number in \(0, 1\]"),
        ("views", "stream", "cuda", "views.stream = 'cuda' is invalid: expected one of vectorized, published"),
        ("selection", "quantile", 1.2, r"selection.quantile = 1.2 is invalid: expected a number in \[0, 1\]"),
        ("selection", "alpha", 0.5, "selection.alpha = 0.5 is invalid: expected a number >= 1"),
        ("selection", "k_values", [50, 50], "selection.k_values = .* expected a list without repeated k"),
        ("selection", "k", 7, r"selection.k = 7 is invalid: expected 'auto' or one of selection.k_values"),
        ("ranking", "score", "l2", "ranking.score = 'l2' is invalid"),
        ("consensus", "subsample", 0.0, r"consensus.subsample = 0.0 is invalid: expected a number in \(0, 1\]"),
        ("consensus", "combine", "vote", "consensus.combine = 'vote' is invalid"),
        ("runtime", "num_threads", 0, "runtime.num_threads = 0 is invalid: expected null or an integer >= 1"),
        ("evaluation", "n_runs", 0, "evaluation.n_runs = 0 is invalid"),
    ],
)
def test_every_bad_value_is_named_with_section_key_and_what_was_expected(section, key, value, message):
    with pytest.raises(ParameterError, match=message):
        SECTIONS[section].from_dict({key: value})


def test_lists_become_tuples_and_back():
    selection = SelectionConfig.from_dict({"k": 5, "k_values": [5, 10]})
    assert selection.k_values == (5, 10) and selection.to_dict()["k_values"] == [5, 10]
    assert hash(selection)


def test_conf_base_holds_exactly_the_defaults_of_every_section():
    """conf/base is the defaults a user reads; the dataclasses are the defaults every entry point uses."""
    parameters = {}
    for path in CONF.glob("parameters*.yml"):
        parameters.update(yaml.safe_load(path.read_text()))
    assert Settings.from_parameters(parameters) == Settings()
    for name, section in SECTIONS.items():
        assert set(parameters[name]) == set(section().to_dict()), name


def test_settings_round_trip_and_overrides():
    settings = Settings().with_overrides("selection.use_lgrc=false,selection.k_values=[50,100],seed=7")
    assert settings.selection.use_lgrc is False and settings.selection.k_values == (50, 100) and settings.seed == 7
    assert Settings.from_parameters(settings.to_parameters()) == settings
    with pytest.raises(ParameterError, match="unknown parameter 'selection.enabled'"):
        Settings().with_overrides("selection.enabled=false")


def test_overrides_keep_lists_whole_and_read_yaml():
    assert parse_overrides("a.b=[1, 2],c.d=null,e.f=x") == {"a.b": [1, 2], "c.d": None, "e.f": "x"}
    with pytest.raises(ParameterError, match="not key=value"):
        parse_overrides("a.b")


@pytest.mark.parametrize("changes, message", [
    ({"views": ViewConfig(stream="published"), "consensus": ConsensusConfig(members=3)},
     "published.*needs consensus.members 1"),
    ({"selection": SelectionConfig(k="auto"), "consensus": ConsensusConfig(members=1)},
     "selection.k 'auto' .*needs consensus.members 2 or more"),
    ({"seed": -1}, "seed = -1 is invalid"),
])
def test_settings_refuse_combinations_that_cannot_run(changes, message):
    with pytest.raises(ParameterError, match=message):
        Settings(**changes)


def test_the_configuration_guide_lists_every_key_with_its_default():  # keys and defaults alike
    guide = (CONF.parents[1] / "docs" / "guides" / "configuration.md").read_text()
    for name, section in SECTIONS.items():
        assert f"## `{name}`" in guide, name
        for key, default in section().to_dict().items():
            shown = "null" if default is None else str(default).lower() if isinstance(default, bool) else default
            assert f"| `{key}` | `{shown}` |" in guide, f"{name}.{key}: the guide's default is not {shown!r}"


@pytest.mark.parametrize("conf_file", ["parameters_benchmark.yml", "dask.yml"])
def test_the_configuration_guide_lists_every_key_outside_the_method(conf_file):
    guide = (CONF.parents[1] / "docs" / "guides" / "configuration.md").read_text()
    sections = yaml.safe_load((CONF / conf_file).read_text())
    keys = [f"{section}.{key}" for section, values in sections.items() for key in values]
    assert keys
    assert [key for key in keys if f"| `{key}` |" not in guide] == []


def test_the_configuration_guide_lists_every_baseline_option_with_its_default():
    from iclfs.baselines import REGISTRY

    guide = (CONF.parents[1] / "docs" / "guides" / "configuration.md").read_text()
    conf = yaml.safe_load((CONF / "parameters_baselines.yml").read_text())["baselines"]
    assert set(conf) == set(REGISTRY)
    for key, entry in REGISTRY.items():
        defaults = entry.options().to_dict()
        assert conf[key] == defaults, key  # conf's defaults are the options' own
        for option, default in defaults.items():
            shown = "null" if default is None else default
            assert f"| `baselines.{key}.{option}` | `{shown}` |" in guide, f"baselines.{key}.{option}"
