"""Tests run on a conf of their own (issue 58, "The tests themselves"): never the developer's conf/local."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT


def test_the_session_works_in_a_copy_whose_conf_local_is_empty():
    here = Path.cwd()
    assert here != PROJECT_ROOT and (here / "conf" / "base").is_dir()
    assert list((here / "conf" / "local").iterdir()) == []


def test_what_reads_conf_from_the_working_folder_reads_the_copy(tmp_path):
    """A source with an invalid name, as the probe declared in its own conf/local, is read by nothing here."""
    from iclfs.project._conf import project_conf
    from iclfs.project._sources import SourceError

    bad = "sources:\n  'bad name!':\n    input: x.csv\n"
    developer = tmp_path / "conf"
    (developer / "local").mkdir(parents=True)
    (developer / "base").mkdir()
    (developer / "local" / "parameters.yml").write_text(bad)
    with pytest.raises(SourceError, match="'bad name!' is not allowed"):  # refused where it is declared ...
        project_conf(developer)
    assert "bad name!" not in (project_conf(Path.cwd() / "conf").get("sources") or {})  # ... never read here
