"""The dict-to-config helper shared by the pipelines and the selector."""

import pytest

from iclfs.core.config import config_from_dict
from iclfs.core.training import TrainingConfig
from iclfs.core.views import ViewConfig


def test_builds_the_config_with_fixed_keys():
    config = config_from_dict(TrainingConfig, {"learning_rate": 0.01}, "training", fixed={"epochs": 3})
    assert (config.learning_rate, config.epochs) == (0.01, 3)


def test_none_means_defaults():
    assert config_from_dict(ViewConfig, None, "views") == ViewConfig()


def test_unknown_key_is_named_with_its_section_and_known_keys_listed():
    with pytest.raises(ValueError, match=r"unknown key\(s\) training.learning_rat, training.zz; known keys of training: .*learning_rate"):
        config_from_dict(TrainingConfig, {"learning_rat": 1, "zz": 2}, "training")


def test_fixed_keys_are_not_offered_as_known():
    with pytest.raises(ValueError) as error:
        config_from_dict(TrainingConfig, {"nope": 1}, "opts", fixed={"epochs": 3})
    assert "epochs" not in str(error.value).split("known keys of opts:")[1]


def test_key_set_twice_names_who_owns_it():
    with pytest.raises(ValueError, match="opts must not set epochs: use the epochs argument"):
        config_from_dict(TrainingConfig, {"epochs": 5}, "opts", fixed={"epochs": 3}, fixed_by="the epochs argument")


def test_non_dict_is_a_type_error():
    with pytest.raises(TypeError, match="opts must be a dict or None, got list"):
        config_from_dict(TrainingConfig, [], "opts")
