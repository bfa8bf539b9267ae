"""The GitHub Action's entrypoint: `python -m gate.action`, inside the action's container.

It reads the Actions runtime contract (INPUT_* with hyphens kept, GITHUB_*),
runs `check` (or `baseline` after a merge), writes the markdown report to the
step summary, sets the step's outputs, annotates the case files of regressed
and errored cases, keeps one sticky comment per suite on the pull request, and
exits per `fail-on`. A comment that cannot be written is a warning: it never
turns a block into a pass or a pass into a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.errors import CasegateError, ConfigError

PULL_REQUEST_EVENTS = ("pull_request", "pull_request_target")
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130
TRUE = ("true", "True", "TRUE")
FALSE = ("false", "False", "FALSE")


# --- workflow commands -----------------------------------------------------------


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: Any) -> str:
    """A workflow command line, e.g. `::error file=a.yaml,line=3::why`."""
    props = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{name}{' ' + props if props else ''}::{_escape_data(message)}"


def _emit(line: str) -> None:
    print(line, flush=True)


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as stream:
            stream.write(text)


def write_outputs(path: str | None, outputs: Mapping[str, str]) -> None:
    """Append outputs with the delimiter syntax, which is safe for any value."""
    chunks = []
    for name, value in outputs.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        chunks.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    _append(path, "".join(chunks))


# --- inputs and environment --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Inputs:
    command: str
    config: str
    mode: str | None
    baseline: str | None
    overrides: list[str]
    comment: bool
    token: str
    fail_on: str
    working_directory: str


def read_input(environ: Mapping[str, str], name: str, default: str = "") -> str:
    """`INPUT_<NAME>` as the runner sets it (hyphens kept), tolerating underscores."""
    key = f"INPUT_{name.upper()}"
    value = environ.get(key)
    if value is None:
        value = environ.get(key.replace("-", "_"))
    value = (value or "").strip()
    return value or default


def _boolean(name: str, value: str) -> bool:
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise ConfigError(f"input `{name}` must be true or false, not {value!r}")


def read_inputs(environ: Mapping[str, str]) -> Inputs:
    command_name = read_input(environ, "command", "check")
    if command_name not in ("check", "baseline"):
        raise ConfigError(f"input `command` must be check or baseline, not {command_name!r}")
    fail_on = read_input(environ, "fail-on", "block")
    if fail_on not in ("block", "never"):
        raise ConfigError(f"input `fail-on` must be block or never, not {fail_on!r}")
    mode = read_input(environ, "mode") or None
    if mode is not None and mode not in ("replay", "record", "live"):
        raise ConfigError(f"input `mode` must be replay, record or live, not {mode!r}")
    overrides = [
        line.strip()
        for line in read_input(environ, "set").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    return Inputs(
        command=command_name,
        config=read_input(environ, "config", "casegate.yml"),
        mode=mode,
        baseline=read_input(environ, "baseline") or None,
        overrides=overrides,
        comment=_boolean("comment", read_input(environ, "comment", "true")),
        token=read_input(environ, "github-token"),
        fail_on=fail_on,
        working_directory=read_input(environ, "working-directory", "."),
    )


def read_event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path}: the event payload is not JSON ({exc})") from None
    return event if isinstance(event, dict) else {}


# --- git: the baseline a pull request cannot edit ------------------------------------


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)  # noqa: S607


def mark_safe_directory(workspace: Path) -> None:
    """The workspace is owned by the runner's user, not the container's: tell git it is fine."""
    try:
        _git("config", "--global", "--add", "safe.directory", str(workspace), cwd=workspace)
    except OSError:
        _emit(command("warning", "git is not available; a PR's baseline edit cannot be checked"))


def trusted_baseline(
    baseline: Path, base_sha: str, repo_root: Path, scratch: Path
) -> tuple[Path, str | None]:
    """The baseline as of the base commit when the pull request changed it.

    Returns the path to use and a note for the report (None when untouched).
    """
    if _git("cat-file", "-e", f"{base_sha}^{{commit}}", cwd=repo_root).returncode != 0:
        raise ConfigError(
            f"the pull request's base commit {base_sha[:12]} is not in this checkout, so the "
            "baseline cannot be read from it: set `fetch-depth: 0` on actions/checkout"
        )
    relative = baseline.resolve().relative_to(repo_root.resolve()).as_posix()
    shown = _git("show", f"{base_sha}:{relative}", cwd=repo_root)
    if shown.returncode != 0:
        return baseline, (
            f"{relative} does not exist on the base commit {base_sha[:7]}: this pull request's "
            "own baseline was used — review it as part of the change"
        )
    if baseline.is_file() and baseline.read_bytes() == shown.stdout:
        return baseline, None
    trusted = scratch / f"baseline-{base_sha[:12]}.json"
    trusted.write_bytes(shown.stdout)
    return trusted, (
        f"this pull request edits {relative}; it was judged against the baseline of the base "
        f"commit {base_sha[:7]} instead (a pull request cannot move its own goalposts)"
    )


def repo_root_of(path: Path) -> Path | None:
    found = _git("rev-parse", "--show-toplevel", cwd=path)
    return Path(found.stdout.decode().strip()) if found.returncode == 0 else None


# --- annotations and outputs ----------------------------------------------------------


def workspace_path(path_text: str, cwd: Path, workspace: Path) -> str:
    """A path as annotations need it: relative to the repository's root."""
    try:
        return (cwd / path_text).resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return path_text


def case_annotations(outcome: Any, cwd: Path, workspace: Path) -> list[str]:
    """Errors on critical regressions and errored critical cases; warnings for the rest."""
    comparison = outcome.comparison
    lines = []
    cases = comparison.candidate_cases
    for case_id, kind in [(i, "regressed") for i in comparison.regressions] + [
        (i, "errored") for i in comparison.errors
    ]:
        case = cases[case_id]
        file, line = None, None
        if case.source:
            path_text, _, line_text = case.source.rpartition(":")
            file = workspace_path(path_text, cwd, workspace)
            line = int(line_text) if line_text.isdigit() else None
        level = "error" if case.critical else "warning"
        title = f"casegate: {'critical ' if case.critical else ''}case {case_id} {kind}"
        lines.append(command(level, case.reason or kind, file=file, line=line, title=title))
    return lines


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def check_outputs(outcome: Any) -> dict[str, str]:
    comparison, verdict = outcome.comparison, outcome.verdict
    return {
        "verdict": verdict.decision,
        "pass-rate": _rate(comparison.candidate.pass_rate),
        "baseline-pass-rate": _rate(comparison.baseline.pass_rate),
        "regressions": str(len(comparison.regressions)),
        "fixes": str(len(comparison.fixes)),
        "critical-regressions": str(len(comparison.critical(comparison.regressions))),
        "results-path": str(outcome.results_path),
        "report-path": str(outcome.report_path),
    }


# --- the run --------------------------------------------------------------------------


def _problem_lines(problems: Sequence[str], workspace: Path) -> list[str]:
    """`path:line: message` problems become annotations on that file and line."""
    lines = []
    for problem in problems:
        head, sep, message = problem.partition(": ")
        path, _, line = head.rpartition(":")
        if sep and path and line.isdigit():
            file = workspace_path(path, Path.cwd(), workspace)
            lines.append(command("error", message, file=file, line=int(line)))
        else:
            lines.append(command("error", problem))
    return lines


def run(environ: Mapping[str, str]) -> int:
    from gate.cli import load_project

    inputs = read_inputs(environ)
    workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
    mark_safe_directory(workspace)
    cwd = (workspace / inputs.working_directory).resolve()
    if not cwd.is_dir():
        raise ConfigError(f"input `working-directory`: {inputs.working_directory} does not exist")
    os.chdir(cwd)
    event_name = environ.get("GITHUB_EVENT_NAME", "")
    event = read_event(environ)
    loaded, cases = load_project(Path(inputs.config), inputs.overrides)
    mode = inputs.mode or loaded.config.mode
    if inputs.command == "baseline":
        return run_baseline(loaded, cases, mode, environ)
    return run_check(inputs, loaded, cases, mode, environ, event_name, event, cwd, workspace)


def run_baseline(loaded: Any, cases: Any, mode: Any, environ: Mapping[str, str]) -> int:
    from gate.results import write_results
    from gate.run import execute
    from gate.terminal import run_summary

    path = loaded.baseline_path
    if path is None:
        raise ConfigError(f"{loaded.path}: set `baseline:` to the file the baseline is written to")
    results = execute(loaded, cases, mode, show_progress=False)
    if results.interrupted:
        return EXIT_INTERRUPTED
    write_results(results, path)
    print(run_summary(results))
    write_outputs(
        environ.get("GITHUB_OUTPUT"),
        {"pass-rate": _rate(results.summary.pass_rate), "results-path": str(path)},
    )
    _append(
        environ.get("GITHUB_STEP_SUMMARY"),
        f"### casegate: baseline refreshed — {loaded.config.suite}\n\n"
        f"{results.summary.passed}/{results.summary.cases} cases pass; written to "
        f"`{path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}`.\n",
    )
    return 0


def run_check(
    inputs: Inputs,
    loaded: Any,
    cases: Any,
    mode: Any,
    environ: Mapping[str, str],
    event_name: str,
    event: dict[str, Any],
    cwd: Path,
    workspace: Path,
) -> int:
    from gate import ci, report
    from gate.github import CommentError, GitHub, marker_for

    suite = loaded.config.suite
    out_dir = cwd / ".casegate"
    out_dir.mkdir(exist_ok=True)
    baseline_path = ci.baseline_for(loaded, Path(inputs.baseline) if inputs.baseline else None)
    notes = []
    pull = event.get("pull_request") if event_name in PULL_REQUEST_EVENTS else None
    base_sha = (pull or {}).get("base", {}).get("sha")
    if base_sha:
        root = repo_root_of(cwd)
        if root is None:
            raise ConfigError("the workspace is not a git checkout: run actions/checkout first")
        scratch = Path(tempfile.mkdtemp(prefix="casegate-", dir=environ.get("RUNNER_TEMP")))
        baseline_path, note = trusted_baseline(baseline_path.resolve(), base_sha, root, scratch)
        if note:
            notes.append(note)
            _emit(command("warning", note))
    marker = marker_for(suite)
    outcome = ci.check(
        loaded,
        cases,
        baseline_path=baseline_path,
        mode=mode,
        out=out_dir / f"{suite}-results.json",
        report_path=out_dir / f"{suite}-report.md",
        show_progress=False,
        marker=marker,
        notes=notes,
    )
    if outcome.comparison is None or outcome.verdict is None:
        return EXIT_INTERRUPTED
    print(report.text_report(outcome.comparison, outcome.verdict))
    _append(environ.get("GITHUB_STEP_SUMMARY"), outcome.markdown + "\n")
    write_outputs(environ.get("GITHUB_OUTPUT"), check_outputs(outcome))
    for line in case_annotations(outcome, cwd, workspace):
        _emit(line)

    if pull and inputs.comment:
        repository = environ.get("GITHUB_REPOSITORY", "")
        if not inputs.token:
            _emit(command("warning", "no github-token: the pull-request comment was skipped"))
        elif not repository:
            _emit(command("warning", "GITHUB_REPOSITORY is not set: the comment was skipped"))
        else:
            api = environ.get("GITHUB_API_URL") or "https://api.github.com"
            try:
                posted = GitHub(api, inputs.token).upsert_comment(
                    repository, int(pull["number"]), marker, outcome.markdown
                )
                print(f"pull-request comment {posted.action}: {posted.url or posted.comment_id}")
            except (CommentError, KeyError, ValueError) as exc:
                _emit(command("warning", f"casegate could not write the PR comment: {exc}"))
    if inputs.fail_on == "never":
        return 0
    return int(outcome.verdict.exit_code)


def main(argv: Sequence[str] | None = None) -> int:
    environ = dict(os.environ)
    try:
        return run(environ)
    except CasegateError as exc:
        from gate.report import cell

        workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
        for line in _problem_lines(exc.problems, workspace):
            _emit(line)
        _append(
            environ.get("GITHUB_STEP_SUMMARY"),
            "### casegate could not run\n\n"
            + "\n".join(f"- {cell(problem, 500)}" for problem in exc.problems)
            + "\n",
        )
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
