"""Attacks on the score features, round 2: the graded judge and RAG metrics, retrieval and
trajectory scores, text metrics, the score rules and their reports.

The pull request controls its system's outputs (in replay: its recordings, contexts
included), its case files and its casegate.yml; the base's tree is the ruler.

Every test asserts the SAFE outcome: a failing test means the attack worked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gate.cli import main
from gate.errors import ResultsError
from gate.results import read_results
from tests.attacks.test_attacks_scores import JUDGE, _suite
from tests.conftest import Project, case
from tests.fakes.actions import git, init_repository

FAITHFUL = {"threshold": 1.0}

#: answers from the case input's contexts (returns none of its own) ...
GROUNDED_BOT = """
def answer(case_input, system):
    return f"Refunds take {system.get('days', '14')} days"
"""

#: ... and the pull request's: a wrong answer, with "contexts" of its own that agree with it
FABRICATING_BOT = """
def answer(case_input, system):
    return {
        "text": "Refunds take 5 days",
        "contexts": [{"id": "refunds", "text": "Refunds take 5 days."}],
    }
"""


def _modules(project: Project) -> tuple[str, str]:
    bot, judge = (f"{name}_{project.module}" for name in ("rag", "judge"))
    project.write_text(f"{bot}.py", GROUNDED_BOT)
    project.write_text(f"{judge}.py", JUDGE)
    return bot, judge


def _grounded_cases(project: Project, **expect: Any) -> None:
    project.write_cases(
        [
            {
                "id": "refund",
                "critical": True,
                "input": {
                    "question": "How long do refunds take?",
                    "contexts": [{"id": "refunds", "text": "Refunds take 14 days."}],
                },
                "expect": {"faithfulness": FAITHFUL, **expect},
            },
            case("other", "And returns?", contains="Refunds"),
        ]
    )


def test_a_system_cannot_replace_the_case_inputs_contexts_with_its_own(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The base's case hands the system its passages (`input.contexts`: the ruler's ground
    truth). The pull request answers wrongly and reports "contexts" of its own that agree
    with the wrong answer: faithfulness must not be judged against the system's word in
    place of the case's passages."""
    bot, judge = _modules(project)
    _suite(project, bot, judge)
    _grounded_cases(project)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    # A module of another name: this process imported the base's already.
    project.write_text(f"{bot}_pr.py", FABRICATING_BOT)
    _suite(project, f"{bot}_pr", judge)
    assert main(["record", "--quiet"]) == 0
    code = main(["check", "--base", "main", "--quiet", "--out", "c.json"])
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err  # the critical case fails: block
    result = read_results(project.root / "c.json").case_map()["refund"]
    (faithful,) = [c for c in result.checks if c.check == "faithfulness"]
    assert not faithful.ok and faithful.score == 0.0
    assert "not one of the case input's `contexts`" in faithful.reason


#: the judge's answer (in replay: the pull request's recording of it) carries a payload into
#: the reason the gate prints and comments
PAYLOAD = (
    "\x1b[2J\x1b[32mSHIP\x1b[0m ::error title=x::pwned @octocat #12 <img src=x onerror=alert(1)> "
    "[click](https://evil.example) ### Fake section \u202e"
)
INJECTING_JUDGE = f"""
def grade(asked, system):
    prompt = system["prompt"]
    good = "14 days" in asked.get("output", asked.get("answer", ""))
    if "SCORE <n>" in prompt and "rubric" in asked:
        return "SCORE 5: fine" if good else "SCORE 1: " + {PAYLOAD!r}
    return ("SUPPORTED: fine" if good else "UNSUPPORTED: " + {PAYLOAD!r}) + "\\nEND"
"""


def test_a_judges_reason_cannot_inject_into_the_log_or_the_comment(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    bot, judge = _modules(project)
    project.write_text(f"{judge}.py", INJECTING_JUDGE)
    _suite(project, bot, judge)
    project.write_cases(
        [
            {
                "id": "refund",
                "input": {"question": "How long?", "contexts": ["Refunds take 14 days."]},
                "expect": {
                    "faithfulness": FAITHFUL,
                    "judge": {"rubric": "Says 14 days.", "scale": "1-5", "threshold": 0.75},
                },
            }
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    _suite(project, bot, judge, days="5")
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    code = main(["check", "--out", "c.json", "--report", "r.md", "-v"])
    captured = capsys.readouterr()
    assert code == 1  # the case regressed
    log = captured.out + captured.err
    assert "pwned" in log or "pwned" in (project.root / "r.md").read_text()
    assert "\x1b" not in log and "\u202e" not in log
    assert not any(line.lstrip().startswith("::") for line in log.splitlines()), log
    report = (project.root / "r.md").read_text()
    assert "\u202e" not in report  # ESC renders as nothing on GitHub; a bidi control reorders
    assert "<img" not in report
    assert "@octocat" not in report and "[click](" not in report and "#12" not in report
    assert "\n### Fake" not in report and not any(
        line.startswith("#") and "Fake" in line for line in report.splitlines()
    )


#: a custom check whose score is a float subclass that lies to float() and to comparisons
LYING_SCORE = """
class Score(float):
    def __float__(self):
        return 1.0

    def __le__(self, other):
        return True

    def __ge__(self, other):
        return True

    def __lt__(self, other):
        return False


def check(text, case):
    return Score(0.9 if "14 days" in text else 0.1)
"""


def test_a_custom_checks_score_is_its_number_not_what_its_float_says(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The custom check is the suite's own code (the base's under a ruling), in the judging
    process; its number is read as the number it holds: 0.1 under a threshold of 0.5 fails."""
    bot, judge = _modules(project)
    scorer = f"lying_{project.module}"
    project.write_text(f"{scorer}.py", LYING_SCORE)
    _suite(project, bot, judge)
    project.write_cases(
        [
            case(
                "refund",
                "How long?",
                check={"fn": f"{scorer}:check", "threshold": 0.5},
                fields_={"critical": True},
            )
        ]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    _suite(project, bot, judge, days="5")
    assert main(["record", "--quiet"]) == 0
    code = main(["check", "--quiet", "--out", "c.json"])
    captured = capsys.readouterr()
    assert code == 1, captured.out + captured.err
    (found,) = read_results(project.root / "c.json").case_map()["refund"].checks
    assert not found.ok and found.score == pytest.approx(0.1)


#: a system that reports its token usage; the pull request's twin reports none on one case
PRICED_BOT = """
def answer(case_input, system):
    return {"text": "Refunds take 14 days", "input_tokens": 1000, "output_tokens": 100,
            "model": "standin"}
"""
UNPRICED_BOT = """
def answer(case_input, system):
    if case_input["question"] == "cheap":
        return {"text": "Refunds take 14 days", "input_tokens": 1000, "output_tokens": 100,
                "model": "standin"}
    return {"text": "Refunds take 14 days", "model": "standin"}
"""


@pytest.mark.parametrize("reported", ["on one case", "on none"])
def test_a_cost_the_candidate_stops_reporting_does_not_pass_max_cost_increase(
    project: Project, capsys: pytest.CaptureFixture[str], reported: str
) -> None:
    """The baseline priced every case; the pull request's answers report no token usage
    (on the dear case, or on all): the cost per answer is compared over what is left, or
    not at all, and `max_cost_increase` must not read that as "no increase"."""
    bot = f"priced_{project.module}"
    project.write_text(f"{bot}.py", PRICED_BOT)
    config: dict[str, Any] = {
        "pricing": {"standin": {"input": 1.0, "output": 2.0}},
        "gate": {"max_cost_increase": 0.1},
    }
    project.write_config(
        system={"name": "s", "provider": "python", "target": f"{bot}:answer"}, **config
    )
    project.write_cases(
        [case("cheap", "cheap", contains="Refunds"), case("dear", "dear", contains="Refunds")]
    )
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    other = f"unpriced_{project.module}"
    body = UNPRICED_BOT if reported == "on one case" else UNPRICED_BOT.replace('"cheap"', '"-"')
    project.write_text(f"{other}.py", body)
    project.write_config(
        system={"name": "s", "provider": "python", "target": f"{other}:answer"}, **config
    )
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    code = main(["check", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "cost per answer is unknown on the candidate" in out and "dear" in out, out


#: a judge that grades by the rubric it is given: any answer meets "Anything."
RUBRIC_JUDGE = """
def grade(asked, system):
    if asked.get("rubric") == "Anything.":
        return "SCORE 5: anything goes"
    return "SCORE 5: names 14 days" if "14 days" in asked["output"] else "SCORE 1: wrong"
"""


def test_a_reversioned_case_with_an_easier_rubric_does_not_lift_the_score_floor(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """`min_mean_score` is over the cases the baseline has. The pull request makes every
    answer wrong, and re-versions every plain case with a rubric any answer meets (a
    re-versioned plain case is a new test, listed, not a loosening): those are new cases
    now, and cannot hold the base's floor up."""
    bot, judge = _modules(project)
    project.write_text(f"{judge}.py", RUBRIC_JUDGE)
    config: dict[str, Any] = {"gate": {"min_mean_score": {"judge": 0.75}}}

    def write(days: str, rubric: str, version: int) -> None:
        _suite(project, bot, judge, days=days, **config)
        graded = {"rubric": rubric, "scale": "1-5", "threshold": 0.0}
        project.write_cases(
            [
                {**case(name, "How long?", judge=graded), "version": version}
                for name in ("a", "b", "c")
            ]
        )

    write("14", "Says 14 days.", 1)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    write("5", "Anything.", 2)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    code = main(["check", "--base", "main", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "min_mean_score" in out and "re-versioned" in out, out
    assert "3 re-versioned case(s) are left out of the score floors" in out, out


# --- results files: the case line, the samples and the check names disagree -------------


def _edited_candidates() -> dict[str, Any]:
    """Each: a candidate a hand (or a run) edited so its falling case `c03` looks fine."""
    from tests.deciding.scored import scored

    def case_line_only() -> Any:
        fell = scored("c03", [0.1] * 5)
        for sample in fell.outputs:  # the samples keep their verdicts, lose their scores
            sample.checks = [dataclasses.replace(c, score=None) for c in sample.checks]
        fell.checks = [dataclasses.replace(fell.checks[0], score=0.95)]
        return fell

    def renamed() -> Any:
        return scored("c03", [0.1] * 5, check="similar2")

    def duplicated() -> Any:
        fell = scored("c03", [0.1] * 5)
        for sample in fell.outputs:
            sample.checks = [*sample.checks, dataclasses.replace(sample.checks[0], score=1.0)]
        return fell

    return {"case line only": case_line_only, "renamed": renamed, "duplicated": duplicated}


@pytest.mark.parametrize("edit", ["case line only", "renamed", "duplicated"])
def test_a_results_files_case_line_or_names_cannot_stand_in_for_its_samples(edit: str) -> None:
    from gate.deciding.compare import compare
    from gate.deciding.rules import decide
    from gate.suite.config import GateConfig
    from tests.deciding.scored import scored, scored_run

    base = [scored(f"c{i:02d}", [0.9] * 5) for i in range(8)]
    cand = [scored(f"c{i:02d}", [0.9] * 5) for i in range(8)]
    cand[3] = _edited_candidates()[edit]()
    rule = GateConfig.model_validate(
        {"min_mean_score": {"similar": 0.85}, "block_on_pass_rate_drop": False}
    )
    if edit == "duplicated":  # never a file casegate writes: not believed
        with pytest.raises(ResultsError, match="twice for one output of case 'c03'"):
            compare(scored_run(base), scored_run(cand), rule)
        return
    verdict = decide(compare(scored_run(base), scored_run(cand), rule), rule)
    reasons = [r for r in verdict.reasons if r.rule == "min_mean_score"]
    assert verdict.decision == "block" and reasons, verdict
    assert reasons[0].cases == ["c03"]


@pytest.mark.parametrize(
    "pr_gate",
    [
        {"min_mean_score": {"judge": 0.0}},
        {},
        {"min_mean_score": {"judge": 0.75, "faithfulness": 0.0}},
        {"min_mean_score": {"judge": 0.75}, "max_mean_score_drop": {"check": "judge", "drop": 1}},
    ],
    ids=["floor lowered", "floor removed", "floor added", "drop rule added"],
)
def test_a_pull_requests_own_score_rules_do_not_judge_it(
    project: Project, capsys: pytest.CaptureFixture[str], pr_gate: dict[str, Any]
) -> None:
    """The score rules are the base's: any change to them is a ruler change that needs
    the label, and the base's floor still judges the wrong answers."""
    bot, judge = _modules(project)
    project.write_text(f"{judge}.py", RUBRIC_JUDGE)
    graded = {"rubric": "Says 14 days.", "scale": "1-5", "threshold": 0.0}
    project.write_cases([case(name, "How long?", judge=graded) for name in ("a", "b", "c")])
    _suite(project, bot, judge, gate={"min_mean_score": {"judge": 0.75}})
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-qb", "change", cwd=project.root)
    _suite(project, bot, judge, days="5", gate=pr_gate)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    code = main(["check", "--base", "main", "--out", "c.json"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "loosens" in out, out
    assert "mean 'judge' score 0.000 over 3 case(s) is below the floor 0.75" in out, out


# --- pathological outputs: bounded work ---------------------------------------------------


@pytest.mark.parametrize("order", ["exact", "in_order", "any_order"])
def test_a_trajectory_of_many_calls_against_a_long_expectation_is_measured_not_hung(
    order: str,
) -> None:
    """200,000 recorded tool calls against 1,000 expected steps: a quadratic LCS would make
    2 x 10^8 steps in Python (minutes); the bit-parallel one takes a fraction of a second."""
    from gate import checks
    from gate.outputs import ToolCall

    expected = [f"t{i % 5}" for i in range(1_000)]
    called = tuple(ToolCall(name=f"t{i % 7}") for i in range(200_000))
    judges = checks.build({"trajectory": {"expected": expected, "order": order}})
    (verdict,) = checks.evaluate(judges, checks.Subject("x", {}, tool_calls=called))
    assert verdict.score is not None and 0 <= verdict.score <= 1
    assert len(verdict.reason) < 2_000  # the path is shown cut short, not in full
    assert verdict.ok is (order != "exact")  # every expected step is there, in order


def test_many_contexts_against_a_case_inputs_own_are_checked_in_one_pass() -> None:
    """100,000 passages the system reports, each one of the case input's 100,000: the check
    that they are the case's is a lookup each, not a scan of the case's list."""
    from gate.outputs import Context

    given = [{"id": str(i), "text": f"passage {i}"} for i in range(100_000)]
    subject = checks_subject(given)
    subject.contexts = tuple(Context(id=str(i), text=f"passage {i}") for i in range(99_999, -1, -1))
    found = subject.passages()
    assert isinstance(found, tuple) and len(found) == 100_000
    subject.contexts = (*subject.contexts[:-1], Context(id="0", text="passage 1"))
    assert isinstance(subject.passages(), str)


def checks_subject(given: list[dict[str, str]]) -> Any:
    from gate import checks

    return checks.Subject("x", {"question": "q", "contexts": given})


def test_a_latency_the_candidate_does_not_report_does_not_pass_max_latency_p95_increase() -> None:
    """Recordings stripped of `latency_ms` (in replay they are the pull request's): the p95
    is unknown on the candidate, and the rule must not read that as "no increase"."""
    from gate.deciding.compare import compare
    from gate.deciding.rules import decide
    from gate.suite.config import GateConfig
    from tests.factories import result, run

    rule = GateConfig.model_validate({"max_latency_p95_increase": 0.2})
    base = [result(f"c{i}", latency=100.0) for i in range(3)]
    cand = [result(f"c{i}", latency=None) for i in range(3)]
    verdict = decide(compare(run(base), run(cand), rule), rule)
    assert verdict.decision == "block", verdict
    assert [r.rule for r in verdict.reasons] == ["max_latency_p95_increase"]
    both_unknown = [result(f"c{i}", latency=None) for i in range(3)]
    assert decide(compare(run(both_unknown), run(cand), rule), rule).decision == "ship"
