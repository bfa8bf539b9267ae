"""`casegate compare` and `casegate gate`: two results files already on disk, compared case by
case and judged by the gate rule. gate/cli/ parses and dispatches."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

from gate.suite.project import load_project


def _config_at_hand(args: argparse.Namespace) -> bool:
    """-c CONFIG was given, or ./casegate.yml is there: what the files are read against."""
    return bool(getattr(args, "config_given", False)) or args.config.is_file()


def _gate_rule(args: argparse.Namespace, candidate: Any) -> Any:
    """The rule from -c CONFIG, else ./casegate.yml, else the candidate's own, else defaults."""
    from gate.errors import ConfigError
    from gate.suite.config import GateConfig, load_config

    if _config_at_hand(args):
        return load_config(args.config).config.gate
    embedded = candidate.config.get("gate")
    if embedded is None:
        return GateConfig()
    try:
        return GateConfig.model_validate(embedded)
    except ValueError as exc:
        raise ConfigError(f"the candidate's gate rule is invalid: {exc}") from None


def _rule_warnings(args: argparse.Namespace, baseline: Any, candidate: Any) -> list[str]:
    """Without a config at hand the candidate's own recorded rule gates it: say so when the
    baseline was recorded under another (a candidate run without a rule, or a looser one,
    would otherwise ship unnoticed)."""
    if _config_at_hand(args):
        return []
    before = baseline.config.get("gate") or {}
    after = candidate.config.get("gate") or {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    changed = sorted(key for key in set(before) | set(after) if before.get(key) != after.get(key))
    if not changed:
        return []
    return [
        f"the candidate was recorded under another gate rule than the baseline "
        f"({', '.join(changed)}), and gates by its own: pass -c CONFIG to gate by yours"
    ]


def _stale_baseline(args: argparse.Namespace, baseline: Any) -> list[str]:
    """The baseline's staleness, against -c CONFIG (or ./casegate.yml) when there is one."""
    from gate.deciding.staleness import baseline_warnings
    from gate.suite.config import load_config

    reference = load_config(args.config) if _config_at_hand(args) else None
    return baseline_warnings(baseline, reference)


def _compare_files(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    """Compare and judge two files on disk: measured alike (or accepted as not) over the
    cases the candidate ran (gate.deciding.alike)."""
    from gate.deciding import alike
    from gate.deciding.compare import compare
    from gate.deciding.rules import decide
    from gate.drift.age import replay_warnings
    from gate.pipeline.standing import with_judge_lines
    from gate.results import read_results

    whole = read_results(args.baseline)
    candidate = read_results(args.candidate)
    baseline, scope = alike.in_scope(whole, candidate)
    rule = _gate_rule(args, candidate)
    comparison = compare(
        baseline,
        candidate,
        rule,
        warnings=[*_rule_warnings(args, whole, candidate), *_stale_baseline(args, baseline)],
        pairwise=_replayed_pairs(args, baseline, candidate),
        holdout=_held_out(args, baseline, candidate),
        run_spread=_run_spread(args, baseline, candidate),
        recording_warnings=replay_warnings(candidate),
        replay=_replay(args, candidate),
    )
    allowed = args.allow_config_change
    found = alike.differences(whole, candidate, comparison)
    alike.require_alike(found, allowed=allowed)
    reasons, accepted = alike.removals(
        comparison, _defined_ids(args, candidate) if comparison.removed else None, allowed=allowed
    )
    comparison = dataclasses.replace(
        comparison,
        scope=scope,
        allowed_changes=found + accepted,
        history=_history(args, comparison, candidate),
    )
    verdict = alike.blocked(decide(comparison, rule), reasons)
    root = args.config.resolve().parent if args.config.is_file() else Path.cwd()
    bar = _calibration_bar(args)
    return baseline, candidate, comparison, with_judge_lines(verdict, candidate, root, bar)


def _calibration_bar(args: argparse.Namespace) -> Any:
    """The suite's `calibration:` bar when its config is at hand (None: the default bar)."""
    from gate.suite.config import load_config

    return load_config(args.config).config.calibration if _config_at_hand(args) else None


def _defined_ids(args: argparse.Namespace, candidate: Any) -> set[str] | None:
    """The case ids the suite defines now, from -c CONFIG or ./casegate.yml when it is this
    suite's; None when there is none to ask."""
    from gate.suite.config import load_config

    if not _config_at_hand(args):
        return None
    if load_config(args.config).config.suite != candidate.suite:
        return None
    _, cases = load_project(args.config)
    return {case.id for case in cases}


def _history(args: argparse.Namespace, comparison: Any, candidate: Any) -> Any:
    """The config's results history (gate.history), read from the working copy: `compare`
    and `gate` judge files already on disk; only `check --base` and the Action judge a
    pull request, and they read the base commit's copy."""
    from gate.history.locate import trusted_export
    from gate.history.report import notes_for
    from gate.suite.config import load_config

    if not _config_at_hand(args):
        return None
    loaded = load_config(args.config)
    if loaded.config.suite != comparison.suite:
        return None
    export, source = trusted_export(loaded, None)
    return notes_for(comparison, candidate, export, source, candidate_label="candidate")


def _composition(args: argparse.Namespace, candidate: Any) -> Any:
    """The suite's figures for the report's footer, from the config at hand when it is the
    candidate's suite (gate.suite.composition); None otherwise."""
    from gate.reporting.composition import composition_of
    from gate.suite.config import load_config

    if not _config_at_hand(args) or load_config(args.config).config.suite != candidate.suite:
        return None
    loaded, cases = load_project(args.config)
    return composition_of(loaded, cases)


def _replay(args: argparse.Namespace, candidate: Any) -> Any:
    """Live or replayed, from the candidate's file; the last drift run from the working
    copy, when a config is at hand (gate.drift.replayed)."""
    from gate.drift.replayed import for_results
    from gate.suite.config import load_config

    return for_results(candidate, load_config(args.config) if _config_at_hand(args) else None)


def _run_spread(args: argparse.Namespace, baseline: Any, candidate: Any) -> Any:
    """How far cases move between the runs of the baseline's configuration in the
    config's history (gate.history.spread); None without a config of this suite."""
    from gate.history.spread import trusted_spread
    from gate.suite.config import load_config

    if not (getattr(args, "config_given", False) or args.config.is_file()):
        return None
    loaded = load_config(args.config)
    if loaded.config.suite != baseline.suite:
        return None
    return trusted_spread(loaded, None, baseline, candidate)


def _held_out(args: argparse.Namespace, baseline: Any, candidate: Any) -> Any:
    """The held-out slices compared case by case, when the key is set (else aggregates)."""
    from gate.holdout.scoring import key_for
    from gate.holdout.verdicts import compare_runs
    from gate.suite.config import load_config

    if candidate.holdout is None and baseline.holdout is None:
        return None
    loaded = load_config(args.config) if _config_at_hand(args) else None
    return compare_runs(baseline, candidate, key_for(loaded))


def _replayed_pairs(args: argparse.Namespace, baseline: Any, candidate: Any) -> Any:
    """Pairwise verdicts for two results files, replayed from the config's recordings."""
    from gate.judging import pairwise
    from gate.suite.config import load_config

    if not _config_at_hand(args):
        return None
    config = load_config(args.config).config
    if config.judge is None or config.suite != candidate.suite:
        return None  # no judge pinned: the suite has no pairwise case
    loaded, cases = load_project(args.config)
    return pairwise.replayed(loaded, cases, baseline, candidate)


def _render(fmt: str, comparison: Any, verdict: Any, suite: Any = None) -> str:
    from gate.reporting import report

    if fmt == "markdown":
        return report.markdown_report(comparison, verdict, composition=suite)
    if fmt == "json":
        return json.dumps(report.json_report(comparison, verdict), indent=2) + "\n"
    return report.text_report(comparison, verdict) + "\n"


def cmd_compare(args: argparse.Namespace) -> int:
    from gate.files import write_text
    from gate.reporting.junit import write_junit

    _, candidate, comparison, verdict = _compare_files(args)
    suite = _composition(args, candidate) if args.format == "markdown" else None
    rendered = _render(args.format, comparison, verdict, suite)
    if args.out:
        write_text(args.out, rendered)
    else:
        sys.stdout.write(rendered)
    if args.junit:
        write_junit(candidate, args.junit, frozenset(comparison.regressions))
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from gate.reporting.report import text_report

    _, _, comparison, verdict = _compare_files(args)
    try:
        print(text_report(comparison, verdict), flush=True)
    except BrokenPipeError:
        _silence_stdout()  # `casegate gate … | head`: the verdict is the exit code still
    return int(verdict.exit_code)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
