"""The parameter sections: one typed, validated dataclass each, built the same way everywhere."""

import logging
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
    migrate_parameters,
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


# -- keys of an earlier version -------------------------------------------------------------------------

#: A valid value other than the default for every key an old name moved to.
NEW_VALUES = {
    "members.per_run": 3, "members.epochs": 7, "members.subsample": 0.25, "members.feature_blocks": 2,
    "members.carry": False, "members.reset": True, "members.kept": 5, "members.half_life": 4.0,
    "members.laplacian_weight": 0.25,
}
#: A value other than the fixed one for every removed key.
OTHER_VALUES = {
    "consensus.combine": "mean_score", "consensus.laplacian_weight": 0.5, "history.rule": "frequency",
    "history.hold": 2.0, "history.admit": math.inf, "history.laplacian": "run",
    "history.laplacian_fusion": "rank_mean", "training.regime_threshold": 500, "training.leaky_slope": 0.1,
    "training.bn_momentum": 0.1, "training.decorrelation_weight": 0.5, "views.random_keep": 0.4,
    "selection.auto_frequency": 0.6, "baselines.cae.mean_max_target": 0.9, "baselines.cae.stop_mean_max": 0.9,
    "baselines.lscae.lr_decay": 0.5, "baselines.lscae.lr_step": 50, "baselines.lscae.min_decoder_lr": 0.0,
}


def nested(name, value):
    tree = value
    for part in reversed(name.split(".")):
        tree = {part: tree}
    return tree


def pruned(tree):
    """``tree`` without the dicts left empty."""
    out = {key: pruned(value) if isinstance(value, dict) else value for key, value in tree.items()}
    return {key: value for key, value in out.items() if value != {}}


def test_every_old_key_is_covered_and_every_new_name_exists():
    assert set(NEW_VALUES) == set(RENAMED.values()) and set(OTHER_VALUES) == set(REMOVED)
    for new in RENAMED.values():
        section, _, key = new.partition(".")
        assert key in SECTIONS[section]().to_dict(), new
    assert not set(RENAMED) & set(REMOVED)


@pytest.mark.parametrize("old, new", sorted(RENAMED.items()))
def test_a_renamed_key_moves_to_its_new_name_with_a_warning(old, new, caplog):
    value = NEW_VALUES[new]
    migrated, notes = migrate_parameters(nested(old, value))
    assert migrated == nested(new, value)  # the old section, left empty, is gone
    assert len(notes) == 1 and old in notes[0] and new in notes[0]
    new_section, _, new_key = new.partition(".")
    with caplog.at_level(logging.WARNING, logger="iclfs.method._config"):
        settings = Settings.from_parameters(nested(old, value))
    assert getattr(getattr(settings, new_section), new_key) == value
    assert any(old in r.getMessage() and new in r.getMessage() for r in caplog.records)


def test_an_old_key_overrides_the_new_keys_default_and_leaves_the_rest():
    conf = {"members": MembersConfig().to_dict(), "consensus": {"members": 3}, "history": {"max_members": 8},
            "seed": 7}
    migrated, notes = migrate_parameters(conf)
    assert migrated["members"] == {**MembersConfig().to_dict(), "per_run": 3, "kept": 8}
    assert "consensus" not in migrated and "history" not in migrated and migrated["seed"] == 7 and len(notes) == 2
    assert conf["members"] == MembersConfig().to_dict() and conf["consensus"] == {"members": 3}  # a copy
    settings = Settings.from_parameters(conf)
    assert (settings.members.per_run, settings.members.kept, settings.seed) == (3, 8, 7)


def test_an_old_key_does_not_override_a_new_key_the_user_named():
    conf = {"members": {**MembersConfig().to_dict(), "per_run": 5}, "consensus": {"members": 3}}
    migrated, notes = migrate_parameters(conf, given={"members.per_run"})
    assert migrated["members"]["per_run"] == 5 and len(notes) == 1
    migrated, _ = migrate_parameters(conf, given={"members.epochs"})  # another new key named: the old one moves
    assert migrated["members"]["per_run"] == 3


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_a_removed_key_at_its_fixed_value_is_accepted_with_a_warning(name, caplog):
    fixed, _ = REMOVED[name]
    migrated, notes = migrate_parameters(nested(name, fixed))
    assert pruned(migrated) == {}
    assert len(notes) == 1 and name in notes[0] and "no longer a setting" in notes[0]
    with caplog.at_level(logging.WARNING, logger="iclfs.method._config"):
        assert Settings.from_parameters(nested(name, fixed)) == Settings()
    assert any(name in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_a_removed_key_at_another_value_is_refused_naming_where_the_study_lives(name):
    fixed, why = REMOVED[name]
    value = OTHER_VALUES[name]
    message = rf"parameter {re.escape(name)} = {re.escape(repr(value))} is no longer a setting: the method always " \
              rf"uses {re.escape(repr(fixed))} \({re.escape(why)}\).*benchmarks/"
    with pytest.raises(ParameterError, match=message):
        migrate_parameters(nested(name, value))
    with pytest.raises(ParameterError, match=message):
        Settings.from_parameters(nested(name, value))


def test_overrides_take_old_keys_too():
    assert Settings().with_overrides("consensus.members=3").members.per_run == 3
    settings = Settings().with_overrides("history.max_members=5,history.half_life=.inf,history.hold=3,"
                                         "views.random_keep=0.5")
    assert settings.members.kept == 5 and math.isinf(settings.members.half_life)
    assert settings == Settings().with_overrides("members.kept=5")
    with pytest.raises(ParameterError, match="history.hold = 2 is no longer a setting.*benchmarks/"):
        Settings().with_overrides("history.hold=2")
    with pytest.raises(ParameterError, match="unknown parameter 'consensus.membres'"):
        Settings().with_overrides("consensus.membres=3")


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
