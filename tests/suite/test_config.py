"""The run configuration: validation with lines, overrides, resolution."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.cli import main
from gate.errors import ConfigError
from gate.suite.config import apply_overrides, load_config, parse_override
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


def line_of(path: Path, key: str) -> int:
    lines = path.read_text().splitlines()
    return next(number for number, line in enumerate(lines, 1) if line.startswith(f"{key}:"))


def prompt_system(module: str, prompt_file: str) -> dict[str, str]:
    return {"name": "x", "provider": "python", "target": f"{module}:f", "prompt_file": prompt_file}


def test_a_config_that_is_not_utf8_is_one_clear_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.config_path.write_bytes(b"suite: caf\xe9\n")
    (problem,) = problems(project.config_path)
    assert problem == (
        f"{project.config_path}: not UTF-8 text (invalid continuation byte at byte 10); "
        "save it as UTF-8"
    )
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "casegate: casegate.yml: not UTF-8 text (invalid continuation byte at byte 10); save it as UTF-8\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfeB\x00e\x00", "is not UTF-8 text (invalid start byte at byte 0)"),
        (b"\x89PNG\r\n\x1a\n\x00\x00", "is not UTF-8 text (invalid start byte at byte 0)"),
        (b"B\x00e\x00 \x00b\x00r\x00i\x00e\x00f\x00", "is a binary file, not a text prompt"),
    ],
)
def test_a_prompt_file_must_be_text(project: Project, content: bytes, message: str) -> None:
    (project.root / "prompts").mkdir()
    (project.root / "prompts" / "p.md").write_bytes(content)
    project.write_config(system=prompt_system(project.module, "prompts/p.md"))
    (problem,) = problems(project.config_path)
    assert problem.startswith(f"{project.config_path}:")
    assert problem.endswith(f"system.prompt_file: 'prompts/p.md' {message}")


def test_a_prompt_file_must_lie_inside_the_repository(project: Project, tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("secret stuff")
    (project.root / "prompts").mkdir()
    (project.root / "prompts" / "link.md").symlink_to(outside)
    cases = {
        str(outside): f"'{outside}' is an absolute path; give a path relative to the config",
        f"../{outside.name}": f"'../{outside.name}' lies outside the repository ({project.root})",
        "prompts/link.md": f"'prompts/link.md' lies outside the repository ({project.root})",
    }
    for name, message in cases.items():
        project.write_config(system=prompt_system(project.module, name))
        (problem,) = problems(project.config_path)
        assert f"system.prompt_file: {message}" in problem, name


def test_the_repository_is_the_nearest_folder_holding_git(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "prompts").mkdir()
    (repository / "prompts" / "shared.md").write_text("Be brief.")
    project = Project(repository / "suites" / "support")
    project.root.mkdir(parents=True)
    project.write_config(system=prompt_system(project.module, "../../prompts/shared.md"))
    loaded = load_config(project.config_path)
    assert loaded.repository == repository.resolve()
    assert loaded.resolved_system()["prompt"] == "Be brief."
    project.write_config(system=prompt_system(project.module, "../../../elsewhere.md"))
    assert "lies outside the repository" in problems(project.config_path)[0]


@pytest.mark.parametrize(
    "suite",
    [
        "a/b",
        "..",
        "../x",
        "has space",
        "-dash",
        ".hidden",
        "support\n",
        "x" * 101,
        "",
        "a-->b",
        "ünï",
    ],
)
def test_unsafe_suite_names_are_refused(project: Project, suite: str) -> None:
    project.write_config(suite=suite)
    (problem,) = problems(project.config_path)
    assert problem.startswith(
        f"{project.config_path}:1: suite: use letters, digits, '.', '_' and '-', at most 100, "
        "starting with a letter or a digit (the name is used in file names and in the "
        "pull-request comment); got "
    )


@pytest.mark.parametrize("suite", ["support", "v1.2_beta-3", "X" * 100])
def test_safe_suite_names_load(project: Project, suite: str) -> None:
    project.write_config(suite=suite)
    assert load_config(project.config_path).config.suite == suite


@pytest.mark.parametrize(
    ("value", "shown"), [(0, "0"), (-1, "-1"), (1.5, "1.5"), (True, "True"), ("many", "'many'")]
)
def test_samples_is_a_whole_number_or_auto(project: Project, value: object, shown: str) -> None:
    path = project.write_config(samples=value)
    assert problems(path) == [
        f"{path}:{line_of(path, 'samples')}: samples: must be a whole number from 1 to 1000, "
        f"or `auto`; got {shown}"
    ]
    project.write_config(samples="auto")
    assert load_config(project.config_path).config.samples == "auto"
    assert load_config(project.config_path, ["samples=3"]).config.samples == 3


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan"), float("inf")])
def test_min_pass_rate_stays_between_0_and_1(project: Project, value: float) -> None:
    path = project.write_config(min_pass_rate=value)
    (problem,) = problems(path)
    assert problem.startswith(f"{path}:{line_of(path, 'min_pass_rate')}: min_pass_rate: Input")


def test_deep_nesting_and_alias_bombs_in_the_config_are_refused(project: Project) -> None:
    text = project.config_path.read_text()
    project.config_path.write_text(text + "pricing: " + "[" * 5000 + "]" * 5000 + "\n")
    (problem,) = problems(project.config_path)
    assert problem.startswith(f"{project.config_path}:") and "nesting depth" in problem
    project.config_path.write_text(text + "pricing: " + "[" * 120 + "]" * 120 + "\n")
    assert problems(project.config_path) == [
        f"{project.config_path}:{len(text.splitlines()) + 1}: nested more than 100 levels deep"
    ]
    bomb = ["x0: &x0 [a, a, a, a, a, a, a, a, a, a]"]
    bomb += [f"x{n}: &x{n} [{', '.join([f'*x{n - 1}'] * 10)}]" for n in range(1, 9)]
    project.config_path.write_text(text + "\n".join(bomb) + "\n")
    (problem,) = problems(project.config_path)
    assert "aliases expand this document by more than 1,000,000 nodes" in problem


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ("{{ question + 1 }}", "cases/c.yaml:1: case 'a': system.message failed (TypeError: "),
        ("{{ question | int(1, 2, 3, 4) }}", "cases/c.yaml:1: case 'a': system.message failed"),
        ("{{ " + "(" * 3000 + "1" + ")" * 3000 + " }}", "system.message: the template nests"),
        # A pull request can edit the template: it is sandboxed.
        (
            "{{ ''.__class__.__mro__[1].__subclasses__() }}",
            "cases/c.yaml:1: case 'a': system.message failed (SecurityError: access to attribute",
        ),
        ("{{ range(10**9) | list | length }}", "cases/c.yaml:1: case 'a': system.message failed"),
    ],
)
def test_a_message_template_that_fails_is_one_line_not_a_traceback(
    project: Project, capsys: pytest.CaptureFixture[str], message: str, problem: str
) -> None:
    project.write_config(
        system={
            "name": "x",
            "provider": "python",
            "target": f"{project.module}:answer",
            "message": message,
        }
    )
    project.write_cases(
        [{"id": "a", "input": {"question": "hi"}, "expect": {"contains": "x"}}], "c.yaml"
    )
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"casegate: {problem}") and err.count("\n") == 1


def test_a_bad_override_is_blamed_on_the_override(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([{"id": "a", "input": {"question": "hi"}, "expect": {"contains": "x"}}])
    assert main(["validate", "--set", "gate.tolerance=5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("casegate: --set gate.tolerance=5: gate.tolerance: ")
    assert "casegate.yml" not in err


@pytest.mark.parametrize(
    ("write", "says"),
    [
        ("baseline", "this is a casegate results file (a run or a baseline), not a config"),
        ("case", "this is a case file, not a config"),
    ],
)
def test_the_wrong_kind_of_file_as_config_says_so(
    project: Project, capsys: pytest.CaptureFixture[str], write: str, says: str
) -> None:
    project.write_cases([{"id": "a", "input": {"question": "hi"}, "expect": {"contains": "hi"}}])
    if write == "baseline":
        assert main(["baseline", "--mode", "live", "--quiet"]) == 0
        wrong = "baselines/demo.json"
    else:
        wrong = "cases/cases.yaml"
    capsys.readouterr()
    assert main(["validate", "-c", wrong]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_a_case_folder_holding_the_config_skips_it(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([{"id": "a", "input": {"question": "hi"}, "expect": {"contains": "hi"}}])
    project.write_config(cases=".")
    assert main(["validate"]) == 0
    assert "ok: 1 cases" in capsys.readouterr().out


def test_privacy_defaults_to_no_keys_and_leaves_the_hash_as_it_was(project: Project) -> None:
    before = load_config(project.config_path)
    assert before.config.privacy.redact_keys == []
    # Unset, the section is left out of the written config, so no baseline goes stale.
    assert "privacy" not in before.as_dict()
    project.write_config(privacy={"redact_keys": ["Authorization", "ssn"]})
    after = load_config(project.config_path)
    assert after.config.privacy.redact_keys == ["Authorization", "ssn"]
    assert after.as_dict()["privacy"] == {"redact_keys": ["Authorization", "ssn"]}
    assert after.config_hash() != before.config_hash()


def test_privacy_refuses_unknown_keys_and_bad_values(project: Project) -> None:
    project.write_config(privacy={"redact_key": ["ssn"]})
    assert (
        "unknown key 'privacy.redact_key' (did you mean 'redact_keys'?)"
        in (problems(project.config_path)[0])
    )
    project.write_config(privacy={"redact_keys": "ssn"})
    assert "give a list of key names" in problems(project.config_path)[0]
    project.write_config(privacy={"redact_keys": [""]})
    assert "privacy.redact_keys.0" in problems(project.config_path)[0]


def test_every_section_of_fixed_keys_suggests_the_key_meant(project: Project) -> None:
    # The hint walks the config's own model, so a section added later gets it too.
    project.write_config(drift={"max_flip": 1})
    [problem] = problems(project.config_path)
    assert "unknown key 'drift.max_flip' (did you mean 'max_flips'?)" in problem
    project.write_config(holdout={"path": "h", "keyenv": "K"})
    assert "(did you mean 'key_env'?)" in problems(project.config_path)[0]


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("promt_file", "prompt_file"),
        ("targte", "target"),
        ("mesage", "message"),
        ("verison", "version"),  # the key the docs say to bump: a typo would key nothing new
    ],
)
def test_a_near_miss_of_a_system_key_is_warned_not_passed_silently(
    project: Project, capsys: pytest.CaptureFixture[str], key: str, meant: str
) -> None:
    # python and command hand unknown keys to the user's code: a typo would pass unseen.
    project.write_config(
        system={
            "name": "echo",
            "provider": "python",
            "target": f"{project.module}:answer",
            key: "x",
        }
    )
    loaded = load_config(project.config_path)
    (warning,) = loaded.warnings
    assert warning.endswith(
        f"system.{key}: not a key casegate knows, so it is passed to the system as it is; "
        f"did you mean {meant!r}?"
    )
    assert warning.startswith(f"{project.config_path}:")
    project.write_cases([{"id": "one", "input": {"question": "hi"}, "expect": {"contains": "hi"}}])
    assert main(["validate"]) == 0
    assert f"system.{key}" in capsys.readouterr().err


def test_a_parameter_of_the_users_own_passes_without_a_word(project: Project) -> None:
    project.write_config(
        system={
            "name": "echo",
            "provider": "python",
            "target": f"{project.module}:answer",
            "region": "eu-west-1",
            "retries": 3,
        }
    )
    assert load_config(project.config_path).warnings == []
