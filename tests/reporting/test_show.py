"""`casegate show`: a case's checks, its whole output and its change from the baseline."""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.errors import CasegateError
from gate.reporting import show
from gate.results import CaseResult, CheckResult, SampleResult
from gate.suite.cases import load_cases
from tests.conftest import Project, case
from tests.factories import result, run

REPO = Path(__file__).resolve().parents[2]
LONG = "You can return unworn items within 30 days of delivery. " * 40


def parser() -> argparse.ArgumentParser:
    built = argparse.ArgumentParser(prog="casegate")
    show.add_parser(built.add_subparsers(dest="command", required=True))
    return built


def run_show(*argv: str) -> str:
    """`casegate show …` through its own parser and handler; what it printed."""
    args = parser().parse_args(["show", *argv])
    out = io.StringIO()
    assert args.handler(args, out) == 0
    return out.getvalue()


def sampled(case_id: str, texts: list[str | None], failing: set[int]) -> CaseResult:
    """A case with one sample per text; the samples in `failing` fail `contains`."""
    samples = [
        SampleResult(
            sample=index,
            status="error" if text is None else "fail" if index in failing else "pass",
            text=text,
            reason="backend down" if text is None else "",
            checks=[]
            if text is None
            else [CheckResult(check="contains", ok=index not in failing, reason="missing x")],
        )
        for index, text in enumerate(texts)
    ]
    passes = sum(sample.status == "pass" for sample in samples)
    return CaseResult(
        id=case_id,
        status="pass" if passes == len(samples) else "fail",
        passed=passes == len(samples),
        samples=len(samples),
        passes=passes,
        pass_rate=passes / len(samples),
        checks=[CheckResult(check="contains", ok=False, reason="failed 1/3 samples: missing x")],
        outputs=samples,
    )


# --- render_case -----------------------------------------------------------------


def test_a_failing_case_shows_its_checks_and_its_whole_output() -> None:
    failing = result("refund-window", "fail", critical=True, text=LONG, reason="missing '14 days'")
    failing.source, failing.tags, failing.note = "cases/r.yaml:3", ["policy"], "INC-1: wrong window"
    text = show.render_case(failing)
    lines = text.splitlines()
    assert lines[0] == "case refund-window: FAIL (critical)"
    assert "  defined at  cases/r.yaml:3" in lines
    assert "  tags        policy" in lines
    assert "  note        INC-1: wrong window" in lines
    assert "  ✗ contains: missing '14 days'" in lines
    assert "  │ " + LONG in lines  # the whole output: nothing cut
    assert "\x1b" not in text  # plain unless asked


def test_the_change_from_the_baseline_is_a_word_diff_for_prose() -> None:
    before = result("c", text="Returns are accepted within 30 days. I can offer store credit.")
    after = result("c", "fail", text="Returns are accepted within 14 days. I can offer a refund.")
    text = show.render_case(after, before, baseline_source="baselines/s.json")
    assert text.splitlines()[0] == "case c: FAIL; on the baseline: pass"
    assert (
        "change from the baseline's output, by word ([-removed-] {+added+})\n"
        "  │ Returns are accepted within [-30-]{+14+} days. I can offer "
        "[-store credit-]{+a refund+}."
    ) in text


def test_the_change_from_the_baseline_is_a_line_diff_for_json() -> None:
    before = result("t", text='{"severity": "medium", "escalate": false, "tags": ["a"]}')
    after = result("t", "fail", text='{"tags": ["a"], "escalate": false, "severity": "high"}')
    text = show.render_case(after, before, baseline_source="b.json")
    assert (
        "change from the baseline's output, by line (JSON pretty-printed, keys sorted)\n"
        "  │   {\n"
        '  │     "escalate": false,\n'
        '  │ -   "severity": "medium",\n'
        '  │ +   "severity": "high",\n'
        '  │     "tags": [\n'
    ) in text


def test_same_missing_and_new_baselines_are_said_as_such() -> None:
    same = show.render_case(
        result("c", "fail", text="x"), result("c", text="x"), baseline_source="b"
    )
    assert "the same as the baseline's output" in same
    errored = result("c", "error", reason="down")
    no_output = show.render_case(result("c", "fail", text="x"), errored, baseline_source="b")
    assert "the baseline has no output to compare with" in no_output
    new = show.render_case(result("c", "fail", text="x"), None, baseline_source="b")
    assert new.splitlines()[0] == "case c: FAIL; on the baseline: absent (a new case)"
    assert "change from" not in new


def test_every_sample_is_shown_with_its_own_failing_checks() -> None:
    many = sampled("flaky", ["first answer", "second answer", None], failing={1})
    text = show.render_case(many)
    assert "  samples     1/3 passed" in text
    for expected in (
        "output, sample 1 of 3 (pass)\n  │ first answer",
        "output, sample 2 of 3 (fail)\n  ✗ contains: missing x\n  │ second answer",
        "output, sample 3 of 3 (error)\n  error: backend down\n  (no output)",
    ):
        assert expected in text
    failing_only = show.render_case(many, only_failing=True)
    assert "first answer" not in failing_only
    assert "(1 passing sample(s) not shown)" in failing_only


def test_each_sample_is_compared_with_the_baseline_sample_of_its_index() -> None:
    before = sampled("c", ["alpha one", "beta one"], failing=set())
    after = sampled("c", ["alpha two", "beta two", "gamma two"], failing={0, 1, 2})
    text = show.render_case(after, before, baseline_source="b")
    assert "(sample 1), by word ([-removed-] {+added+})\n  │ alpha [-one-]{+two+}" in text
    assert "(sample 2), by word ([-removed-] {+added+})\n  │ beta [-one-]{+two+}" in text
    assert "(sample 1), by word ([-removed-] {+added+})\n  │ [-alpha one-]{+gamma two+}" in text


def test_the_suite_s_definition_wins_over_what_the_results_recorded(project: Project) -> None:
    path = project.write_cases(
        [case("c", "hi", contains="x", fields_={"tags": ["new"], "note": "now", "version": 2})]
    )
    (defined,) = load_cases([path])
    recorded = result("c", "fail", text="x")
    recorded.source, recorded.tags, recorded.note = "old.yaml:9", ["old"], "then"
    text = show.render_case(recorded, case=defined)
    assert f"  defined at  {path}:1" in text
    assert "  tags        new" in text and "  note        now" in text
    assert "  version     1 in these results; the case file now has 2" in text


def test_the_input_files_are_shown_with_the_start_of_their_sha256(project: Project) -> None:
    project.write_text("tickets/a.txt", "refund please")
    path = project.write_cases(
        [case("c", "hi", contains="x", fields_={"input_files": ["tickets/a.txt"]})]
    )
    (defined,) = load_cases([path], root=project.root)
    text = show.render_case(result("c", "fail", text="x"), case=defined)
    assert "  reads       tickets/a.txt (5e9b8d97210d)" in text


def test_colour_only_when_asked() -> None:
    before, after = result("c", text="one two"), result("c", "fail", text="one three")
    text = show.render_case(after, before, baseline_source="b", colour=True)
    assert "\x1b[31m✗\x1b[0m" in text and "\x1b[32m{+three+}\x1b[0m" in text


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "environ", "expected"),
    [
        (Terminal(), {}, True),
        (Terminal(), {"NO_COLOR": "1"}, False),
        (Terminal(), {"NO_COLOR": ""}, True),  # present but empty does not count
        (Terminal(), {"TERM": "dumb"}, False),
        (io.StringIO(), {}, False),  # a pipe or a file
    ],
)
def test_wants_colour(stream: io.StringIO, environ: dict[str, str], expected: bool) -> None:
    assert show.wants_colour(stream, environ) is expected


HOSTILE = st.lists(
    st.one_of(
        st.text(max_size=10),
        st.sampled_from(
            ["\x1b[2J", "\x1b]0;owned\x07", "\r", "\n::error::forged", "\u202e", "\u2028", "\x85"]
        ),
    ),
    max_size=6,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(HOSTILE, HOSTILE, HOSTILE)
def test_nothing_an_output_holds_reaches_the_terminal_raw(old: str, new: str, reason: str) -> None:
    before, after = result("c", text=old), result("c", "fail", text=new, reason=reason)
    after.note = reason
    text = show.render_case(after, before, baseline_source="b")
    assert not any(ord(ch) < 32 and ch not in "\n\t" for ch in text)
    assert not any(0x7F <= ord(ch) < 0xA0 or ch in "\u202e\u2028" for ch in text)
    for line in text.split("\n"):
        assert not line.lstrip().startswith("::"), line  # no workflow command in a CI log


# --- choosing the cases -------------------------------------------------------------


def test_ids_globs_and_did_you_mean() -> None:
    results = run([result("refund-window"), result("refund-late"), result("shipping-date")])
    chosen = show.choose(["refund-*", "shipping-date", "refund-late"], results, "r.json")
    assert [c.id for c in chosen] == ["refund-late", "refund-window", "shipping-date"]
    with pytest.raises(CasegateError) as raised:
        show.choose(["refund-windw", "nothing-*", "new-case"], results, "r.json", ["new-case"])
    assert raised.value.exit_code == 2
    assert raised.value.problems == [
        "no case 'refund-windw' in r.json (did you mean 'refund-window'?)",
        "no case in r.json matches 'nothing-*'",
        "case 'new-case' is in the suite but not in r.json: run the suite (`casegate run`) to "
        "judge it",
    ]


# --- the command, end to end on the example suite ----------------------------------


@pytest.fixture(scope="module")
def candidate_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("show") / "candidate.json"
    finished = subprocess.run(
        [sys.executable, "-m", "gate", "run", "-c", "casegate.candidate.yml", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert finished.returncode == 0, finished.stderr
    return out


def test_show_a_regressed_case_of_the_example(
    candidate_results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    text = run_show(
        "complaint-no-invented-discount",
        "--results",
        str(candidate_results),
        "-c",
        "casegate.candidate.yml",
    )
    lines = text.splitlines()
    assert lines[0] == "case complaint-no-invented-discount: FAIL (critical); on the baseline: pass"
    assert "  defined at  cases/support/complaints.yaml:2" in lines
    assert "  tags        complaints, policy" in lines
    assert lines[3].startswith("  note        INC-2291: the bot offered 20% off")
    assert (
        '  ✗ not_regex: matches forbidden /(?i)\\d+ ?% (off|discount)|discount code/: "15% '
        'discount"' in lines
    )
    assert "  ✓ contains" in lines
    assert (
        "  │ I'm sorry your order has been a let-down. As a goodwill gesture here is a 15% "
        "discount code: SORRY15. Send me your order number and I'll check what went wrong."
    ) in lines
    assert (
        "  │ I'm sorry your order has been a let-down. {+As a goodwill gesture here is a 15% "
        "discount code: SORRY15. +}Send me your order number and I'll check what went wrong."
    ) in lines


def test_show_several_cases_by_glob_against_an_explicit_baseline(
    candidate_results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    text = run_show(
        "triage-*", "--results", str(candidate_results), "--baseline", "baselines/support.json"
    )
    headlines = [line for line in text.splitlines() if line.startswith("case ")]
    assert len(headlines) > 1 and all(line.startswith("case triage-") for line in headlines)
    assert "case triage-chargeback: PASS; on the baseline: fail" in headlines
    assert '  │ -   "severity": "medium",' in text


def test_show_an_unknown_case_is_exit_2_with_the_nearest(
    candidate_results: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    args = parser().parse_args(
        ["show", "complaint-no-invented-discont", "--results", str(candidate_results)]
    )
    with pytest.raises(CasegateError) as raised:
        args.handler(args, io.StringIO())
    assert raised.value.exit_code == 2
    assert raised.value.problems == [
        f"no case 'complaint-no-invented-discont' in {candidate_results} "
        "(did you mean 'complaint-no-invented-discount'?)"
    ]


def test_show_reads_the_default_results_and_says_when_there_is_no_baseline(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("greets", "hi", contains="bye")])
    assert main(["run", "--mode", "live", "--quiet"]) == 0  # .casegate/demo-results.json
    text = run_show("greets")
    assert text.startswith("case greets: FAIL\n")
    assert "  │ plain: hi" in text
    err = capsys.readouterr().err
    assert "no baseline at baselines/demo.json yet" in err
    # Which run it is: the default file holds whatever ran last.
    assert "casegate: from .casegate/demo-results.json, the live run of 20" in err
    assert "config has changed since" not in err
    project.write_config(samples=2)
    run_show("greets")
    assert "; the config has changed since, so run again to see it now" in capsys.readouterr().err


def test_provenance_and_added_are_in_the_results_show_and_the_reports_details(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    origin = {"critical": True, "provenance": "INC-2307", "added": "2026-04-12"}
    project.write_cases([case("promise", "hi", contains="plain", fields_=origin)])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    set_loud = ["--set", "system.style=loud", "--out", "cand.json", "--quiet"]
    assert main(["run", "--mode", "live", *set_loud]) == 0
    stored = json.loads(Path("cand.json").read_text())["cases"][0]
    assert (stored["provenance"], stored["added"]) == ("INC-2307", "2026-04-12")
    capsys.readouterr()
    assert main(["show", "promise", "--results", "cand.json"]) == 0
    out = capsys.readouterr().out
    assert "  provenance  INC-2307\n" in out and "  added       2026-04-12\n" in out
    assert main(["compare", "baselines/demo.json", "cand.json", "--format", "markdown"]) == 0
    assert "provenance: INC-2307 · added: 2026-04-12" in capsys.readouterr().out


def test_validate_warns_about_a_critical_case_with_neither_provenance_nor_added(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases(
        [
            case("bare", "hi", contains="hi", fields_={"critical": True}),
            case("sourced", "hi", contains="hi", fields_={"critical": True, "added": "2026-01-02"}),
            case("plain", "hi", contains="hi"),
        ]
    )
    assert main(["validate"]) == 0
    err = capsys.readouterr().err
    assert err == (
        "casegate: warning: cases/cases.yaml:1: critical case 'bare' has neither `provenance` "
        "nor `added`: say where it came from (an incident, a ticket, a spec) and when\n"
    )
