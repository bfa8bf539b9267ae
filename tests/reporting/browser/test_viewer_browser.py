"""The HTML viewer in headless Chromium, opened from file:// as from a CI artifact: the
table searches, filters, sorts and opens a case; hostile output shows as text and runs
nothing; the policy blocks what escaping would have let through."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from gate.results import CheckResult, RunResults, write_results
from tests.factories import result, run

if TYPE_CHECKING:
    from selenium.webdriver.chrome.webdriver import WebDriver

pytestmark = pytest.mark.browser

HOSTILE = (
    "<script>window.__pwned=1</script> and </script><script>window.__pwned=2</script> "
    '<img src=x onerror="window.__pwned=3"> <a href="javascript:window.__pwned=4">click</a> '
    "<!-- a comment"
)


def _runs() -> tuple[RunResults, RunResults]:
    evil_before = result("refund-evil", "pass", critical=True, text="Refunds take 5 days.")
    evil_after = result("refund-evil", "fail", critical=True, text=HOSTILE, cost=0.001)
    judged = result("judged-answer", "fail", text="We never refund.", cost=0.002, latency=900)
    sample = judged.outputs[0]
    sample.checks = [
        CheckResult(check="judge", ok=False, reason="it refuses a refund policy allows", score=0.25)
    ]
    judged.checks = list(sample.checks)
    sample.tool_calls = [{"name": "lookup_order", "arguments": {"order": "A-17"}}]
    sample.contexts = [{"id": "policy-3", "text": "Refunds are allowed within 30 days."}]
    judged_before = result("judged-answer", "pass", text="We refund within 30 days.")
    judged_before.checks = [CheckResult(check="judge", ok=True, reason="", score=0.75)]
    for case, tags in ((evil_before, ["refunds"]), (evil_after, ["refunds"])):
        case.tags = tags
    greet = [result("greet", "pass", text="Hello!", cost=0.05, latency=10) for _ in range(2)]
    for case in greet:
        case.tags = ["greetings"]
    before = run([evil_before, judged_before, greet[0]])
    after = run([evil_after, judged, greet[1]])
    return before, after


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("viewer")
    before, after = _runs()
    write_results(before, folder / "base.json")
    write_results(after, folder / "cand.json")
    out = folder / "report.html"
    # In a folder of its own: no casegate.yml at hand, the two files alone.
    done = subprocess.run(
        [sys.executable, "-m", "gate", "view", "cand.json", "--baseline", "base.json",
         "--out", out.name],
        cwd=folder, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def _open(browser: WebDriver, path: Path) -> None:
    browser.get(path.as_uri())
    assert browser.execute_script("return document.body.classList.contains('ready')"), (
        "the page's own script did not run: " + repr(browser.get_log("browser"))
    )


def _rows(browser: WebDriver) -> list[str]:
    from selenium.webdriver.common.by import By

    return [
        row.get_attribute("data-id") or ""
        for row in browser.find_elements(By.CSS_SELECTOR, "#case-rows tr")
    ]


def test_search_filters_sort_and_a_case_side_by_side(browser: WebDriver, page: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, page)
    assert browser.find_element(By.ID, "verdict").text.lower() == "block"
    assert "refund-evil" in browser.find_element(By.ID, "reasons").text
    assert _rows(browser) == ["greet", "judged-answer", "refund-evil"]
    assert browser.find_element(By.ID, "shown").text == "3 of 3 case(s)"

    search = browser.find_element(By.ID, "search")
    search.send_keys("EVIL")  # an id, in any case
    assert _rows(browser) == ["refund-evil"]
    search.clear()
    search.send_keys("policy allows")  # a check's reason (the judge's) is searched too
    assert _rows(browser) == ["judged-answer"]
    search.clear()
    search.send_keys("x")
    search.clear()  # clear() alone fires no input event; typing then clearing does
    assert len(_rows(browser)) == 3

    Select(browser.find_element(By.ID, "tag")).select_by_value("greetings")
    assert _rows(browser) == ["greet"]
    Select(browser.find_element(By.ID, "tag")).select_by_value("")
    browser.find_element(By.ID, "critical").click()
    assert _rows(browser) == ["refund-evil"]
    browser.find_element(By.ID, "critical").click()
    browser.find_element(By.ID, "changed").click()
    assert _rows(browser) == ["judged-answer", "refund-evil"]
    browser.find_element(By.ID, "changed").click()
    Select(browser.find_element(By.ID, "status")).select_by_value("pass")
    assert _rows(browser) == ["greet"]
    Select(browser.find_element(By.ID, "status")).select_by_value("")

    Select(browser.find_element(By.ID, "sort")).select_by_value("cost")
    assert _rows(browser) == ["greet", "judged-answer", "refund-evil"]
    Select(browser.find_element(By.ID, "sort")).select_by_value("latency")
    assert _rows(browser)[:2] == ["judged-answer", "greet"]  # no latency sorts last
    Select(browser.find_element(By.ID, "sort")).select_by_value("score")
    assert _rows(browser)[0] == "refund-evil"  # 1.0 → 0.0 falls furthest

    browser.find_element(By.CSS_SELECTOR, 'tr[data-id="judged-answer"]').click()
    detail = browser.find_element(By.ID, "detail")
    assert detail.is_displayed()
    baseline, candidate = detail.find_elements(By.CSS_SELECTOR, ".side")
    assert baseline.find_element(By.TAG_NAME, "h3").text == "baseline"
    assert "We refund within 30 days." in baseline.text
    assert "score 0.750" in baseline.text
    assert "the judge's rationale: it refuses a refund policy allows" in candidate.text
    assert "score 0.250" in candidate.text
    assert '"order": "A-17"' in candidate.find_element(By.CSS_SELECTOR, "pre.tools").text
    assert "Refunds are allowed within 30 days." in candidate.text
    removed = [e.text for e in candidate.find_elements(By.CSS_SELECTOR, ".diff-text del")]
    added = [e.text for e in candidate.find_elements(By.CSS_SELECTOR, ".diff-text ins")]
    assert removed and added and "never" in " ".join(added)
    assert "tool calls, changed from the baseline's (by line)" in candidate.text
    assert any("A-17" in text for text in added)


def test_hostile_output_shows_as_text_and_runs_nothing(browser: WebDriver, page: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, page)
    browser.find_element(By.CSS_SELECTOR, 'tr[data-id="refund-evil"]').click()
    candidate = browser.find_elements(By.CSS_SELECTOR, "#detail .side")[1]
    output = candidate.find_element(By.CSS_SELECTOR, "pre.output").text
    assert "<script>window.__pwned=1</script>" in output
    assert '<img src=x onerror="window.__pwned=3">' in output
    assert '<a href="javascript:window.__pwned=4">click</a>' in output
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    assert browser.execute_script("return document.images.length") == 0
    assert browser.execute_script("return document.querySelectorAll('a[href]').length") == 0
    assert browser.execute_script("return document.scripts.length") == 2  # data, and its own
    assert browser.execute_script("return window.__violations") == []
    loaded = browser.execute_script("return performance.getEntriesByType('resource').length")
    assert loaded == 0  # nothing fetched: no network, no CDN


def test_the_policy_blocks_markup_that_got_past_escaping(
    browser: WebDriver, page: Path, tmp_path: Path
) -> None:
    """Defence in depth: were a script or a handler written into the page raw, the
    policy (only the page's own script, by its hash) refuses to run it."""
    raw = page.read_text()
    injected = raw.replace(
        "</body>",
        '<script>window.__pwned=1</script><img src="x" onerror="window.__pwned=2">'
        '<div id="leak"></div></body>',
    )
    tampered = tmp_path / "tampered.html"
    tampered.write_text(injected)
    _open(browser, tampered)  # the page's own script still runs
    assert browser.execute_script("return typeof window.__pwned") == "undefined"
    violations = browser.execute_script("return window.__violations")
    assert any(v.startswith("script-src") for v in violations), violations
    assert any(v.startswith("img-src") for v in violations), violations


def test_a_link_to_a_case_opens_it(browser: WebDriver, page: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get("about:blank")
    browser.get(page.as_uri() + "#greet")
    detail = browser.find_element(By.ID, "detail")
    assert detail.find_element(By.TAG_NAME, "h2").text == "greet"
    browser.get("about:blank")  # else only the hash changes, and the page stays as it was
    browser.get(page.as_uri() + "#no-such-case%ZZ")  # a malformed link opens nothing
    assert not browser.find_element(By.ID, "detail").is_displayed()
    assert browser.execute_script("return document.body.classList.contains('ready')")


def test_one_run_with_its_history_charts_draws_within_the_policy(
    browser: WebDriver, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    from gate.reporting import viewer

    history = {
        "trend": [
            {
                "created_at": f"2026-11-0{day}T00:00:00+00:00",
                "commit": f"c0ffee{day}",
                "pass_rate": rate,
                "cost_usd": 0.01 * day,
            }
            for day, rate in ((1, 0.5), (2, 0.75), (3, 1.0))
        ],
        "candidate": {"pass_rate": 0.9, "cost_usd": 0.02},
    }
    page = tmp_path / "run.html"
    viewer.write_page(page, viewer.run_page(_runs()[1], history))
    _open(browser, page)
    assert browser.find_element(By.ID, "verdict").text.lower() == "run"
    charts = browser.find_elements(By.CSS_SELECTOR, "#charts svg")
    assert len(charts) == 2  # pass rate, and cost (every run has one)
    assert len(charts[0].find_elements(By.TAG_NAME, "circle")) == 4  # 3 recorded, this run
    assert not browser.find_element(By.ID, "changed").is_displayed()  # no baseline to change from
    row = browser.find_element(By.CSS_SELECTOR, 'tr[data-id="greet"]')
    assert row.find_elements(By.TAG_NAME, "td")[1].text == "pass"
    assert browser.execute_script("return window.__violations") == []


def test_a_pairwise_verdict_shows_with_its_rationale(browser: WebDriver, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from gate.reporting import viewer
    from tests.reporting.test_viewer import pairwise_page

    page = tmp_path / "pairs.html"
    viewer.write_page(page, pairwise_page())
    _open(browser, page)
    browser.find_element(By.CSS_SELECTOR, 'tr[data-id="evil"]').click()
    pairs = browser.find_element(By.CSS_SELECTOR, "#detail ul.pairs").text
    assert "sample 1: loss" in pairs
    assert "the judge's rationale: the baseline's <b>answer</b> is kinder" in pairs
    assert browser.execute_script("return document.querySelectorAll('#detail b').length") == 0
    assert browser.execute_script("return window.__violations") == []
