"""The HTML viewer's page, without a browser: the data block cannot be broken out of, the
policy's hashes are the inline blocks', nothing loads from the network, the held-out slice
is counts only, and `casegate view` writes what `compare` and `gate` decide.
(tests/reporting/browser/ loads the page in Chromium.)"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate.cli import main
from gate.deciding.compare import compare
from gate.deciding.rules import decide
from gate.judging.pairs import CasePairs, Pair, PairwiseAnalysis
from gate.reporting import viewer
from gate.reporting.charts import history_charts, line_chart
from gate.reporting.show import escaped
from gate.results import CheckResult, HoldoutSummary, RunResults, write_results
from gate.suite.sections import GateConfig
from tests.factories import result, run

HOSTILE = (
    "<script>window.__pwned=1</script> </script><script>window.__pwned=2</script> "
    '<!-- <img src=x onerror="window.__pwned=3"> <a href="javascript:window.__pwned=4">x</a> '
    "&amp; \u2028\u2029 ]]> {{ 7*7 }}"
)
DATA_OPEN = '<script type="application/json" id="casegate-data">'


def pair(text: str = HOSTILE) -> tuple[RunResults, RunResults]:
    """A baseline and a candidate whose one regressed case answered `text`."""
    before = run([result("evil", "pass", critical=True), result("calm", "pass")])
    after = run([result("evil", "fail", critical=True, text=text), result("calm", "pass")])
    return before, after


def page_of(before: RunResults, after: RunResults) -> str:
    comparison = compare(before, after, GateConfig())
    return viewer.comparison_page(comparison, decide(comparison, GateConfig()))


def data_block(page: str) -> dict:
    """The JSON block as a browser reads it: up to the first `</script` after it opens."""
    start = page.index(DATA_OPEN) + len(DATA_OPEN)
    end = page.lower().index("</script", start)
    return json.loads(page[start:end])


class Tags(HTMLParser):
    """Every start tag and its attributes, and the text of each script and style block."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.blocks: list[tuple[str, dict[str, str | None], str]] = []
        self._open: tuple[str, dict[str, str | None]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style"):
            self._open = (tag, dict(attrs))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self.blocks.append((*self._open, data))
            self._open = None


def parsed(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


# --- the data block ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.one_of(
            st.characters(codec=None, categories=None),  # lone surrogates too
            st.sampled_from("<>&/!-\u2028\u2029"),
        )
    )
)
def test_the_json_block_holds_no_markup_and_reads_back(text: str) -> None:
    embedded = viewer.embed_json({"text": text, "nested": [text]})
    assert embedded.isascii()
    assert not set("<>&") & set(embedded)
    assert json.loads(embedded) == {"text": text, "nested": [text]}


@settings(max_examples=40, deadline=None)
@given(st.text(min_size=1).map(lambda t: t + " </script><!--<script>x</script>"))
def test_any_output_reads_back_whole_from_the_page(text: str) -> None:
    page = page_of(*pair(text))
    shown = data_block(page)["cases"]
    evil = next(case for case in shown if case["id"] == "evil")
    assert evil["candidate"]["samples"][0]["text"] == escaped(text)


def test_hostile_output_is_data_never_markup() -> None:
    page = page_of(*pair())
    outside = page.replace(
        page[page.index(DATA_OPEN) : page.index("</script>", page.index(DATA_OPEN))], ""
    )
    for raw in ("window.__pwned", "onerror", "javascript:", "<img", "<!--"):
        assert raw not in outside
    tags = parsed(page)
    scripts = [attrs for tag, attrs in tags.tags if tag == "script"]
    assert scripts == [{"type": "application/json", "id": "casegate-data"}, {}]
    assert not [tag for tag, _ in tags.tags if tag in ("img", "a", "iframe", "object", "link")]
    # The data still says it, whole, for the page to show as text.
    evil = next(case for case in data_block(page)["cases"] if case["id"] == "evil")
    assert "<script>window.__pwned=1</script>" in evil["candidate"]["samples"][0]["text"]


# --- the policy ----------------------------------------------------------------


def _policy(page: str) -> dict[str, list[str]]:
    meta = next(
        attrs
        for tag, attrs in parsed(page).tags
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy"
    )
    directives = [part.split() for part in str(meta["content"]).split(";") if part.strip()]
    return {words[0]: words[1:] for words in directives}


def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_the_policy_allows_exactly_the_inline_script_and_style() -> None:
    page = page_of(*pair())
    policy = _policy(page)
    blocks = parsed(page).blocks
    script = [text for tag, attrs, text in blocks if tag == "script" and not attrs]
    style = [text for tag, _, text in blocks if tag == "style"]
    assert len(script) == 1 and len(style) == 1
    assert policy["script-src"] == [_hash(script[0])]
    assert policy["style-src"] == [_hash(style[0])]
    assert policy["default-src"] == ["'none'"]
    assert policy["img-src"] == ["data:"]
    assert "'unsafe-inline'" not in html.unescape(page.split("<style>")[0])


def test_no_inline_handler_style_attribute_or_reference_anywhere() -> None:
    page = page_of(*pair())
    for tag, attrs in parsed(page).tags:
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            assert name not in ("style", "src", "href", "action", "formaction"), (tag, name)
            assert "://" not in (value or ""), (tag, name, value)
    assert "http://" not in page and "https://" not in page
    for asset in ("viewer.js", "viewer.css", "viewer.html.j2"):
        text = (Path(viewer.__file__).parent / "templates" / asset).read_text()
        assert "http://" not in text and "https://" not in text, asset


# --- what the page holds ---------------------------------------------------------


def test_the_held_out_slice_is_counts_only() -> None:
    after = pair("fine")[1]
    after.holdout = HoldoutSummary(
        status="scored", cases=3, passed=2, failed=1, verdicts="SEALED-VERDICTS-BLOB-91"
    )
    page = viewer.run_page(after)
    assert "SEALED-VERDICTS-BLOB-91" not in page
    assert "held-out slice scored: 2/3 pass, 1 fail, 0 error(s)" in page
    assert [case["id"] for case in data_block(page)["cases"]] == ["calm", "evil"]


def test_scores_judge_rationale_tool_calls_and_contexts_reach_the_data() -> None:
    before, after = pair("fine")
    case = after.cases[1]
    sample = case.outputs[0]
    sample.checks = [CheckResult(check="judge", ok=False, reason="it invents a refund", score=0.2)]
    case.checks = list(sample.checks)
    sample.tool_calls = [{"name": "lookup", "arguments": {"order": "A1"}}]
    sample.contexts = [{"id": "doc-1", "text": "Refunds take 5 days."}]
    shown = next(c for c in data_block(page_of(before, after))["cases"] if c["id"] == "evil")
    check = shown["candidate"]["samples"][0]["checks"][0]
    assert check == {
        "check": "judge",
        "ok": False,
        "score": 0.2,
        "judge": True,
        "reason": "it invents a refund",
    }
    assert '"order": "A1"' in shown["candidate"]["samples"][0]["tool_calls"]
    assert shown["candidate"]["samples"][0]["contexts"] == [
        {"id": "doc-1", "text": "Refunds take 5 days."}
    ]
    assert shown["kind"] == "regression" and shown["changed"] is True
    assert shown["score_change"] == pytest.approx(0.2 - 1.0)


def test_control_characters_show_as_escapes() -> None:
    shown = data_block(page_of(*pair("left\u202eright \x1b[31mred")))["cases"]
    text = next(c for c in shown if c["id"] == "evil")["candidate"]["samples"][0]["text"]
    assert text == "left\\u202eright \\x1b[31mred"


def test_charts_draw_the_history_and_the_run() -> None:
    history = {
        "trend": [
            {
                "created_at": "2026-11-01T00:00:00+00:00",
                "commit": "abcdef123",
                "pass_rate": 0.5,
                "cost_usd": 0.1,
            },
            {
                "created_at": "2026-11-02T00:00:00+00:00",
                "commit": "<i>x",
                "pass_rate": 1.0,
                "cost_usd": None,
            },
        ],
        "candidate": {"pass_rate": 0.75, "cost_usd": 0.2},
    }
    (chart,) = history_charts(history)  # a cost missing: no cost chart
    assert [m.shown for m in chart.marks] == ["50.0%", "100.0%", "75.0%"]
    assert chart.marks[1].y < chart.marks[2].y < chart.marks[0].y  # higher is up
    page = viewer.run_page(pair("fine")[1], history)
    assert "<i>x" not in page and "2026-11-02 &lt;i&gt;x" in page
    assert line_chart("t", ["a"], [float("nan")]) is None


# --- the command -------------------------------------------------------------------


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.chdir(tmp_path)  # no casegate.yml at hand: the files alone
    before, after = pair()
    write_results(before, tmp_path / "base.json")
    write_results(after, tmp_path / "cand.json")
    return tmp_path / "base.json", tmp_path / "cand.json"


def test_view_with_a_baseline_shows_the_verdict_gate_gives(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, cand = files
    gated = main(["gate", str(base), str(cand)])
    assert main(["view", str(cand), "--baseline", str(base), "--out", "page.html"]) == 0
    head = data_block(Path("page.html").read_text())["head"]
    assert gated == 1 and head["decision"] == "block"
    assert any("evil" in reason for reason in head["reasons"])


def test_view_of_one_run_writes_beside_it_and_never_over_another_file(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, cand = files
    assert main(["view", str(cand)]) == 0
    written = cand.with_name("s-report.html")
    assert data_block(written.read_text())["head"]["kind"] == "run"
    assert main(["view", str(cand)]) == 0  # its own page it replaces
    Path("notes.txt").write_text("mine")
    assert main(["view", str(cand), "--out", "notes.txt"]) == 2
    assert Path("notes.txt").read_text() == "mine"
    assert "is not a casegate HTML page" in capsys.readouterr().err


def test_the_template_ships_with_the_package() -> None:
    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"reporting/templates/*"' in pyproject
    assert re.search(
        r"\{\{ data \}\}",
        (Path(viewer.__file__).parent / "templates" / "viewer.html.j2").read_text(),
    )


def test_view_of_a_run_draws_the_history_of_the_config_at_hand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)  # the example's casegate.yml, and history/support.jsonl
    out = tmp_path / "page.html"
    assert main(["view", "baselines/support.json", "--out", str(out)]) == 0
    page = out.read_text()
    assert page.count("<svg") == 2  # pass rate, and cost
    assert "Pass rate per recorded run" in page and "this run" in page
    # Each recorded run a point, and this run one more (drawn once even were it recorded).
    export = (repo / "history" / "support.jsonl").read_text().splitlines()
    runs = {json.loads(line)["created_at"] for line in export}
    itself = json.loads((repo / "baselines" / "support.json").read_text())["created_at"]
    first_svg = page[page.index("<svg") : page.index("</svg>")]
    assert first_svg.count("<circle") == len(runs - {itself}) + 1
    assert "wrote" in capsys.readouterr().out


def pairwise_page() -> str:
    """The hostile pair, compared with a pairwise judge that lost sample 1 of `evil`."""
    before, after = pair()
    found = PairwiseAnalysis(
        judge="j",
        cases=[
            CasePairs("evil", True, [Pair(0, "loss", "the baseline's <b>answer</b> is kinder")])
        ],
        not_compared={"calm": "a new version of the case"},
    )
    comparison = compare(before, after, GateConfig(), pairwise=found)
    return viewer.comparison_page(comparison, decide(comparison, GateConfig()))


def test_the_pairwise_judges_verdicts_and_reasons_reach_the_case() -> None:
    page = pairwise_page()
    shown = {case["id"]: case for case in data_block(page)["cases"]}
    assert shown["evil"]["pairwise"] == [
        {"sample": 0, "outcome": "loss", "reason": "the baseline's <b>answer</b> is kinder"}
    ]
    assert shown["calm"]["pairwise_note"] == "a new version of the case"
    assert any(
        f.startswith("pairwise judge: candidate wins 0, losses 1")
        for f in data_block(page)["head"]["facts"]
    )


def test_changed_tool_calls_under_the_same_text_get_a_diff_of_their_own() -> None:
    before, after = pair("Let me look that up.")
    before.cases[1].outputs[0].text = "Let me look that up."
    before.cases[1].outputs[0].tool_calls = [{"name": "lookup", "arguments": {"id": "A1"}}]
    after.cases[1].outputs[0].tool_calls = [{"name": "lookup", "arguments": {"id": 1}}]
    after.cases[0].outputs[0].tool_calls = before.cases[0].outputs[0].tool_calls = [{"name": "x"}]
    shown = {
        c["id"]: c["candidate"]["samples"][0] for c in data_block(page_of(before, after))["cases"]
    }
    assert shown["evil"]["diff"] == []  # the text is the same
    assert ["-", '      "id": "A1"\n'] in shown["evil"]["tools_diff"]
    assert ["+", '      "id": 1\n'] in shown["evil"]["tools_diff"]
    assert shown["calm"]["tools_diff"] is None  # the same calls: no diff


def test_the_changed_cases_diffs_come_first_and_the_rest_say_where_to_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gate.reporting import viewdata

    before = run(
        [result("a-same", "pass", text="one two three"), result("z-bad", "pass", text="a b")]
    )
    after = run(
        [result("a-same", "pass", text="one two four"), result("z-bad", "fail", text="a c")]
    )
    monkeypatch.setattr(viewdata, "DIFF_BUDGET", len("a b") + len("a c"))  # room for one diff
    shown = {c["id"]: c for c in data_block(page_of(before, after))["cases"]}
    regressed = shown["z-bad"]["candidate"]["samples"][0]
    assert regressed["diff"] == [[" ", "a "], ["-", "b"], ["+", "c"]]
    unchanged = shown["a-same"]
    assert unchanged["candidate"]["samples"][0]["diff_skipped"] is True
    assert unchanged["kind"] == "unchanged pass" and unchanged["changed"] is True  # its text did
