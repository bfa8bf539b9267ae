"""Pairwise judging: the candidate's output against the baseline's, in both orders."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from gate.cli import main
from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.errors import MissingRecordingError, SystemCallError
from gate.judging.judge import Grader, pairwise_input, parse_preference
from gate.judging.pairs import CasePairs, Pair, PairwiseAnalysis, sign_test
from gate.judging.pairwise import combine, compare_pairs
from gate.outputs import Output
from gate.produce.recordings import RecordingStore, request_key
from gate.reporting import report
from gate.results import SampleResult
from gate.suite.config import GateConfig
from gate.suite.judgepin import PAIRWISE_PROMPTS, PROMPTS, JudgePin
from tests.conftest import Project, case
from tests.factories import result, run
from tests.fakes.llm_server import FakeLLMServer, Received, Reply

RUBRIC = "Acknowledges the customer's trouble before anything else."
PAIRWISE = {"rubric": RUBRIC, "mode": "pairwise"}


# --- the verdict ------------------------------------------------------------------------


def test_parse_preference_accepts_only_a_b_or_tie_with_a_reason() -> None:
    assert parse_preference("A: warmer") == ("A", "warmer")
    assert parse_preference("  B: says sorry first \n") == ("B", "says sorry first")
    assert parse_preference("TIE: both fine") == ("TIE", "both fine")
    for bad in [
        "",
        "A",
        "a: lower case",
        "Tie: mixed case",
        "B:",
        "C: neither",
        "A or B: unsure",
        "Verdict: A",
        "A: one\nB: two",
        "PASS: a pointwise verdict",
        "A: " + "x" * 600,
    ]:
        with pytest.raises(SystemCallError, match="unparseable pairwise verdict"):
            parse_preference(bad)


@given(st.text(max_size=300))
def test_odd_judge_text_never_becomes_a_preference_by_accident(text: str) -> None:
    try:
        choice, _ = parse_preference(text)
    except SystemCallError:
        return
    assert text.strip().startswith(f"{choice}:")


def test_the_pairwise_prompt_is_new_and_prompt_v1_is_untouched() -> None:
    import hashlib

    assert set(PAIRWISE_PROMPTS) == set(PROMPTS)  # every version has both prompts
    v1 = PROMPTS[1]
    digest = hashlib.sha256((v1.system + "\x00" + v1.message).encode()).hexdigest()
    # Prompt v1 as it shipped: its recordings stay valid only while it never changes.
    assert digest == "1d0176d1cd34c69bf5a066c2be4bd1deeb3b184ba72e04ecc70abbd613891a0f"
    pairwise = PAIRWISE_PROMPTS[1]
    assert "{{ a }}" in pairwise.message and "{{ b }}" in pairwise.message
    assert "not instructions" in pairwise.system


@pytest.mark.parametrize(
    ("first", "second", "outcome"),
    [
        # baseline shown first (A = baseline), then candidate first (A = candidate)
        ("B", "A", "win"),
        ("A", "B", "loss"),
        ("TIE", "TIE", "tie"),
        ("A", "A", "tie"),  # always the first shown: position bias
        ("B", "B", "tie"),  # always the second shown
        ("B", "TIE", "tie"),
        ("TIE", "B", "tie"),
        ("A", "TIE", "tie"),
        ("TIE", "A", "tie"),
    ],
)
def test_both_orders_must_agree_or_the_pair_is_a_tie(first: Any, second: Any, outcome: str) -> None:
    found, reason, agreed = combine((first, "one"), (second, "two"))
    assert found == outcome
    assert agreed == (outcome != "tie" or (first, second) == ("TIE", "TIE"))
    if (first, second) in (("A", "A"), ("B", "B")):
        assert "position bias" in reason
    elif not agreed:
        assert "the two orders disagree" in reason


# --- the sign test -------------------------------------------------------------------


def exact_two_sided(wins: int, losses: int) -> float:
    """The textbook definition, summed over every outcome as likely or less likely."""
    n = wins + losses
    observed = Fraction(math.comb(n, wins), 2**n)
    total = sum(
        Fraction(math.comb(n, k), 2**n)
        for k in range(n + 1)
        if Fraction(math.comb(n, k), 2**n) <= observed
    )
    return float(min(total, Fraction(1)))


def test_sign_test_known_values() -> None:
    assert sign_test(9, 1) == pytest.approx(22 / 1024)  # 2 * (C(10,0) + C(10,1)) / 2^10
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    assert sign_test(0, 6) == sign_test(6, 0)


@given(st.integers(0, 60), st.integers(0, 60))
def test_sign_test_is_the_exact_binomial_test(wins: int, losses: int) -> None:
    if wins + losses == 0:
        return
    expected = exact_two_sided(wins, losses)
    assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-12)
    assert sign_test(wins, losses) == pytest.approx(
        binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-9
    )


@pytest.mark.parametrize(("wins", "losses"), [(2_900, 3_100), (3_000, 3_000), (3_300, 2_800)])
def test_sign_test_past_the_exact_limit_stays_exact_enough(wins: int, losses: int) -> None:
    assert sign_test(wins, losses) == pytest.approx(
        binomtest(wins, wins + losses, 0.5).pvalue, rel=1e-9
    )


# --- judging pairs from recorded verdicts ----------------------------------------------


def sample(index: int, text: str | None, status: str = "pass") -> SampleResult:
    return SampleResult(sample=index, status=status, text=text)  # type: ignore[arg-type]


def with_samples(case_id: str, texts: list[str | None], version: int = 1) -> Any:
    found = result(case_id, version=version)
    found.outputs = [
        sample(i, text, "error" if text is None else "pass") for i, text in enumerate(texts)
    ]
    found.samples = len(texts)
    return found


def loaded_case(case_id: str, **expect: Any) -> Any:
    from gate.checks import build
    from gate.suite.cases import Case

    built = Case.model_validate({"id": case_id, "input": {"question": case_id}, "expect": expect})
    built._judges = build(built.expect)
    return built


PIN = JudgePin(provider="openai", model="judge-2025-01-01")


def replaying(tmp_path: Path, answers: dict[tuple[str, str, str], str]) -> Grader:
    """A replaying pairwise Grader whose recordings hold `answers`: (case, A, B) → text."""
    grader = Grader(
        PIN,
        mode="replay",
        store=RecordingStore(tmp_path / "recordings"),
        root=tmp_path,
        kind="pairwise",
        recorded={},
    )
    recorded = {}
    for (case_id, first, second), text in answers.items():
        asked = pairwise_input(RUBRIC, {"question": case_id}, first, second)
        recorded[(case_id, request_key(grader.fingerprint, asked, 0))] = Output(text=text)
    grader.recorded = recorded
    return grader


def test_samples_pair_by_index_and_the_same_text_is_a_tie_without_a_call(
    tmp_path: Path,
) -> None:
    baseline = run([with_samples("c", ["old 0", "same", "old 2", None])])
    candidate = run([with_samples("c", ["new 0", "same", None, "new 3", "new 4"])])
    grader = replaying(
        tmp_path,
        {("c", "old 0", "new 0"): "B: new is warmer", ("c", "new 0", "old 0"): "A: warmer"},
    )
    analysis = compare_pairs(baseline, candidate, [loaded_case("c", judge=PAIRWISE)], grader)
    (pairs,) = analysis.cases
    # sample 0 judged; 1 identical; 2 and 3 have an error on one side; 4 has no baseline
    assert [(p.sample, p.outcome) for p in pairs.pairs] == [(0, "win"), (1, "tie")]
    assert analysis.wins == 1 and analysis.ties == 1 and analysis.judged == 2
    assert grader.missing == []


def test_a_missing_verdict_in_replay_fails_loudly_never_a_tie(tmp_path: Path) -> None:
    baseline = run([with_samples("c", ["old"]), with_samples("d", ["old d"])])
    candidate = run([with_samples("c", ["new"]), with_samples("d", ["new d"])])
    grader = replaying(tmp_path, {("c", "old", "new"): "B: x", ("c", "new", "old"): "A: x"})
    cases = [loaded_case("c", judge=PAIRWISE), loaded_case("d", judge=PAIRWISE)]
    with pytest.raises(MissingRecordingError) as raised:
        compare_pairs(baseline, candidate, cases, grader)
    assert "no recorded pairwise judge verdict for 1 case(s)" in raised.value.problems[0]
    assert raised.value.problems[0].endswith(": d")
    assert "casegate record --only-missing" in raised.value.problems[1]


def test_new_changed_and_errored_cases_are_listed_as_not_compared(tmp_path: Path) -> None:
    baseline = run([with_samples("moved", ["a"], version=1), with_samples("broken", [None])])
    candidate = run(
        [
            with_samples("moved", ["b"], version=2),
            with_samples("broken", ["b"]),
            with_samples("fresh", ["b"]),
            with_samples("plain", ["b"]),
        ]
    )
    cases = [
        loaded_case("moved", judge=PAIRWISE),
        loaded_case("broken", judge=PAIRWISE),
        loaded_case("fresh", judge=PAIRWISE),
        loaded_case("plain", judge={"rubric": RUBRIC}),  # pointwise: not a pairwise case
    ]
    analysis = compare_pairs(baseline, candidate, cases, replaying(tmp_path, {}))
    assert analysis.cases == []
    assert analysis.not_compared == {
        "broken": "no output on one side to compare (in error)",
        "fresh": "no baseline output (a new case)",
        "moved": "a new version of the case (v1 → v2): the baseline answered another expectation",
    }
    assert analysis.loss_rate is None and analysis.p_value is None


def test_an_unparseable_verdict_makes_the_pair_an_error_never_a_win(tmp_path: Path) -> None:
    baseline = run([with_samples("c", ["old"])])
    candidate = run([with_samples("c", ["new"])])
    grader = replaying(
        tmp_path, {("c", "old", "new"): "B is better!", ("c", "new", "old"): "A: new"}
    )
    analysis = compare_pairs(baseline, candidate, [loaded_case("c", judge=PAIRWISE)], grader)
    assert analysis.errors == 1 and analysis.wins == 0 and analysis.judged == 0
    assert "unparseable pairwise verdict" in analysis.cases[0].pairs[0].reason


# --- the gate rule ---------------------------------------------------------------------


def analysis_of(**counts: int) -> PairwiseAnalysis:
    pairs = [
        Pair(index, outcome, f"{outcome} reason")  # type: ignore[arg-type]
        for index, outcome in enumerate(
            outcome for outcome, count in counts.items() for _ in range(count)
        )
    ]
    return PairwiseAnalysis(judge="openai judge, prompt v1", cases=[CasePairs("a", False, pairs)])


def comparison_with(analysis: PairwiseAnalysis | None) -> Any:
    return compare(run([result("a")]), run([result("a")]), pairwise=analysis)


def test_max_pairwise_loss_rate_blocks_only_significantly_above_the_limit() -> None:
    rule = GateConfig(max_pairwise_loss_rate=0.25)
    at_limit = decide(comparison_with(analysis_of(win=2, loss=1, tie=1)), rule)
    assert at_limit.decision == "ship"  # 1 of 4 judged pairs = 25%: not above it
    # 2 of 4 is above the limit, but P(>= 2 losses of 4 | 25%) = 0.26: chance explains it.
    above = decide(comparison_with(analysis_of(win=1, loss=2, tie=1)), rule)
    assert above.decision == "ship"
    assert any("above the allowed 25% but not significantly" in note for note in above.notes)
    # 14 of 20: P(>= 14 of 20 | 25%) = 3.0e-05, below the rule's share of alpha (0.01).
    clear = decide(comparison_with(analysis_of(win=2, loss=14, tie=4)), rule)
    assert clear.decision == "block"
    (reason,) = clear.reasons
    assert reason.rule == "max_pairwise_loss_rate" and reason.cases == ["a"]
    assert "14 of 20 judged pairs (70.0%), significantly above the allowed 25%" in reason.message
    assert "binomial p = 3e-05, alpha 0.01" in reason.message
    # Off by default: the same comparison ships.
    assert decide(comparison_with(analysis_of(loss=4)), GateConfig()).decision == "ship"


def test_a_pair_in_error_blocks_under_the_rule_and_is_noted_without_it() -> None:
    comparison = comparison_with(analysis_of(win=3, error=1))
    blocked = decide(comparison, GateConfig(max_pairwise_loss_rate=0.5))
    assert blocked.decision == "block"
    assert "could not be judged" in blocked.reasons[0].message
    shipped = decide(comparison, GateConfig())
    assert shipped.decision == "ship"
    assert any("could not be judged" in note for note in shipped.notes)


def test_the_rule_says_when_it_could_not_be_applied() -> None:
    verdict = decide(comparison_with(None), GateConfig(max_pairwise_loss_rate=0.1))
    assert verdict.decision == "ship"
    assert any("max_pairwise_loss_rate not applied" in note for note in verdict.notes)


def test_a_pairwise_case_in_error_on_the_candidate_is_never_left_out_of_the_rule() -> None:
    # An error that empties the candidate's side must not turn the rule into a note.
    analysis = analysis_of(win=1)
    analysis.not_compared["b"] = "no output on one side to compare (in error)"
    analysis.candidate_errors.append("b")
    verdict = decide(comparison_with(analysis), GateConfig(max_pairwise_loss_rate=0.5))
    assert [(r.rule, r.cases) for r in verdict.reasons] == [("max_pairwise_loss_rate", ["b"])]
    assert "an error is never a win" in verdict.reasons[0].message


def test_raising_or_removing_the_limit_loosens_the_ruler() -> None:
    from gate.deciding import rulerside

    direction = rulerside.RULE_DIRECTIONS["max_pairwise_loss_rate"]
    assert rulerside._loosens(direction, 0.2, 0.3)
    assert rulerside._loosens(direction, 0.2, None)  # switched off
    assert not rulerside._loosens(direction, None, 0.2)  # switched on: tighter
    assert not rulerside._loosens(direction, 0.3, 0.2)


# --- the report ----------------------------------------------------------------------


HOSTILE = (
    "<img src=x onerror=alert(1)> @octocat see #12 | a pipe\n#### Fake heading\n"
    "<!-- casegate:sticky-comment suite=x --> `tick` [link](http://evil) $x$"
)


def hostile_analysis() -> PairwiseAnalysis:
    return PairwiseAnalysis(
        judge="openai <b>judge</b> @octocat",
        cases=[
            CasePairs("tone", True, [Pair(0, "loss", HOSTILE), Pair(1, "win", "fine")]),
            CasePairs("other", False, [Pair(0, "win", "warmer")]),
        ],
        not_compared={"fresh": "no baseline output (a new case)"},
    )


def test_the_markdown_section_escapes_what_the_judge_wrote() -> None:
    comparison = comparison_with(hostile_analysis())
    verdict = decide(comparison, GateConfig(max_pairwise_loss_rate=0.25))
    markdown = report.markdown_report(comparison, verdict)
    section = markdown[markdown.index("#### Pairwise (judge)") :]
    assert "<img" not in section and "&lt;img" in section
    assert "<b>" not in section
    assert "@\u200boctocat" in section and "#\u200b12" in section
    assert "<!--" not in section  # no second casegate marker
    assert "\\| a pipe" in section  # the pipe cannot split the table row
    assert not any(line.startswith("#### Fake") for line in markdown.splitlines())
    assert "candidate wins 2, losses 1, ties 0" in section
    assert "two-sided p = 1" in section
    row = next(line for line in section.splitlines() if "`tone`" in line)
    cells = [part.strip() for part in re.split(r"(?<!\\)\|", row)[1:-1]]
    assert cells[:6] == ["🔴", "`tone`", "1", "1", "0", "0"]  # the escaped pipe split nothing
    assert cells[6].startswith("sample 0, loss: &lt;img")
    assert "`fresh`: no baseline output (a new case)" in section
    # The losing case comes first.
    assert section.index("`tone`") < section.index("`other`")


def test_text_and_json_reports_carry_the_pairwise_section() -> None:
    comparison = comparison_with(hostile_analysis())
    verdict = decide(comparison, GateConfig())
    text = report.text_report(comparison, verdict)
    lines = text.splitlines()
    assert any(line.startswith("pairwise (judge: openai") for line in lines)
    assert any("tone: 1/1/0 (wins/losses/ties)" in line for line in lines)
    assert not any(line.startswith("#### Fake") for line in lines)  # one entry, one line
    data = report.json_report(comparison, verdict)["pairwise"]
    assert data["wins"] == 2 and data["losses"] == 1 and data["judged"] == 3
    assert data["sign_test_p_value"] == pytest.approx(1.0)
    assert data["cases"]["tone"]["pairs"][0]["outcome"] == "loss"
    assert data["not_compared"] == {"fresh": "no baseline output (a new case)"}
    assert report.json_report(comparison_with(None), verdict)["pairwise"] is None


# --- end to end: record, replay, check --------------------------------------------------


def between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def prefers(word: str) -> Callable[[Received], Reply]:
    """A fair judge: prefers the response containing `word`, wherever it is shown."""

    def reply(received: Received) -> Reply:
        asked = received.last_user_text
        first = word in between(asked, "<response_a>", "</response_a>")
        second = word in between(asked, "<response_b>", "</response_b>")
        if "mumble" in asked:
            return Reply(text="Hmm, hard to say.")
        if first and not second:
            return Reply(text=f"A: it says {word}")
        if second and not first:
            return Reply(text=f"B: it says {word}")
        return Reply(text="TIE: no difference")

    return reply


def first_shown(received: Received) -> Reply:
    """A position-biased judge: whatever is shown first wins."""
    return Reply(text="A: the first response is better")


def pairwise_project(project: Project, server: FakeLLMServer, **gate: Any) -> None:
    project.write_config(
        system={
            "name": "echo",
            "provider": "python",
            "target": f"{project.module}:answer",
            "style": "plain",
        },
        judge={
            "provider": "openai",
            "model": "judge-model-2025-01-01",
            "prompt_version": 1,
            "temperature": 0,
            "base_url": server.url + "/v1",
            "max_retries": 1,
        },
        gate={"max_pairwise_loss_rate": 0.05, **gate},
    )
    project.write_cases(
        [
            case("late-order", "where is my order", judge=PAIRWISE),
            case("refund", "i want a refund", judge=PAIRWISE),
            case("short", "hi", max_words=10),
        ]
    )


CANDIDATE = ["--set", "system.style=sorry"]


def test_record_then_check_replays_the_pairwise_verdicts_for_free(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert llm_server.received == []  # a baseline is not compared with itself
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    assert len(llm_server.received) == 4  # two cases, each pair in both orders
    shown = {
        (
            between(r.last_user_text, "<response_a>\n", "\n</response_a>"),
            between(r.last_user_text, "<response_b>\n", "\n</response_b>"),
        )
        for r in llm_server.received
    }
    assert ("plain: i want a refund", "sorry: i want a refund") in shown
    assert ("sorry: i want a refund", "plain: i want a refund") in shown
    assert llm_server.received[0].body["messages"][0]["content"] == PAIRWISE_PROMPTS[1].system

    code = main(["check", "--quiet", *CANDIDATE, "--report", "r.md", "--out", "c.json"])
    assert code == 0
    assert len(llm_server.received) == 4  # replayed
    markdown = Path("r.md").read_text()
    assert "#### Pairwise (judge)" in markdown
    assert "candidate wins 2, losses 0, ties 0" in markdown
    # `compare` with the config replays the same verdicts.
    main(["compare", "baselines/demo.json", "c.json", "--format", "json", "--out", "c.json.r"])
    pairwise = json.loads(Path("c.json.r").read_text())["pairwise"]
    assert pairwise["wins"] == 2 and pairwise["sign_test_p_value"] == pytest.approx(0.5)
    # The per-output verdict of a pairwise judge passes: it compares, it does not grade.
    results = {c["id"]: c for c in json.loads(Path("c.json").read_text())["cases"]}
    assert results["refund"]["status"] == "pass"
    assert results["refund"]["checks"][0]["check"] == "judge"


def test_a_judge_biased_by_position_gives_ties_not_wins(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = first_shown
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    assert "wins 0, losses 0, ties 2" in capsys.readouterr().err
    assert main(["check", "--quiet", *CANDIDATE, "--report", "r.md"]) == 0
    markdown = Path("r.md").read_text()
    assert "candidate wins 0, losses 0, ties 2" in markdown
    assert "whichever output it was shown first (position bias)" in markdown
    assert "sign test: no pair was won or lost" in markdown


def test_losing_pairs_block_the_check(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = prefers("plain")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    capsys.readouterr()
    assert main(["check", *CANDIDATE, "--report", "r.md"]) == 1
    out = capsys.readouterr().out
    assert "preferred the baseline's output in 2 of 2 judged pairs (100.0%)" in out
    assert "late-order, refund" in out


def test_a_missing_pairwise_verdict_stops_check_until_recorded(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    # The candidate recorded before any baseline existed: no pair could be judged.
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    assert "no baseline at" in capsys.readouterr().err
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["check", "--quiet", *CANDIDATE]) == 2
    err = capsys.readouterr().err
    assert "no recorded pairwise judge verdict for 2 case(s)" in err
    assert "late-order, refund" in err and "casegate record --only-missing" in err
    assert llm_server.received == []
    assert main(["record", "--only-missing", "--quiet", *CANDIDATE]) == 0
    assert len(llm_server.received) == 4
    assert main(["check", "--quiet", *CANDIDATE]) == 0


def test_a_new_case_is_listed_as_not_compared(project: Project, llm_server: FakeLLMServer) -> None:
    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    project.write_cases(
        [
            case("late-order", "where is my order", judge=PAIRWISE),
            case("refund", "i want a refund", judge=PAIRWISE),
            case("short", "hi", max_words=10),
            case("brand-new", "hello there", judge=PAIRWISE),
        ]
    )
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    assert main(["check", "--quiet", *CANDIDATE, "--report", "r.md"]) == 0
    markdown = Path("r.md").read_text()
    assert "`brand-new`: no baseline output (a new case)" in markdown


def test_a_garbled_judge_makes_the_pair_an_error_that_blocks(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    project.write_cases([case("mumble", "mumble", judge=PAIRWISE)])
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    assert main(["check", "--quiet", *CANDIDATE, "--report", "r.md"]) == 1
    markdown = Path("r.md").read_text()
    assert "1 pair(s) in error" in markdown and "never counted as a win" in markdown
    assert "unparseable pairwise verdict" in markdown


def test_a_judge_that_is_repository_code_is_refused_before_a_live_check(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_text("grader.py", "def answer(case_input, system):\n    return 'A: x'\n")
    project.write_config(
        judge={"provider": "python", "target": "grader:answer"},
        gate={"max_pairwise_loss_rate": 0.05},
    )
    project.write_cases([case("c", "q", judge=PAIRWISE)])
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["check", "--mode", "live", "--quiet", "--out", "live.json"]) == 2
    assert "runs the repository's code" in capsys.readouterr().err
    assert not Path("live.json").exists()  # refused before the run


def test_a_mode_that_is_not_pointwise_or_pairwise_is_a_load_error(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_config(judge={"provider": "openai", "model": "m"})
    project.write_cases([case("a", "q", judge={"rubric": RUBRIC, "mode": "sideways"})])
    assert main(["validate"]) == 2
    assert "judge mode must be 'pointwise'" in capsys.readouterr().err
    project.write_cases([case("a", "q", judge={"mode": "pairwise"})])
    assert main(["validate"]) == 2
    assert "judge takes {rubric:" in capsys.readouterr().err


# --- what the pull request's code can do --------------------------------------------------

FORGER = """
import json
from pathlib import Path

def check(output, case):
    # Runs in the supervised child: flip every recorded pairwise verdict of this case,
    # so that the baseline's "wins" become the candidate's.
    path = Path(__file__).parent / "recordings" / (case.id + ".json")
    document = json.loads(path.read_text())
    for entry in document["responses"].values():
        text = entry["output"]["text"]
        if text.startswith("A: "):
            entry["output"]["text"] = "B: forged"
        elif text.startswith("B: "):
            entry["output"]["text"] = "A: forged"
    path.write_text(json.dumps(document))
    return True
"""


def test_the_suites_code_cannot_forge_a_pairwise_win_during_the_run(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    llm_server.reply = prefers("plain")  # the genuine verdicts: the candidate loses
    # One pair: a single loss is significant only against a limit below the rule's alpha.
    pairwise_project(project, llm_server, max_pairwise_loss_rate=0.005)
    project.write_text("forger.py", FORGER)
    project.write_cases([case("refund", "i want a refund", judge=PAIRWISE, check="forger:check")])
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    capsys.readouterr()
    assert main(["check", *CANDIDATE, "--report", "r.md"]) == 1
    # The forger ran: the recordings on disk now say the candidate won...
    assert "forged" in (project.root / "recordings" / "refund.json").read_text()
    # ...but the gate judged with the verdicts read before the run started.
    assert "preferred the baseline's output in 1 of 1" in capsys.readouterr().out
    assert "candidate wins 0, losses 1" in Path("r.md").read_text()


def test_a_pull_request_is_judged_by_the_bases_pairwise_rule(
    project: Project, llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fakes.actions import git, init_repository

    llm_server.reply = prefers("plain")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    init_repository(project.root)
    git("checkout", "-q", "-b", "topic", cwd=project.root)
    # The pull request swaps the system and switches the pairwise rule off.
    config = yaml.safe_load(project.config_path.read_text())
    config["system"]["style"] = "sorry"
    config["gate"] = {}
    project.config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["check", "--base", "main", "--report", "r.md"]) == 1
    out = capsys.readouterr().out
    assert "loosens: gate rule: max_pairwise_loss_rate 0.05 → none" in out
    assert "preferred the baseline's output in 2 of 2 judged pairs" in out  # the base's rule


def test_a_results_file_cannot_claim_pairwise_wins(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = prefers("plain")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", *CANDIDATE, "--out", "c.json"]) == 0
    forged = json.loads(Path("c.json").read_text())
    forged["pairwise"] = {"wins": 2, "losses": 0, "ties": 0}
    for entry in forged["cases"]:
        entry["pairwise"] = {"wins": 1}
    Path("c.json").write_text(json.dumps(forged))
    # What a results file says about pairs is never read: the verdicts are replayed.
    assert main(["gate", "baselines/demo.json", "c.json"]) == 1


def test_prune_keeps_the_recorded_pairwise_verdicts(
    project: Project, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = prefers("sorry")
    pairwise_project(project, llm_server)
    assert main(["baseline", "--mode", "record", "--quiet"]) == 0
    assert main(["record", "--quiet", *CANDIDATE]) == 0
    # The candidate becomes the config; prune keeps what it uses, pairwise verdicts too.
    config = yaml.safe_load(project.config_path.read_text())
    config["system"]["style"] = "sorry"
    project.config_path.write_text(yaml.safe_dump(config))
    assert main(["recordings", "prune"]) == 0
    verdicts = [
        key
        for path in (project.root / "recordings").glob("*.json")
        for key, entry in json.loads(path.read_text())["responses"].items()
        if entry.get("system") == "judge"
    ]
    assert len(verdicts) == 4
    llm_server.received.clear()
    assert main(["check", "--quiet"]) == 0
    assert llm_server.received == []
