"""The parameter sections: one typed, validated dataclass each, built the same way everywhere."""

import math
import re
from pathlib import Path

import pytest
import yaml

from iclfs.method._config import (
    REMOVED,
    RENAMED,
    SECTIONS,
    MembersConfig,
    ParameterError,
    SelectionConfig,
    Settings,
    TrainingConfig,
    ViewConfig,
    number,
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
        ("selection", "alpha", 0.5, "selection.alpha = 0.5 is invalid: expected a finite number >= 1"),
        ("selection", "alpha", math.inf, "selection.alpha = inf is invalid: expected a finite number >= 1"),
        ("training", "learning_rate", math.nan, "training.learning_rate = nan is invalid: expected a finite number"),
        ("selection", "k_values", [50, 50], "selection.k_values = .* expected a list without repeated k"),
        ("selection", "k", 7, r"selection.k = 7 is invalid: expected 'auto' or one of selection.k_values"),
        ("ranking", "score", "l2", "ranking.score = 'l2' is invalid"),
        ("members", "subsample", 0.0, r"members.subsample = 0.0 is invalid: expected a number in \(0, 1\]"),
        ("members", "kept", 0, "members.kept = 0 is invalid: expected an integer in 1..1,000"),
        ("members", "half_life", 0, r"members.half_life = 0 is invalid: expected a number > 0 \(.inf allowed\)"),
        ("members", "half_life", math.nan, "members.half_life = nan is invalid"),
        ("members", "laplacian_weight", 1.5, "members.laplacian_weight = 1.5 is invalid"),
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


# -- keys of an earlier version: refused, naming what replaced them -------------------------------------------

#: A valid value other than the default for every key an old name moved to.
NEW_VALUES = {
    "members.per_run": 3, "members.epochs": 7, "members.subsample": 0.25, "members.feature_blocks": 2,
    "members.carry": False, "members.reset": True, "members.kept": 5, "members.half_life": 4.0,
    "members.laplacian_weight": 0.25,
}


def nested(name, value):
    tree = value
    for part in reversed(name.split(".")):
        tree = {part: tree}
    return tree


def test_every_old_key_is_covered_and_every_new_name_exists():
    assert set(NEW_VALUES) == set(RENAMED.values())
    for new in RENAMED.values():
        section, _, key = new.partition(".")
        assert key in SECTIONS[section]().to_dict(), new
    assert not set(RENAMED) & set(REMOVED)


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_a_renamed_key_is_refused_in_one_line_naming_its_new_name(old, new):
    message = rf"^parameter {re.escape(old)} is now {re.escape(new)}: rename it where it is set"
    with pytest.raises(ParameterError, match=message) as raised:
        Settings.from_parameters(nested(old, NEW_VALUES[new]))
    assert "\n" not in str(raised.value)
    with pytest.raises(ParameterError, match=message):
        Settings().with_overrides(f"{old}={NEW_VALUES[new]}")


def test_an_old_key_beside_its_new_one_is_refused_never_silently_winning():
    # issue 58: history.max_members: 3 and members.kept: 9 both set, the old one won without a word
    conf = {"members": {**MembersConfig().to_dict(), "kept": 9}, "history": {"max_members": 3}}
    with pytest.raises(ParameterError, match=r"parameter history.max_members is now members.kept"):
        Settings.from_parameters(conf)


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_a_removed_key_is_refused_whatever_its_value_saying_what_the_method_uses(name):
    fixed, why = REMOVED[name]
    message = rf"parameter {re.escape(name)} is no longer a setting: the method always uses " \
              rf"{re.escape(repr(fixed))} \({re.escape(why)}\).*benchmarks/"
    with pytest.raises(ParameterError, match=message):
        Settings.from_parameters(nested(name, fixed))


def test_a_key_left_in_an_old_section_is_refused_and_a_misspelt_new_one_gets_a_suggestion():
    with pytest.raises(ParameterError, match=r"parameter consensus.membres: the section consensus is gone, its "
                                             r"settings are members\.\*"):
        Settings().with_overrides("consensus.membres=3")
    with pytest.raises(ParameterError, match=r"unknown parameter 'members.kep' \(did you mean 'members.kept'\?\)"):
        Settings().with_overrides("members.kep=3")


def test_numbers_refuse_inf_and_nan_unless_told():
    with pytest.raises(ParameterError, match=r"selection.alpha = inf is invalid: expected a finite number >= 1"):
        Settings().with_overrides("selection.alpha=.inf")
    with pytest.raises(ParameterError, match="training.learning_rate = nan is invalid: expected a finite number"):
        Settings().with_overrides("training.learning_rate=.nan")
    with pytest.raises(ParameterError, match="training.learning_rate = nan is invalid"):
        TrainingConfig(learning_rate=float("nan"))
    assert math.isinf(Settings().with_overrides("members.half_life=.inf").members.half_life)
    with pytest.raises(ParameterError, match="members.half_life = nan is invalid"):
        Settings().with_overrides("members.half_life=.nan")
    assert number(0)(math.inf) == "a finite number >= 0" and number(0)(math.nan) is not None
    assert number(0, finite=False)(math.inf) is None and number(0, finite=False)(math.nan) is not None
    assert number(0, 1)(-math.inf) is not None and number(0, 1)(0.5) is None


def test_overrides_keep_lists_whole_and_read_yaml():
    assert parse_overrides("a.b=[1, 2],c.d=null,e.f=x") == {"a.b": [1, 2], "c.d": None, "e.f": "x"}
    with pytest.raises(ParameterError, match="not key=value"):
        parse_overrides("a.b")


@pytest.mark.parametrize("changes, message", [
    ({"views": ViewConfig(stream="published"), "members": MembersConfig(per_run=3)},
     "published.*needs members.per_run 1"),
    ({"views": ViewConfig(stream="published"), "members": MembersConfig(feature_blocks=2)},
     "published.*needs members.feature_blocks 1"),
    ({"selection": SelectionConfig(k="auto"), "members": MembersConfig(per_run=1)},
     "selection.k 'auto' .*needs members.per_run 2 or more"),
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
