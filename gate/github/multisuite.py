"""The Action with several configs: every suite checked, one roll-up comment, the strictest exit.

Which configs: gate.github.suites (on a pull request, the base's too). Each suite is
checked as a single config is (gate.github.checkrun.judge_suite: its ruler the base's),
and told to the log, the step summary and annotations as today. Then one comment
(gate.github.rollup) replaces the comments the suites had of their own, and the exit
is the strictest verdict's: 2 when any suite could not be judged, whatever `fail-on`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.deciding.basetree import (
    extract_tree,
    files_in_commit,
    inside,
    pull_request_base,
    repo_root_of,
)
from gate.errors import CasegateError, ConfigError
from gate.files import private_scratch, work_folder, write_text
from gate.github.checkrun import check_outputs, emit_annotations, judge_suite, post_comment
from gate.github.publish import _append, _emit, _problem_lines, workspace_path, write_outputs
from gate.github.rollup import (
    EXIT_CODES,
    ROLLUP_MARKER,
    SuiteResult,
    rollup_markdown,
    rollup_outputs,
    without_marker,
)
from gate.github.ruling import label_acceptance
from gate.github.suites import Entry, relative_to_repo, resolve
from gate.logsafe import SUMMARY_LIMIT, command, flatten
from gate.reporting.markup import cell, code
from gate.secrets import announce_keys, redact

if TYPE_CHECKING:  # the entrypoint reads the inputs and hands them here
    from gate.github.action import Inputs

ROLLUP_REPORT = "casegate-suites-report.md"

ONE_CONFIG = "input `config` names several configs ({config!r}), and {what} takes one: {fix}"


def refuse_unsupported(inputs: Inputs) -> None:
    """What a roll-up does not do (yet): each names the way that works."""
    for given, what, fix in (
        (
            inputs.command != "check",
            f"`command: {inputs.command}`",
            "give that step one config, one step per suite (a matrix over the configs)",
        ),
        (
            bool(inputs.shard or inputs.parts),
            "sharding (`shard`, `parts`)",
            "shard one suite per job, each with its own config",
        ),
        (
            bool(inputs.report_dir),
            "`report-dir` (the comment from a fork's artifact, casegate-comment.yml)",
            "run one job per config, each with its own `report-dir` and artifact",
        ),
        (
            bool(inputs.baseline),
            "the `baseline` input (one file)",
            "set `baseline:` in each config instead",
        ),
    ):
        if given:
            raise ConfigError(ONE_CONFIG.format(config=inputs.config, what=what, fix=fix))


@dataclasses.dataclass(slots=True)
class Planned:
    entry: Entry
    suite: str
    loaded: Any = None
    cases: Any = None
    problems: list[str] = dataclasses.field(default_factory=list)
    #: a removed suite's acceptance label, from the base's config
    accept_label: str | None = None


class Base:
    """The base commit of the pull request being judged, read with git (gate.deciding.basetree)."""

    def __init__(self, cwd: Path, event: Mapping[str, Any], temp: str | None = None) -> None:
        repo_root = repo_root_of(cwd)
        if repo_root is None:
            raise ConfigError(
                f"{cwd}: not inside a git checkout, so the configs cannot be read from the base "
                "commit (run actions/checkout first)"
            )
        pull = event.get("pull_request") or {}
        self.repo_root = repo_root
        self.commit, _ = pull_request_base(
            repo_root, (pull.get("base") or {}).get("sha"), (pull.get("head") or {}).get("sha")
        )
        self.prefix = relative_to_repo(cwd, repo_root)
        self.temp = temp
        self.tree: Path | None = None
        self.refused: frozenset[str] = frozenset()

    def files(self) -> list[str]:
        """The base's files, relative to the working directory."""
        under = "" if self.prefix == "." else self.prefix + "/"
        return [
            name[len(under) :]
            for name in files_in_commit(self.repo_root, self.commit, self.prefix)
            if name.startswith(under)
        ]

    def config(self, path: str) -> Any:
        """The base's config at `path` (relative to the working directory), loaded in its tree."""
        from gate.suite.config import load_config

        if self.tree is None:  # only for a config the pull request removed
            scratch = private_scratch("casegate-configs-", self.temp)
            self.tree, self.refused = extract_tree(self.repo_root, self.commit, scratch)
        name = path if self.prefix == "." else f"{self.prefix}/{path}"
        return load_config(inside(self.tree, name, "the base's config", self.refused))


def plan(inputs: Inputs, cwd: Path, base: Base | None) -> list[Planned]:
    """Every config of the roll-up, loaded (or why not), each suite name once."""
    from gate.suite.project import load_project

    entries = resolve(
        inputs.config, cwd, base.files() if base else None, base.commit[:7] if base else ""
    )
    planned = []
    for entry in entries:
        if entry.removed and base is not None:
            try:
                loaded = base.config(entry.path)
            except CasegateError as exc:
                problems = [f"the base commit's {entry.path} does not load:", *exc.problems]
                planned.append(Planned(entry, entry.path, problems=problems))
                continue
            label = loaded.config.gate.accept_label
            planned.append(Planned(entry, loaded.config.suite, accept_label=label))
            continue
        try:
            loaded, cases = load_project(Path(entry.path), inputs.overrides)
        except CasegateError as exc:
            planned.append(Planned(entry, entry.path, problems=list(exc.problems)))
            continue
        planned.append(Planned(entry, loaded.config.suite, loaded, cases))
    return _one_each(planned)


def _one_each(planned: list[Planned]) -> list[Planned]:
    """Refuse two configs of one suite; a removed config whose suite moved to a new file folds.

    Sections, outputs and results files are keyed by the suite's name: a second config
    with that name would hide the first. A config the pull request moved is judged at
    its new path, where the base has no ruler: a ruler change that blocks until accepted.
    """
    judged = {p.suite for p in planned if not p.entry.removed and p.loaded is not None}
    kept = [p for p in planned if not (p.entry.removed and p.suite in judged)]
    seen: dict[str, str] = {}
    for item in kept:
        other = seen.setdefault(item.suite, item.entry.path)
        if other != item.entry.path:
            raise ConfigError(
                f"input `config`: {other} and {item.entry.path} both name the suite "
                f"{item.suite!r}: a roll-up keys each suite's section, outputs and results by "
                "its name, so one would hide the other; give each config its own `suite:`"
            )
    return kept


def run_suites(
    inputs: Inputs,
    environ: Mapping[str, str],
    event_name: str,
    event: dict[str, Any],
    cwd: Path,
    workspace: Path,
) -> int:
    refuse_unsupported(inputs)
    pull = event.get("pull_request") if event_name == "pull_request" else None
    base = Base(cwd, event, environ.get("RUNNER_TEMP")) if pull is not None else None
    planned = plan(inputs, cwd, base)
    # Every key masked before any fenced output (a suite's run) is printed.
    for item in planned:
        if item.loaded is not None:
            announce_keys(item.loaded.as_dict(), environ)
    # Flattened: a file name the pull request chose can hold a line break, never a command.
    listed = ", ".join(f"{item.suite} ({item.entry.path})" for item in planned)
    print(flatten(f"casegate: suites {listed}"), flush=True)
    results, annotations = [], []
    for item in planned:
        result, found = _judge(inputs, item, environ, event_name, event, cwd, workspace, planned)
        results.append(result)
        annotations += found
    report_path = work_folder(cwd / ".casegate") / ROLLUP_REPORT
    markdown = rollup_markdown(results)
    write_text(report_path, markdown)
    outputs = rollup_outputs(results, workspace_path(str(report_path), Path.cwd(), workspace))
    write_outputs(environ.get("GITHUB_OUTPUT"), outputs)
    emit_annotations(annotations)
    if pull and inputs.comment:
        _post(inputs, environ, pull, markdown, [r.suite for r in results])
    decisions = [result.decision for result in results]
    print(f"casegate: {outputs['verdict']} (the strictest of {outputs['verdicts']})", flush=True)
    if "error" in decisions:
        return 2
    if inputs.fail_on == "never":
        return 0
    return EXIT_CODES[outputs["verdict"]]


def _post(
    inputs: Inputs,
    environ: Mapping[str, str],
    pull: Mapping[str, Any],
    markdown: str,
    suites: list[str],
) -> None:
    """The roll-up comment, then the suites' own comments from before it are deleted."""
    from gate.github.api import CommentError, GitHub, marker_for

    if post_comment(inputs, environ, pull, ROLLUP_MARKER, markdown) is None:
        return
    api = environ.get("GITHUB_API_URL") or "https://api.github.com"
    try:
        gone = GitHub(api, inputs.token).delete_comments(
            environ.get("GITHUB_REPOSITORY", ""),
            int(pull["number"]),
            [marker_for(suite) for suite in suites],
            author=inputs.comment_author,
        )
    except (CommentError, KeyError, ValueError) as exc:
        _emit(command("warning", f"casegate could not delete a suite's old comment: {exc}"))
        return
    if gone:
        print(f"deleted {gone} comment(s) the roll-up replaces", flush=True)


def _judge(
    inputs: Inputs,
    item: Planned,
    environ: Mapping[str, str],
    event_name: str,
    event: dict[str, Any],
    cwd: Path,
    workspace: Path,
    planned: list[Planned],
) -> tuple[SuiteResult, list[Any]]:
    """One suite's result: judged, removed by the pull request, or why it could not be."""
    if item.entry.removed and not item.problems:
        return _removed(item, event), []
    problems = item.problems
    if not problems:
        suite_inputs = dataclasses.replace(inputs, config=item.entry.path)
        mode = inputs.mode or item.loaded.config.mode
        try:
            judged = judge_suite(
                suite_inputs,
                item.loaded,
                item.cases,
                mode,
                environ,
                event_name,
                event,
                cwd,
                workspace,
                summary_limit=SUMMARY_LIMIT // max(1, len(planned)),
            )
        except CasegateError as exc:
            problems = list(exc.problems)
        else:
            if isinstance(judged, int):
                problems = ["the run was interrupted: there is no verdict"]
            else:
                return _verdict(item, judged.outcome, workspace), judged.annotations
    problems = [redact(problem) for problem in problems]
    for line in _problem_lines(problems, workspace):
        _emit(line)
    _append(
        environ.get("GITHUB_STEP_SUMMARY"),
        f"### casegate could not run {cell(item.suite, 120)} ({code(item.entry.path)})\n\n"
        + "\n".join(f"- {cell(problem, 500)}" for problem in problems)
        + "\n",
    )
    return _error(item, problems), []


def _verdict(item: Planned, outcome: Any, workspace: Path) -> SuiteResult:
    from gate.reporting import report

    def render(share: int) -> str:
        whole = without_marker(outcome.markdown)
        if len(whole) <= share:
            return whole
        return report.markdown_report(outcome.comparison, outcome.verdict, limit=share)

    return SuiteResult(
        item.suite,
        item.entry.path,
        outcome.verdict.decision,
        render,
        check_outputs(outcome, workspace),
    )


def _fixed(text: str) -> Callable[[int], str]:
    return lambda share: text


def _error(item: Planned, problems: list[str]) -> SuiteResult:
    text = "**This suite could not be judged**, so the pull request cannot ship:\n\n" + "\n".join(
        f"- {cell(problem, 500)}" for problem in problems[:20]
    )
    return SuiteResult(item.suite, item.entry.path, "error", _fixed(text))


def _removed(item: Planned, event: Mapping[str, Any]) -> SuiteResult:
    """A config the base has and the pull request removed: it blocks until accepted."""
    label = item.accept_label or ""
    accepted_by = label_acceptance(event)(label) if label else None
    removed = (
        f"{code(item.entry.path)}, the config of the suite {cell(item.suite)} on the base "
        "commit, is not in this pull request: removing a suite is a change to the ruler"
    )
    if accepted_by is not None:
        text = f"{removed}; accepted by {cell(accepted_by)}."
        return SuiteResult(item.suite, item.entry.path, "ship", _fixed(text))
    how = f": a maintainer accepts it by adding the label {code(label)}" if label else ""
    return SuiteResult(item.suite, item.entry.path, "block", _fixed(f"{removed}{how}."))
