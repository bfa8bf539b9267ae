"""`history:` in the config: a path (as before), or `{path, record}`."""

from __future__ import annotations

import pytest

from gate.errors import ConfigError
from gate.suite.config import load_config
from tests.conftest import Project


def test_the_string_form_is_still_the_path_and_records_baselines_only(project: Project) -> None:
    project.write_config(history="records/demo.jsonl")
    config = load_config(project.config_path).config
    assert config.history_path == "records/demo.jsonl"
    assert config.history_records_all is False


def test_unset_is_the_default_path(project: Project) -> None:
    config = load_config(project.config_path).config
    assert config.history_path == "history/demo.jsonl"
    assert config.history_records_all is False


def test_the_mapping_form_takes_a_path_and_record(project: Project) -> None:
    project.write_config(history={"path": "records/demo.jsonl", "record": "all"})
    config = load_config(project.config_path).config
    assert (config.history_path, config.history_records_all) == ("records/demo.jsonl", True)
    project.write_config(history={"record": "all"})
    config = load_config(project.config_path).config
    assert (config.history_path, config.history_records_all) == ("history/demo.jsonl", True)
    project.write_config(history={"path": "h.jsonl"})
    assert load_config(project.config_path).config.history_records_all is False


def test_record_stays_out_of_the_config_hash(project: Project) -> None:
    """How runs are kept is not what a run measures: no baseline turns stale over it, and
    the runs before and after the switch are runs of one configuration."""
    project.write_config(history="records/demo.jsonl")
    as_string = load_config(project.config_path).config_hash()
    project.write_config(history={"path": "records/demo.jsonl", "record": "all"})
    assert load_config(project.config_path).config_hash() == as_string
    project.write_config()
    unset = load_config(project.config_path).config_hash()
    project.write_config(history={"record": "all"})
    assert load_config(project.config_path).config_hash() == unset
    assert "history" not in load_config(project.config_path).as_dict()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3, "give the history export's path (history/suite.jsonl), or a mapping with `path`"),
        ({"record": "sometimes"}, "history.record"),
        ({"path": "h.jsonl", "recrd": "all"}, "recrd"),
        ({"path": ""}, "history.path"),
    ],
)
def test_a_bad_history_is_one_line_naming_it(
    project: Project, value: object, expected: str
) -> None:
    project.write_config(history=value)
    with pytest.raises(ConfigError) as caught:
        load_config(project.config_path)
    assert len(caught.value.problems) == 1
    assert expected in caught.value.problems[0], caught.value.problems


def test_set_reaches_into_the_string_form(project: Project) -> None:
    project.write_config(history="records/demo.jsonl")
    config = load_config(project.config_path, ["history.record=all"]).config
    assert (config.history_path, config.history_records_all) == ("records/demo.jsonl", True)
    project.write_config(recordings="recs")
    loaded = load_config(project.config_path, ["recordings.max_age_days=5"])
    assert loaded.recordings_max_age_days == 5
    assert loaded.recordings_dir == (project.root / "recs").resolve()
