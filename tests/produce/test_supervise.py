"""Exit 0 means a complete run was judged: user code cannot end `check` with a verdict."""

from __future__ import annotations

import json
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from gate.produce.supervise import WITHHELD, child_environment
from tests.conftest import Project, case

CASES = [case("a", "hello", contains="hello"), case("b", "world", contains="world")]


def baseline_of(project: Project) -> None:
    project.write_cases(CASES)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0


EXITS = {
    "sys.exit(0)": "import sys; sys.exit(0)",
    "sys.exit(3)": "import sys; sys.exit(3)",
    "os._exit(0)": "import os; os._exit(0)",
    "SystemExit()": "raise SystemExit",
}


@pytest.mark.parametrize("how", sorted(EXITS))
def test_a_system_that_ends_the_process_gets_no_verdict(
    project: Project, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    baseline_of(project)
    project.write_system(
        "def answer(case_input, system):\n"
        f"    if case_input['question'] == 'world':\n        {EXITS[how]}\n"
        "    return case_input['question']\n"
    )
    code = main(["check", "--mode", "live", "--quiet"])
    out, err = capsys.readouterr()
    if how == "os._exit(0)":
        assert code == 2 and "before it finished judging every case" in err
    else:  # caught: that case is an error, and an error is never a pass
        results = json.loads((project.root / ".casegate" / "demo-results.json").read_text())
        reasons = {c["id"]: c["reason"] for c in results["cases"] if c["status"] == "error"}
        assert code == 1 and "errors: b" in out
        assert reasons["b"].startswith("the system called sys.exit(")
    assert "Traceback" not in err


@pytest.mark.parametrize("how", sorted(EXITS))
def test_a_custom_check_that_ends_the_process_gets_no_verdict(
    project: Project, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    module = f"verdicts_{project.module}"  # one name per test: a process imports it once
    project.write_text(f"{module}.py", "def ok(text, case):\n    return True\n")
    project.write_cases([{**CASES[0], "expect": {"check": f"{module}:ok"}}, CASES[1]])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    project.write_text(f"{module}.py", f"def ok(text, case):\n    {EXITS[how]}\n")
    code = main(["check", "--mode", "live", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "nothing was gated" in err or "could not" in err


def test_the_console_script_imports_a_check_beside_the_config(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The config's folder is not the working directory here.
    module = f"verdicts_{project.module}"
    project.write_text(f"{module}.py", "def ok(text, case):\n    return 'hello' in text\n")
    project.write_cases([{**CASES[0], "expect": {"check": f"{module}:ok"}}])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    console_script = Path(sys.executable).parent / "casegate"
    finished = subprocess.run(
        [str(console_script), "run", "-c", str(project.config_path), "--mode", "live", "--quiet"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    results = json.loads((elsewhere / ".casegate" / "demo-results.json").read_text())
    assert results["cases"][0]["status"] == "pass"


def test_the_child_never_gets_the_token_or_the_step_files() -> None:
    environ = {key: "x" for key in WITHHELD} | {"OPENAI_API_KEY": "k", "PATH": "/bin"}
    assert child_environment(environ) == {"OPENAI_API_KEY": "k", "PATH": "/bin"}


def test_an_interrupted_or_empty_results_file_is_never_gated(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline_of(project)
    baseline = json.loads((project.root / "baselines" / "demo.json").read_text())
    partial = {**baseline, "interrupted": True, "cases": baseline["cases"][:1]}
    (project.root / "partial.json").write_text(json.dumps(partial))
    empty = {**baseline, "cases": []}
    (project.root / "empty.json").write_text(json.dumps(empty))
    for command in ("gate", "compare"):
        assert main([command, "baselines/demo.json", "partial.json"]) == 2
        assert "interrupted after 1 case(s)" in capsys.readouterr().err
        assert main([command, "partial.json", "baselines/demo.json"]) == 2
        assert "the baseline run was interrupted" in capsys.readouterr().err
        assert main([command, "baselines/demo.json", "empty.json"]) == 2
        assert "judged no case" in capsys.readouterr().err


def test_a_baseline_with_errored_cases_is_refused(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([*CASES, case("down", "boom", contains="x")])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "1 case(s) in error (down)" in err and "--allow-errors" in err
    assert not (project.root / "baselines" / "demo.json").exists()
    assert main(["baseline", "--mode", "live", "--quiet", "--allow-errors"]) == 0


def test_the_suites_code_runs_from_its_sources_never_a_committed_pyc(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # A reviewer reads helper.py; a `.pyc` beside it, "unchecked" so Python would trust
    # it over the source, and a bare `.pyc` with no source at all, must not be what runs.
    baseline_of(project)
    helper = f"helper_{project.module}"
    sideline = f"sideline_{project.module}"
    cached = project.root / "__pycache__" / f"{helper}.{sys.implementation.cache_tag}.pyc"
    project.write_text(f"{helper}.py", "def shout(text):\n    return 'forged'\n")
    py_compile.compile(
        str(project.root / f"{helper}.py"),
        cfile=str(cached),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    project.write_text(f"{helper}.py", "def shout(text):\n    return text\n")
    project.write_text(f"{sideline}.py", "WORD = 'forged'\n")
    py_compile.compile(
        str(project.root / f"{sideline}.py"), cfile=str(project.root / f"{sideline}.pyc")
    )
    (project.root / f"{sideline}.py").unlink()
    project.write_system(
        f"import {helper}\n"
        "def answer(case_input, system):\n"
        "    try:\n"
        f"        import {sideline}\n"
        "        return 'the bare pyc ran'\n"
        "    except ImportError:\n"
        f"        return {helper}.shout(case_input['question'])\n"
    )
    assert main(["check", "--mode", "live", "--quiet"]) == 0, capsys.readouterr().err
    results = json.loads((project.root / ".casegate" / "demo-results.json").read_text())
    assert [item["outputs"][0]["text"] for item in results["cases"]] == ["hello", "world"]
