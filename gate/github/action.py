"""The GitHub Action's entrypoint: `python -m gate.github.action`, inside the action's container.

It reads the Actions runtime contract (INPUT_* with hyphens kept, GITHUB_*),
runs `check` (or `baseline` after a merge, or `comment` to post a fork's report
from its artifact: gate.github.forkcomment, or `drift` on a schedule: gate.github.driftissue),
writes the markdown report to the step summary, sets the step's outputs,
annotates the case files of regressed and errored cases, keeps one sticky
comment per suite on the pull request, and exits per `fail-on`. A comment that
cannot be written is a warning: it never turns a block into a pass or a pass
into a failure.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __name__ == "__main__":
    # The runner starts this file with the token in its environment. It starts again
    # without it (gate.github.tokenpipe imports only the standard library) before the
    # imports below, which take a third of a second, are paid twice.
    from gate.github.tokenpipe import PIPED as _PIPED
    from gate.github.tokenpipe import start_without_token as _start_without_token

    if any(key in os.environ for key in _PIPED):
        _start_without_token()

from gate.errors import CasegateError, ConfigError, link_loop
from gate.github.baseline import run_baseline
from gate.github.checkrun import (
    check_outputs,
    emit_annotations,
    judge_suite,
    post_comment,
    withdraw_verdicts,
)
from gate.github.forkcomment import post_report, write_report_dir
from gate.github.multisuite import run_suites
from gate.github.publish import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    _append,
    _emit,
    _problem_lines,
    write_outputs,
)
from gate.github.ruling import mark_safe_directory
from gate.github.suites import config_entries, in_checkout, several
from gate.github.tokenpipe import (
    PIPED,
    TOKEN_VARIABLES,
    not_dumpable,
    restore_piped,
    start_without_token,
)
from gate.github.workspace import hand_back
from gate.produce.verified import MANIFEST
from gate.reporting.markup import cell
from gate.secrets import announce_keys, redact

DEFAULT_COMMENT_AUTHOR = "github-actions[bot]"
TRUE = ("true", "True", "TRUE")
FALSE = ("false", "False", "FALSE")


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
    comment_author: str = DEFAULT_COMMENT_AUTHOR
    report_dir: str = ""
    #: with `command: drift`: re-record the cases that drifted
    refresh: bool = False
    #: `I/N`: run one shard and write its part (gate.suite.shard), no verdict
    shard: str = ""
    #: a folder of every shard's part, downloaded: merge them and gate the whole
    #: (gate.produce.merge)
    parts: str = ""
    #: gate.produce.sandbox: `require` (the default here) refuses to run the suite unprotected
    sandbox: str = "require"
    #: `changed`: record again, live, what the pull request's recordings changed (None: the
    #: base config's `verify:`)
    verify: str | None = None
    #: with `command: baseline`: the merged pull request's verified recordings, downloaded
    #: (gate.produce.verified); "" adopts nothing
    adopt_recordings: str = ""
    #: the merged pull request's head commit: the manifest must have been verified on it
    adopt_head: str = ""


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
    if command_name not in ("check", "baseline", "comment", "drift"):
        raise ConfigError(
            f"input `command` must be check, baseline, comment or drift, not {command_name!r}"
        )
    fail_on = read_input(environ, "fail-on", "block")
    if fail_on not in ("block", "never"):
        raise ConfigError(f"input `fail-on` must be block or never, not {fail_on!r}")
    sandbox = read_input(environ, "sandbox", "require")
    if sandbox not in ("require", "auto", "off"):
        raise ConfigError(f"input `sandbox` must be require, auto or off, not {sandbox!r}")
    verify = read_input(environ, "verify") or None
    if verify is not None and verify not in ("off", "changed"):
        raise ConfigError(f"input `verify` must be off or changed, not {verify!r}")
    mode = read_input(environ, "mode") or None
    if mode is not None and mode not in ("replay", "record", "live"):
        raise ConfigError(f"input `mode` must be replay, record or live, not {mode!r}")
    overrides = [
        line.strip()
        for line in read_input(environ, "set").splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]
    inputs = Inputs(
        command=command_name,
        config=read_input(environ, "config", "casegate.yml"),
        mode=mode,
        baseline=read_input(environ, "baseline") or None,
        overrides=overrides,
        comment=_boolean("comment", read_input(environ, "comment", "true")),
        token=read_input(environ, "github-token"),
        fail_on=fail_on,
        working_directory=read_input(environ, "working-directory", "."),
        comment_author=read_input(environ, "comment-author", DEFAULT_COMMENT_AUTHOR),
        report_dir=read_input(environ, "report-dir"),
        refresh=_boolean("refresh", read_input(environ, "refresh", "false")),
        shard=read_input(environ, "shard"),
        parts=read_input(environ, "parts"),
        verify=verify,
        sandbox=sandbox,
        adopt_recordings=read_input(environ, "adopt-recordings"),
        adopt_head=read_input(environ, "adopt-head"),
    )
    if inputs.adopt_recordings and inputs.command != "baseline":
        raise ConfigError("input `adopt-recordings` goes with `command: baseline` only")
    if (inputs.shard or inputs.parts) and inputs.command != "check":
        raise ConfigError("inputs `shard` and `parts` go with `command: check` only")
    if inputs.shard and inputs.parts:
        raise ConfigError(
            "inputs `shard` and `parts` are two stages: a matrix job runs one shard, "
            "the job after it merges the parts; give one of them"
        )
    return inputs


def read_event(environ: Mapping[str, str]) -> dict[str, Any]:
    path = environ.get("GITHUB_EVENT_PATH")
    if not path or not Path(path).is_file():
        return {}
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ConfigError(f"{path}: the event payload is not JSON ({exc})") from None
    return event if isinstance(event, dict) else {}


# --- the run --------------------------------------------------------------------------


def take_token(environ: dict[str, str]) -> str:
    """Read the GitHub token once and remove it from this process's environment.

    Nothing imported or started later (the supervised run, the user's code) sees it.
    """
    token = read_input(environ, "github-token")
    for key in TOKEN_VARIABLES:
        environ.pop(key, None)
        os.environ.pop(key, None)
    if token:
        from gate.secrets import remember

        remember(token, announce=False)  # the runner masks it; redacted from all we write
    return token


def run(environ: dict[str, str]) -> int:
    from gate.produce.seal import hold_from_environment

    token = take_token(environ)
    hold_from_environment(environ)  # the recording key: the gate's, never a run's
    inputs = dataclasses.replace(read_inputs(environ), token=token)
    workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
    if inputs.command == "comment":  # a fork's report, posted from a workflow_run
        return post_report(
            workspace,
            inputs.report_dir,
            read_event(environ),
            environ,
            token=inputs.token,
            author=inputs.comment_author,
            suites=_declared_suites(workspace / inputs.working_directory, inputs.config),
        )
    mark_safe_directory(os.environ)  # the environment git inherits, not `environ`
    event_name = environ.get("GITHUB_EVENT_NAME", "")
    if event_name == "pull_request_target":
        raise ConfigError(PULL_REQUEST_TARGET)
    event = read_event(environ)
    try:
        try:
            return judged(inputs, environ, event_name, event, workspace)
        except (OSError, RuntimeError) as exc:
            # A loop of links the pull request committed is a problem like any other
            # (exit 2): converted here, so that it withdraws the verdict too.
            loop = link_loop(exc)
            if loop is None:
                raise
            raise loop from None
    except CasegateError as exc:
        # An earlier commit's verdict must not stand beside this commit's failed check.
        withdraw_verdicts(inputs, environ, event_name, event, [redact(p) for p in exc.problems])
        raise
    except Exception as exc:
        # Nor beside a check that stopped on an error casegate did not foresee (its
        # message stays in the log: it may quote what should not be posted).
        withdraw_verdicts(
            inputs,
            environ,
            event_name,
            event,
            [f"casegate stopped on an unexpected error ({type(exc).__name__}): see the job's log"],
        )
        raise


def judged(
    inputs: Inputs,
    environ: dict[str, str],
    event_name: str,
    event: dict[str, Any],
    workspace: Path,
) -> int:
    """The check, the baseline or the drift run the inputs ask for, in the working directory."""
    from gate.suite.project import load_project

    cwd = (workspace / inputs.working_directory).resolve()
    if not cwd.is_dir():
        raise ConfigError(f"input `working-directory`: {inputs.working_directory} does not exist")
    os.chdir(cwd)
    if several(inputs.config):  # a glob or a list: one roll-up comment for them all
        return run_suites(inputs, environ, event_name, event, cwd, workspace)
    loaded, cases = load_project(Path(inputs.config), inputs.overrides)
    # Before any fenced output (the supervised run's): a mask printed inside a fence is
    # shown in the log, never registered.
    announce_keys(loaded.as_dict(), environ)
    mode = inputs.mode or loaded.config.mode
    if inputs.command == "baseline":
        return run_baseline(
            loaded,
            cases,
            mode,
            environ,
            inputs.sandbox,
            adopt=inputs.adopt_recordings,
            adopt_head=inputs.adopt_head,
        )
    if inputs.command == "drift":  # the suite live against its recordings, and its issue
        from gate.github.driftissue import run_drift

        return run_drift(inputs, environ, workspace, cwd, loaded.config.suite)
    return run_check(inputs, loaded, cases, mode, environ, event_name, event, cwd, workspace)


def _declared_suites(folder: Path, config: str) -> set[str] | None:
    """The suites the default branch's configs declare (None: there is no config there).

    `config` is the input: one path, a glob or a list (gate.github.suites).
    """
    from gate.suite.config import load_config

    paths = [folder / path for path in in_checkout(config_entries(config), folder)]
    paths = [path for path in paths if path.is_file()]
    if not paths:
        return None
    return {load_config(path).config.suite for path in paths}


PULL_REQUEST_TARGET = (
    "casegate does not run on `pull_request_target`: that event runs with the base "
    "repository's secrets and a write token, and casegate runs the pull request's code "
    "(custom checks, python systems) and reads its files; use `on: pull_request`, and the "
    "workflow_run pattern for comments on pull requests from forks"
)


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
    from gate.github.api import marker_for

    judged = judge_suite(inputs, loaded, cases, mode, environ, event_name, event, cwd, workspace)
    if isinstance(judged, int):  # a shard's part, or an interrupted run
        return judged
    outcome = judged.outcome
    if inputs.report_dir:  # for casegate-comment.yml, through an artifact
        write_report_dir(
            workspace / inputs.report_dir,
            loaded.config.suite,
            outcome.verdict.decision,
            outcome.markdown,
        )
        if outcome.manifest is not None:  # for the baseline refresh after the merge
            shutil.copyfile(outcome.manifest, workspace / inputs.report_dir / MANIFEST)
    outputs = check_outputs(outcome, workspace)
    outputs["verdicts"] = json.dumps({loaded.config.suite: outcome.verdict.decision})
    write_outputs(environ.get("GITHUB_OUTPUT"), outputs)
    emit_annotations(judged.annotations)
    pull = event.get("pull_request") if event_name == "pull_request" else None
    if pull and inputs.comment:
        post_comment(inputs, environ, pull, marker_for(loaded.config.suite), outcome.markdown)
    if inputs.fail_on == "never":
        return 0
    return int(outcome.verdict.exit_code)


def main(argv: Sequence[str] | None = None) -> int:
    if any(key in os.environ for key in PIPED):
        start_without_token()
    not_dumpable()
    from gate.produce.supervise import become_subreaper

    become_subreaper()
    environ = dict(os.environ)
    restore_piped(environ)
    try:
        try:
            return run(environ)
        except (OSError, RuntimeError) as exc:
            loop = link_loop(exc)
            if loop is None:
                raise
            raise loop from None
    except CasegateError as exc:
        workspace = Path(environ.get("GITHUB_WORKSPACE") or os.getcwd())
        problems = [redact(problem) for problem in exc.problems]
        for line in _problem_lines(problems, workspace):
            _emit(line)
        _append(
            environ.get("GITHUB_STEP_SUMMARY"),
            "### casegate could not run\n\n"
            + "\n".join(f"- {cell(problem, 500)}" for problem in problems)
            + "\n",
        )
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        if "GITHUB_WORKSPACE" in environ:  # on a runner: give the job's user its files back
            hand_back(Path(environ["GITHUB_WORKSPACE"]))


if __name__ == "__main__":
    sys.exit(main())
