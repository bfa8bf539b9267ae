"""The run configuration: validation with lines, overrides, resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.config import apply_overrides, load_config, parse_override
from gate.errors import ConfigError
from tests.conftest import Project


def problems(path: Path, overrides: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config(path, overrides)
    return caught.value.problems


def test_defaults(project: Project) -> None:
    loaded = load_config(project.config_path)
    assert loaded.config.samples == 1
    assert loaded.config.mode == "replay"
    assert loaded.config.cases == ["cases"]
    assert loaded.config.gate.block_on_critical_regression is True
    assert loaded.recordings_dir == (project.root / "recordings").resolve()


def test_unknown_top_level_key_names_its_line(project: Project) -> None:
    project.config_path.write_text(project.config_path.read_text() + "sampels: 3\n")
    lines = len(project.config_path.read_text().splitlines())
    assert problems(project.config_path) == [
        f"{project.config_path}:{lines}: unknown key 'sampels' (did you mean 'samples'?)"
    ]


def test_unknown_gate_key(project: Project) -> None:
    project.write_config(gate={"tolerence": 0.1})
    assert (
        "unknown key 'gate.tolerence' (did you mean 'tolerance'?)"
        in problems(project.config_path)[0]
    )


def test_unknown_provider_and_missing_target(project: Project) -> None:
    project.write_config(system={"name": "x", "provider": "bard"})
    assert "unknown provider 'bard'" in problems(project.config_path)[0]
    project.write_config(system={"name": "x", "provider": "python"})
    assert "system.target is required" in problems(project.config_path)[0]


def test_missing_config_file_says_how_to_fix(tmp_path: Path) -> None:
    assert "casegate init" in problems(tmp_path / "nope.yml")[0]


def test_prompt_file_is_read_and_must_exist(project: Project) -> None:
    project.write_text("prompts/p.md", "Be brief.")
    project.write_config(
        system={"name": "x", "provider": "python", "target": "m:f", "prompt_file": "prompts/p.md"}
    )
    assert load_config(project.config_path).resolved_system()["prompt"] == "Be brief."
    project.write_config(
        system={"name": "x", "provider": "python", "target": "m:f", "prompt_file": "gone.md"}
    )
    assert "'gone.md' does not exist" in problems(project.config_path)[0]


def test_overrides_are_typed_and_recorded(project: Project) -> None:
    loaded = load_config(
        project.config_path, ["system.model=gpt-4.1", "samples=3", "system.params.temperature=0.2"]
    )
    assert loaded.config.system.model == "gpt-4.1"
    assert loaded.config.samples == 3
    assert loaded.config.system.params == {"temperature": 0.2}
    assert loaded.overrides == [
        "system.model=gpt-4.1",
        "samples=3",
        "system.params.temperature=0.2",
    ]


def test_bad_override_is_a_config_error(project: Project) -> None:
    assert "expected key.path=value" in problems(project.config_path, ("samples",))[0]
    assert "samples" in problems(project.config_path, ("samples=zero",))[0]
    assert "'suite' is not a mapping" in problems(project.config_path, ("suite.x=1",))[0]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("a=1", 1),
        ("a=true", True),
        ("a=gpt-4o", "gpt-4o"),
        ("a=", ""),
        ("a=[1, 2]", [1, 2]),
        ("a=x: y", "x: y"),
    ],
)
def test_parse_override_values(text: str, value: object) -> None:
    assert parse_override(text) == (["a"], value)


def test_apply_overrides_does_not_touch_the_original() -> None:
    original = {"system": {"model": "a"}}
    assert apply_overrides(original, ["system.model=b"]) == {"system": {"model": "b"}}
    assert original == {"system": {"model": "a"}}


def test_config_hash_follows_the_system(project: Project) -> None:
    first = load_config(project.config_path).config_hash()
    assert load_config(project.config_path).config_hash() == first
    assert load_config(project.config_path, ["system.model=other"]).config_hash() != first


def test_cost_from_pricing(project: Project) -> None:
    project.write_config(pricing={"m": {"input": 2.0, "output": 10.0}})
    loaded = load_config(project.config_path)
    assert loaded.cost_of("m", 1_000_000, 100_000) == pytest.approx(3.0)
    assert loaded.cost_of("unpriced", 10, 10) is None
    assert loaded.cost_of("m", None, None) is None
