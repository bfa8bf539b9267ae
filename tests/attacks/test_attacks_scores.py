"""Attacks on the judge's scores (issue 23): the graded judge and the RAG metrics.

A pull request's code runs in the supervised run (live) and in the judging process (custom
checks); its recordings and its cases are its own. None of it may supply a score the gate
takes: the gate asks the judge itself (checks.RUN_JUDGED), contexts that are not the
recorded ones are refused, and a case input's `contexts` the pull request changed is a
ruler change judged against the base tree, as any input is.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

from typing import Any

import pytest

from gate.cli import main
from gate.deciding.recheck import UntrustedRun, recheck, snapshot
from gate.results import read_results
from gate.suite.project import load_project
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

#: a stand-in judge: a claim or statement is supported when the contexts hold its words;
#: the graded prompt scores 5 for an answer that names 14 days, else 1
JUDGE = """
import re

def _claims(text):
    return [c.strip(" .") for c in re.split(r"[.;]", text) if c.strip(" .")]

def grade(asked, system):
    prompt = system["prompt"]
    if "SCORE <n>" in prompt and "rubric" in asked:
        return "SCORE 5: names 14 days" if "14 days" in asked["output"] else "SCORE 1: wrong"
    if "how well an answer addresses" in prompt:
        return "SCORE 5: direct"
    held = asked.get("contexts", "").lower()
    said = asked.get("answer", asked.get("reference", ""))
    lines = [
        f"{'SUPPORTED' if claim.lower() in held else 'UNSUPPORTED'}: {claim}"
        for claim in _claims(said)
    ]
    return "\\n".join([*lines, "END"])
"""

RAG_BOT = """
def answer(case_input, system):
    days = system.get("days", "14")
    return {
        "text": f"Refunds take {days} days",
        "contexts": [{"id": "refunds", "text": "Refunds take 14 days."}],
    }
"""

GRADED = {"rubric": "Says refunds take 14 days.", "scale": "1-5", "threshold": 0.75}
FAITHFUL = {"threshold": 1.0}

#: the pull request's code, imported by any run of the suite that imports its custom check:
#: it calls every judged output a pass with the top score
FORGES_SCORES = """
import dataclasses
import gate.checks as checks

_real = checks.evaluate

def _forged(judges, subject):
    return [
        dataclasses.replace(v, ok=True, reason="", score=1.0)
        if v.check in ("judge", "faithfulness")
        else v
        for v in _real(judges, subject)
    ]

checks.evaluate = _forged

def ok(text, case):
    return True
"""


def _suite(project: Project, bot: str, judge: str, *, days: str = "14", **config: Any) -> None:
    project.write_config(
        system={"name": "rag", "provider": "python", "target": f"{bot}:answer", "days": days},
        judge={"provider": "python", "target": f"{judge}:grade", "model": "standin"},
        **config,
    )


def _cases(project: Project, module: str | None = None) -> None:
    other: dict[str, Any] = {"contains": "Refunds"}
    if module is not None:
        other["check"] = f"{module}:ok"
    project.write_cases(
        [
            case(
                "refund",
                "How long do refunds take?",
                judge=GRADED,
                faithfulness=FAITHFUL,
                fields_={"critical": True},
            ),
            case("other", "And returns?", **other),
        ]
    )


def _modules(project: Project) -> tuple[str, str, str]:
    bot, judge, forger = (f"{name}_{project.module}" for name in ("rag", "judge", "forges"))
    project.write_text(f"{bot}.py", RAG_BOT)
    project.write_text(f"{judge}.py", JUDGE)
    project.write_text(f"{forger}.py", "def ok(text, case):\n    return True\n")
    return bot, judge, forger


def _scores(path: str, case_id: str) -> dict[str, tuple[bool, float | None]]:
    result = read_results(path).case_map()[case_id]
    return {c.check: (c.ok, c.score) for c in result.checks}


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_a_pull_requests_code_cannot_supply_a_graded_or_faithfulness_score(
    project: Project, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    bot, judge, forger = _modules(project)
    _suite(project, bot, judge)
    _cases(project)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert _scores("baselines/demo.json", "refund") == {
        "judge": (True, 1.0),
        "faithfulness": (True, 1.0),
    }
    # The pull request: refunds now "take 5 days" (unfaithful to the contexts, and the
    # rubric fails it), and a custom check module that makes any run report top scores.
    _suite(project, bot, judge, days="5")
    _cases(project, forger)
    assert main(["record", "--quiet"]) == 0  # in this process: the module must not forge here
    project.write_text(f"{forger}.py", FORGES_SCORES)
    code = main(["check", "--mode", mode, "--quiet", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out  # the critical case regressed: block
    assert _scores("c.json", "refund") == {"judge": (False, 0.0), "faithfulness": (False, 0.0)}
    # The gate's own answers: it asked the judge (from the recordings it read first).
    reasons = {c.check: c.reason for c in read_results("c.json").case_map()["refund"].checks}
    assert reasons["judge"].startswith("scored 1 on 1-5 (0.00, threshold 0.75)")
    assert reasons["faithfulness"].startswith("0/1 claims supported by the contexts")


def test_contexts_in_the_runs_results_that_are_not_the_recorded_ones_are_refused(
    project: Project,
) -> None:
    bot, judge, _ = _modules(project)
    _suite(project, bot, judge, days="5")
    _cases(project)
    assert main(["record", "--quiet", "--out", "run.json"]) == 0
    loaded, cases = load_project(project.config_path)
    before = snapshot(loaded, cases, "replay")
    honest = read_results(project.root / "run.json")
    assert recheck(honest, loaded, cases, before).case_map()["refund"].status == "fail"
    claimed = read_results(project.root / "run.json")
    # The run claims it retrieved a passage that supports the answer.
    claimed.case_map()["refund"].outputs[0].contexts = [
        {"id": "refunds", "text": "Refunds take 5 days."}
    ]
    with pytest.raises(UntrustedRun, match="is not the recorded one"):
        recheck(claimed, loaded, cases, before)


GROUNDED_BOT = """
def answer(case_input, system):
    return f"Refunds take {system.get('days', '14')} days"
"""


@pytest.mark.parametrize("bump", [False, True], ids=["same-version", "version-bumped"])
def test_a_case_inputs_contexts_rewritten_by_the_pull_request_is_a_ruler_change(
    project: Project, capsys: pytest.CaptureFixture[str], bump: bool
) -> None:
    """The system returns no contexts: faithfulness reads the case input's. The pull request
    makes the answer wrong and rewrites the case's contexts to agree with it, with recordings
    to match; the base tree's ruler sees the input moved and the gate will not say ship."""
    bot, judge, _ = _modules(project)
    project.write_text(f"{bot}.py", GROUNDED_BOT)
    _suite(project, bot, judge)

    def cases(contexts: str, version: int) -> None:
        project.write_cases(
            [
                {
                    "id": "refund",
                    "critical": True,
                    "version": version,
                    "input": {"question": "How long do refunds take?", "contexts": [contexts]},
                    "expect": {"faithfulness": FAITHFUL},
                },
                case("other", "And returns?", contains="Refunds"),
            ]
        )

    cases("Refunds take 14 days.", 1)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    _suite(project, bot, judge, days="5")
    cases("Refunds take 5 days.", 2 if bump else 1)
    assert main(["record", "--quiet"]) == 0
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json", "--report", "r.md"])
    captured = capsys.readouterr()
    assert code != 0, captured.out + captured.err
    report = (project.root / "r.md").read_text()
    assert "refund" in report
    if not bump:
        assert "input changed without a version bump" in report
    else:
        assert "version 1 → 2" in report


def test_a_pull_request_that_edits_a_recorded_faithfulness_answer_has_it_verified_or_named(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The system's answer (and its contexts) left as the base recorded them; only the
    judge's recorded claim list on it is flipped to SUPPORTED. Its key is found from the
    recorded contexts, so `verify: changed` sees the edit."""
    import json

    import yaml

    from tests.attacks.test_attacks_verify import _base, _commit, _verify_in_a_process

    bot, judge, _ = _modules(project)
    _suite(project, bot, judge, days="5")  # unfaithful on the base: 5 days, contexts say 14
    config = yaml.safe_load(project.config_path.read_text())
    project.write_config(**config, gate={"block_on_critical_failure": True})
    project.write_cases(
        [case("refund", "How long?", faithfulness=FAITHFUL, fields_={"critical": True})]
    )
    _base(project, monkeypatch)
    path = project.root / "recordings" / "refund.json"
    document = json.loads(path.read_text())
    edited = 0
    for entry in document["responses"].values():
        if entry.get("system") == "judge" and "UNSUPPORTED" in entry["output"]["text"]:
            entry["output"]["text"] = entry["output"]["text"].replace("UNSUPPORTED", "SUPPORTED")
            entry.pop("seal", None)
            edited += 1
    assert edited == 1
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    _commit(project)
    code, out = _verify_in_a_process(project)
    assert "recorded again by CI, live: refund" in out or "not sealed by CI: refund" in out, out
    assert code == 1, out  # the base blocks on this critical failure
