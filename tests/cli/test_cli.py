"""The command line end to end: exit codes, one-line errors, the shipped example."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gate.cli import main
from tests.conftest import Project, case

REPO = Path(__file__).resolve().parents[2]


def casegate(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=120,
    )


def test_version_imports_no_sdk() -> None:
    code = (
        "import sys\nfrom gate.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in ('openai', 'anthropic', 'pydantic', 'jsonschema') if m in sys.modules))"
    )
    finished = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert finished.stdout.splitlines() == ["casegate 0.1.0", "[]"]


def test_run_exit_0_even_with_failures(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("ok", "hi", contains="hi"), case("bad", "hi", contains="bye")])
    assert main(["run", "--mode", "live", "--out", "r.json"]) == 0
    out = capsys.readouterr().out
    assert "1/2 passed (50.0%), 1 failed, 0 errors" in out
    assert 'FAIL  bad: contains: missing "bye"' in out
    assert json.loads((project.root / "r.json").read_text())["summary"]["failed"] == 1


def test_case_file_error_is_one_line_and_exit_2(project: Project) -> None:
    project.write_text("cases/bad.yaml", "- id: a\n  input: {}\n  expect:\n    max_wrds: 3\n")
    finished = casegate("validate", cwd=project.root)
    assert finished.returncode == 2
    assert (
        finished.stderr
        == "casegate: cases/bad.yaml:4: case 'a': unknown check 'max_wrds' in expect (did you mean 'max_words'?)\n"
    )
    assert finished.stdout == ""


def test_missing_recordings_exit_2_and_name_cases(project: Project) -> None:
    project.write_cases([case("never-recorded", "hi", contains="hi")])
    finished = casegate("run", cwd=project.root)
    assert finished.returncode == 2
    assert "never-recorded" in finished.stderr
    assert "casegate record" in finished.stderr
    assert "Traceback" not in finished.stderr


def test_record_then_run_with_set(project: Project, capsys: pytest.CaptureFixture[str]) -> None:
    project.write_cases([case("styled", "hi", contains="loud")])
    assert main(["record", "--set", "system.style=loud", "--out", "rec.json", "--quiet"]) == 0
    assert main(["run", "--set", "system.style=loud", "--out", "rep.json"]) == 0
    data = json.loads((project.root / "rep.json").read_text())
    assert data["overrides"] == ["system.style=loud"]
    assert data["cases"][0]["status"] == "pass"
    assert main(["run", "--out", "rep.json"]) == 2  # without the override it was never recorded


def test_usage_errors_exit_2(project: Project) -> None:
    assert casegate("run", "--mode", "psychic", cwd=project.root).returncode == 2
    assert casegate("nonsense", cwd=project.root).returncode == 2
    finished = casegate("run", "--set", "nokey", cwd=project.root)
    assert finished.returncode == 2
    assert finished.stderr.startswith("casegate: --set 'nokey': expected key.path=value")


@pytest.mark.parametrize("command", [("validate",), ("run", "--mode", "live")])
def test_a_suite_without_a_case_is_an_error_not_an_empty_success(
    project: Project, command: tuple[str, ...]
) -> None:
    project.write_config()
    project.write_cases([])
    finished = casegate(*command, cwd=project.root)
    assert finished.returncode == 2
    assert finished.stderr == (
        "casegate: casegate.yml: cases: the 1 case file(s) `cases` names hold no case: add one "
        "(`casegate init` writes an example), or point `cases:` at your case files\n"
    )
    assert "ok: 0 cases" not in finished.stdout and "0/0 passed" not in finished.stdout


def test_validate_renders_the_message_template(project: Project) -> None:
    project.write_config(
        system={
            "name": "x",
            "provider": "python",
            "target": f"{project.module}:answer",
            "message": "Q: {{ question }} ({{ locale }})",
        }
    )
    project.write_cases([case("needs-locale", "hi", contains="x")])
    finished = casegate("validate", cwd=project.root)
    assert finished.returncode == 2
    assert (
        "case 'needs-locale': system.message uses a variable the input lacks ('locale' is undefined)"
        in finished.stderr
    )


def test_shipped_example_suite_replays_offline(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "",
        "ANTHROPIC_API_KEY": "",
        "NO_PROXY": "",
        "HTTPS_PROXY": "http://127.0.0.1:9",
    }
    out = tmp_path / "example.json"
    finished = casegate("run", "--out", str(out), cwd=REPO, env=env)
    assert finished.returncode == 0, finished.stderr
    data = json.loads(out.read_text())
    assert 30 <= data["summary"]["cases"] <= 50
    assert data["summary"]["errors"] == 0
    assert any(c["critical"] for c in data["cases"])
    assert any(c.get("note") for c in data["cases"])


def test_gate_and_compare_exit_codes(project: Project) -> None:
    project.write_cases(
        [
            case("a", "hi", contains="plain", fields_={"critical": True}),
            case("b", "hi", contains="loud"),
        ]
    )
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    baseline = project.root / "baselines" / "demo.json"
    assert json.loads(baseline.read_text())["summary"]["passed"] == 1
    assert (
        main(
            ["run", "--mode", "live", "--set", "system.style=loud", "--out", "cand.json", "--quiet"]
        )
        == 0
    )
    # Pass rate is equal (1/2 → 1/2) but the critical case regressed: block.
    assert main(["gate", str(baseline), "cand.json"]) == 1
    assert main(["gate", str(baseline), str(baseline)]) == 0
    assert (
        main(
            [
                "compare",
                str(baseline),
                "cand.json",
                "--format",
                "json",
                "--out",
                "cmp.json",
                "--junit",
                "j.xml",
            ]
        )
        == 0
    )
    data = json.loads((project.root / "cmp.json").read_text())
    assert (data["verdict"], data["regressions"], data["fixes"]) == ("block", ["a"], ["b"])
    assert (project.root / "j.xml").exists()
    assert main(["gate", str(baseline), "missing.json"]) == 2


def test_gate_refuses_different_suites(project: Project, tmp_path: Path) -> None:
    project.write_cases([case("a", "hi", contains="plain")])
    assert main(["run", "--mode", "live", "--out", "one.json", "--quiet"]) == 0
    other = json.loads((project.root / "one.json").read_text())
    other["suite"] = "other"
    (project.root / "two.json").write_text(json.dumps(other))
    finished = casegate("gate", "one.json", "two.json", cwd=project.root)
    assert finished.returncode == 2
    assert "different suites" in finished.stderr


def test_check_end_to_end_on_the_example_suite(tmp_path: Path) -> None:
    """The committed candidate raises the pass rate but regresses critical cases: block."""
    out, report = tmp_path / "results.json", tmp_path / "report.md"
    finished = casegate(
        "check",
        "-c",
        "casegate.candidate.yml",
        "--baseline",
        "baselines/support.json",
        "--out",
        str(out),
        "--report",
        str(report),
        "--junit",
        str(tmp_path / "j.xml"),
        cwd=REPO,
    )
    assert finished.returncode == 1, finished.stderr
    # The HTML viewer beside the markdown report, with the same verdict.
    page = report.with_suffix(".html").read_text()
    assert '"decision":"block"' in page and "complaint-no-invented-discount" in page
    baseline = json.loads((REPO / "baselines" / "support.json").read_text())
    candidate = json.loads(out.read_text())
    assert candidate["summary"]["pass_rate"] >= baseline["summary"]["pass_rate"]
    assert finished.stdout.startswith("BLOCK: support")
    markdown = report.read_text()
    # samples: auto: a critical regression is a significant drop, not one failed sample
    assert "3 critical case(s) dropped significantly (one-sided Boschloo exact test" in markdown
    assert "| 🔴 critical |" in markdown


def test_check_ships_the_baseline_system_against_itself(tmp_path: Path) -> None:
    finished = casegate(
        "check", "--out", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.md"), cwd=REPO
    )
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert finished.stdout.startswith("SHIP: support")


def test_an_unwritable_report_is_exit_2_not_block(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("ok", "hi", contains="hi")])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    (project.root / "reports").write_text("a file where a folder should be")
    code = main(["check", "--mode", "live", "--quiet", "--report", "reports/r.md"])
    assert code == 2
    assert "reports/r.md" in capsys.readouterr().err


def test_gate_into_a_closed_pipe_exits_quietly_with_its_verdict(tmp_path: Path) -> None:
    candidate = tmp_path / "candidate.json"
    run = casegate(
        "run", "-c", "casegate.candidate.yml", "--out", str(candidate), "--quiet", cwd=REPO
    )
    assert run.returncode == 0, run.stderr
    script = (
        f'"{sys.executable}" -m gate gate baselines/support.json "{candidate}" | head -c 0; '
        "exit ${PIPESTATUS[0]}"
    )
    finished = subprocess.run(
        ["bash", "-c", script], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert finished.returncode == 1  # block, as without the pipe
    assert finished.stdout == ""
    assert finished.stderr == ""


def test_show_and_verbose_are_commands(tmp_path: Path) -> None:
    candidate = tmp_path / "c.json"
    run = casegate(
        "run", "-c", "casegate.candidate.yml", "--out", str(candidate), "--quiet", "-v", cwd=REPO
    )
    assert run.returncode == 0
    assert "case complaint-no-invented-discount: FAIL (critical)" in run.stdout
    shown = casegate(
        "show",
        "shipping-no-promised-date",
        "--results",
        str(candidate),
        "-c",
        "casegate.candidate.yml",
        cwd=REPO,
    )
    assert shown.returncode == 0, shown.stderr
    assert "{+Your order will arrive by Friday. +}" in shown.stdout


def test_a_yaml_mistake_prints_its_line_and_a_caret_below_the_one_line_problem(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_text("cases/bad.yaml", "- id: a\n  input:\n\tquestion: hi\n")
    assert main(["validate"]) == 2
    err = capsys.readouterr().err.splitlines()
    at = next(i for i, line in enumerate(err) if "bad.yaml:3: invalid YAML" in line)
    assert "(a tab: YAML indents with spaces only)" in err[at]
    assert err[at + 1 : at + 3] == ["  | \\tquestion: hi", "  | ^"]


def test_a_reader_that_leaves_early_gets_no_traceback(project: Project) -> None:
    # `casegate list | head -1`: the pipe closes while casegate still writes.
    project.write_cases([case(f"c{i:04d}", "q" * 50, contains="q") for i in range(3000)])
    reader = subprocess.Popen(
        [sys.executable, "-m", "gate", "list"],
        cwd=project.root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.readline()
    reader.stdout.close()  # the reader leaves
    err = reader.stderr.read().decode()
    assert reader.wait(timeout=120) == 141
    assert "Traceback" not in err
