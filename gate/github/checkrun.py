"""One suite's check in the Action: judged (its ruler the base's on a pull request), told to the
log and the step summary, its outputs, annotations and sticky comment. gate.github.action puts
them together for one config, gate.github.multisuite for several."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.deciding.basetree import inside, repo_root_of, tracked_under
from gate.errors import CasegateError, ConfigError
from gate.files import work_folder
from gate.github.publish import (
    EXIT_INTERRUPTED,
    _append,
    _emit,
    _print_untrusted,
    _rate,
    case_annotations,
    ruler_annotations,
    workspace_path,
    write_outputs,
)
from gate.github.ruling import pull_request_ruling
from gate.logsafe import SUMMARY_LIMIT, cap_annotations, command, fit_summary
from gate.reporting.markup import cell
from gate.suite.select import Selection, select
from gate.suite.shard import Shard

if TYPE_CHECKING:  # the entrypoint reads the inputs and hands them here
    from gate.github.action import Inputs


def check_outputs(outcome: Any, workspace: Path) -> dict[str, str]:
    """The step's outputs; paths relative to the workspace, as the next step sees them."""
    comparison, verdict = outcome.comparison, outcome.verdict
    return {
        "verdict": verdict.decision,
        "pass-rate": _rate(comparison.candidate.pass_rate),
        "baseline-pass-rate": _rate(comparison.baseline.pass_rate),
        "regressions": str(len(comparison.regressions)),
        "fixes": str(len(comparison.fixes)),
        "critical-regressions": str(len(comparison.critical(comparison.regressions))),
        "results-path": workspace_path(str(outcome.results_path), Path.cwd(), workspace),
        "report-path": workspace_path(str(outcome.report_path), Path.cwd(), workspace),
        "viewer-path": workspace_path(str(outcome.viewer_path), Path.cwd(), workspace),
        "verified": str(len(outcome.verified)),
    }


@dataclass(frozen=True, slots=True)
class Judged:
    """One suite's check, told to the log and the step summary; not yet to anyone else."""

    outcome: Any
    annotations: list[Any]


def judge_suite(
    inputs: Inputs,
    loaded: Any,
    cases: Any,
    mode: Any,
    environ: Mapping[str, str],
    event_name: str,
    event: dict[str, Any],
    cwd: Path,
    workspace: Path,
    *,
    summary_limit: int | None = None,
) -> Judged | int:
    """Check one suite (its ruler the base's on a pull request) and log it.

    An int is the step's exit when there is no verdict: a shard's part was written,
    or the run was interrupted.
    """
    from gate.github.api import marker_for
    from gate.pipeline import check as pipeline
    from gate.pipeline.givens import ruled_mode
    from gate.reporting import report

    suite = loaded.config.suite
    out_dir = work_folder(cwd / ".casegate")
    baseline_path = pipeline.baseline_for(
        loaded, Path(inputs.baseline) if inputs.baseline else None
    )
    pull = event.get("pull_request") if event_name == "pull_request" else None
    ruling = pull_request_ruling(inputs, event, environ) if pull is not None else None
    if ruling is not None and inputs.mode is None:
        mode = ruled_mode(loaded, ruling)  # how outputs are made is not the PR's to say
    marker = marker_for(suite)
    shard = Shard.parse(inputs.shard) if inputs.shard else None
    cases = select(cases, Selection(shard=shard))
    results_name = f"{suite}-part-{shard.index}-of-{shard.count}" if shard else f"{suite}-results"
    outcome = pipeline.check(
        loaded,
        cases,
        baseline_path=baseline_path,
        mode=mode,
        out=out_dir / f"{results_name}.json",
        report_path=out_dir / f"{suite}-report.md",
        show_progress=False,
        marker=marker,
        ruling=ruling,
        capture=True,
        reap=True,
        environ=environ,
        selection=Selection(shard=shard),
        parts=downloaded_parts(workspace, inputs.parts) if inputs.parts else (),
        sandbox=inputs.sandbox,  # type: ignore[arg-type]
        verify=inputs.verify,
        # What verification seals is bound to the pull request's head, which the baseline
        # refresh finds again after the merge.
        head=str((pull or {}).get("head", {}).get("sha") or environ.get("GITHUB_SHA") or ""),
        link=run_link(environ),
    )
    for line in outcome.sandbox:
        print(line, flush=True)
    _print_untrusted(outcome.output)
    if outcome.part:
        return part_written(outcome, environ, workspace)
    if outcome.comparison is None or outcome.verdict is None:
        return EXIT_INTERRUPTED
    _print_untrusted(report.text_report(outcome.comparison, outcome.verdict))
    if outcome.history is not None:  # names from the repository: printed as untrusted
        _print_untrusted(outcome.history)
    for warning in outcome.comparison.warnings:  # escaped: a command of its own, never more
        _emit(command("warning", f"stale baseline: {warning}", title="casegate"))
    for warning in outcome.comparison.recording_warnings:
        _emit(command("warning", f"old recordings: {warning}", title="casegate"))
    fitted = outcome.comparison.holdout and outcome.comparison.holdout.fitted_warning()
    if fitted:  # counts only, like everything said about the held-out slice
        _emit(command("warning", fitted, title="casegate: held-out slice"))
    summary = fit_summary(outcome.markdown, summary_limit or SUMMARY_LIMIT)
    _append(environ.get("GITHUB_STEP_SUMMARY"), summary + "\n")
    return Judged(
        outcome,
        ruler_annotations(outcome, cwd, workspace) + case_annotations(outcome, cwd, workspace),
    )


def emit_annotations(found: list[Any]) -> None:
    annotations, left_out = cap_annotations(found)
    for annotation in annotations:
        _emit(annotation.command())
    if left_out:
        print(left_out)


def post_comment(
    inputs: Inputs, environ: Mapping[str, str], pull: Mapping[str, Any], marker: str, body: str
) -> int | None:
    """Write the sticky comment; a warning, never a failure, when it cannot be written.

    Returns the comment's id (None: not written).
    """
    from gate.github.api import CommentError, GitHub

    repository = environ.get("GITHUB_REPOSITORY", "")
    if not inputs.token:
        _emit(command("warning", "no github-token: the pull-request comment was skipped"))
    elif not repository:
        _emit(command("warning", "GITHUB_REPOSITORY is not set: the comment was skipped"))
    else:
        api = environ.get("GITHUB_API_URL") or "https://api.github.com"
        try:
            posted = GitHub(api, inputs.token).upsert_comment(
                repository, int(pull["number"]), marker, body, author=inputs.comment_author
            )
            print(f"pull-request comment {posted.action}: {posted.url or posted.comment_id}")
            return posted.comment_id
        except (CommentError, KeyError, ValueError) as exc:
            _emit(command("warning", f"casegate could not write the PR comment: {exc}"))
    return None


#: the problems a withdrawn comment lists (the log and the step summary hold them all)
PROBLEMS_SHOWN = 10


def could_not_run(problems: Sequence[str], head: object) -> str:
    """The comment that replaces a verdict when the check stopped before judging a commit."""
    sha = isinstance(head, str) and re.fullmatch("[0-9a-f]{7,64}", head)
    commit = f" (`{head[:12]}`)" if sha and isinstance(head, str) else ""
    listed = [f"- {cell(problem, 500)}" for problem in problems[:PROBLEMS_SHOWN]]
    if len(problems) > PROBLEMS_SHOWN:
        listed.append(f"- and {len(problems) - PROBLEMS_SHOWN} more, in the job's log")
    return "\n".join(
        [
            "### ⚠️ casegate: **could not run** — no verdict for this commit",
            "",
            f"The check stopped before it could judge this pull request's latest commit{commit}, "
            "so the verdict this comment showed before no longer stands. What stopped it:",
            "",
            *listed,
            "",
            "Fix it and push again (or re-run the job); this comment then shows the new verdict.",
        ]
    )


def withdraw_verdicts(
    inputs: Inputs,
    environ: Mapping[str, str],
    event_name: str,
    event: Mapping[str, Any],
    problems: Sequence[str],
) -> None:
    """After a failure, casegate's comments on the pull request say that no verdict stands.

    Left as they were, they would show an earlier commit's verdict (a ship, say) beside a
    check that failed on this one. Nothing is posted when there was no comment."""
    from gate.github.api import CommentError, GitHub, marker_for
    from gate.github.rollup import ROLLUP_MARKER

    pull = event.get("pull_request") if event_name == "pull_request" else None
    repository = environ.get("GITHUB_REPOSITORY", "")
    if not isinstance(pull, Mapping) or not (inputs.comment and inputs.token and repository):
        return
    if inputs.command != "check" or inputs.shard or inputs.report_dir:
        return  # a shard comments nothing; a fork's report is posted by another workflow
    head = (pull.get("head") or {}).get("sha") if isinstance(pull.get("head"), Mapping) else None
    api = environ.get("GITHUB_API_URL") or "https://api.github.com"
    folder = Path(environ.get("GITHUB_WORKSPACE") or ".") / inputs.working_directory
    try:
        suites = step_suites(inputs.config, folder, pull)
    except Exception:  # a withdrawal never fails the step: all of them, then
        suites = None
    markers = None if suites is None else {ROLLUP_MARKER, *map(marker_for, suites)}
    try:
        rewritten = GitHub(api, inputs.token).rewrite_ours(
            repository,
            int(pull["number"]),
            could_not_run(problems, head),
            author=inputs.comment_author,
            markers=markers,
        )
    except (CommentError, KeyError, TypeError, ValueError) as exc:
        _emit(command("warning", f"casegate could not mark its PR comment stale: {exc}"))
        return
    if rewritten:
        print(f"pull-request comment updated: no verdict stands ({rewritten} comment(s))")


def _suite_named(text: str) -> str | None:
    from gate.suite.config import SUITE_PATTERN
    from gate.yamlfile import load_yaml

    try:
        document = load_yaml(text)
    except Exception:  # any config that does not parse names no suite
        return None
    suite = document.get("suite") if isinstance(document, dict) else None
    return suite if isinstance(suite, str) and re.fullmatch(SUITE_PATTERN, suite) else None


def step_suites(config: str, folder: Path, pull: Mapping[str, Any]) -> set[str] | None:
    """The suites a one-config step comments for: its config's `suite:` in the pull request's
    checkout and on the base commit (a pull request that renames the suite withdraws both).

    None when either cannot be told (a config that does not parse, several configs, no base
    commit to read): then every casegate comment is withdrawn, failing closed."""
    from gate.deciding.basetree import git
    from gate.github.suites import several
    from gate.limits import MAX_YAML_BYTES, read_limited

    if several(config):
        return None
    path = folder / config
    try:
        if path.is_symlink() or not path.is_file():
            return None
        text = read_limited(path, MAX_YAML_BYTES, "the config", "", ConfigError)
        mine = _suite_named(text.decode("utf-8"))
    except (CasegateError, OSError, UnicodeDecodeError):
        return None
    base = (pull.get("base") or {}).get("sha") if isinstance(pull.get("base"), Mapping) else None
    root = repo_root_of(folder)
    if mine is None or root is None or not isinstance(base, str):
        return None
    if not re.fullmatch("[0-9a-f]{40,64}", base):
        return None
    try:
        relative = path.resolve().relative_to(root.resolve()).as_posix()
        if git("cat-file", "-e", f"{base}^{{commit}}", cwd=root).returncode != 0:
            return None  # the base commit is not fetched: its suite cannot be told
        shown = git("show", f"{base}:{relative}", cwd=root)
    except (CasegateError, ValueError, OSError):
        return None
    if shown.returncode != 0:
        return {mine}  # a config the base does not have: a new suite
    theirs = _suite_named(shown.stdout[:MAX_YAML_BYTES].decode("utf-8", errors="replace"))
    return None if theirs is None else {mine, theirs}


def downloaded_parts(workspace: Path, folder_text: str) -> list[Path]:
    """Every part in the `parts` folder, which only the workflow may have filled.

    The folder lies in the pull request's checkout (a container action sees nothing
    else), so a part the pull request committed there is refused: parts come from
    the shard jobs' artifacts, never from the change they judge.
    """
    folder = inside(workspace, folder_text, "input `parts`")
    if not folder.is_dir():
        raise ConfigError(
            f"input `parts`: {folder_text} is not a folder: download the shard jobs' "
            "artifacts there first (actions/download-artifact)"
        )
    repo_root = repo_root_of(workspace)
    committed = tracked_under(repo_root, folder) if repo_root is not None else []
    if committed:
        raise ConfigError(
            f"input `parts`: {folder_text} holds files the pull request committed "
            f"({committed[0]}): download the parts to a folder that is not in the repository"
        )
    found = sorted(folder.rglob("*.json"))
    links = [path for path in found if path.is_symlink() or not path.is_file()]
    if links:
        raise ConfigError(f"input `parts`: {links[0]} is not a regular file")
    if not found:
        raise ConfigError(
            f"input `parts`: no results file in {folder_text}: did every shard job upload its part?"
        )
    return found


def part_written(outcome: Any, environ: Mapping[str, str], workspace: Path) -> int:
    """A shard job's end: its part for the merge job, and no verdict of any kind."""
    path = workspace_path(str(outcome.results_path), Path.cwd(), workspace)
    shard = outcome.candidate.shard
    print(
        f"casegate: shard {shard['index']}/{shard['count']}: {len(outcome.candidate.cases)} "
        f"case(s) judged into {path}; a part, not a verdict: the job that merges every part "
        "(input `parts`) gates the pull request"
    )
    write_outputs(environ.get("GITHUB_OUTPUT"), {"verdict": "part", "results-path": path})
    return 0


def run_link(environ: Mapping[str, str]) -> str | None:
    """This workflow run's page, whose artifacts hold the HTML viewer (None outside one)."""
    parts = [
        environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    ]
    return "{}/{}/actions/runs/{}".format(*parts) if all(parts) else None
