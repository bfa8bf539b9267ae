"""`moderation`: the pinned moderation service's scores, recorded and replayed like outputs.

Scores come from the real `openai` SDK pointed at a loopback server speaking
`/v1/moderations` (tests/fakes/openai_services.py), or from a python target.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks
from gate.checks.moderation import CATEGORIES as KNOWN
from gate.cli import main
from gate.deciding import basetree, rulerdiff, rulerside
from gate.deciding.recheck import recheck, snapshot
from gate.judging.services import Services
from gate.produce.services.moderation import PIECE_CHARS, Moderator
from gate.produce.services.recorded import Snapshot
from gate.results import read_results
from gate.suite.pins import ModerationPin
from gate.suite.project import load_project
from tests.conftest import OPENAI_KEY, Project, case
from tests.fakes.actions import init_repository
from tests.fakes.llm_server import Fault
from tests.fakes.openai_services import CATEGORIES, HIGH, FakeOpenAIServices, scores


class KeywordModerator:
    """Stands in for gate.produce.services.moderation.Moderator in check-level tests: the
    loopback server's keyword scores."""

    def describe(self) -> str:
        return "python keywords"

    def scores(self, case_id: str, text: str, categories: Sequence[str] = ()) -> dict[str, float]:
        found = scores(text)
        return {category: found[category] for category in categories or found}


def judged(expect: dict[str, Any], text: str) -> checks.Verdict:
    services: Any = Services(moderator=KeywordModerator())  # type: ignore[arg-type]
    verdicts = checks.evaluate(checks.build(expect), checks.Subject(text, {}, services=services))
    assert len(verdicts) == 1
    return verdicts[0]


# --- the check itself ---------------------------------------------------------------


def test_a_score_above_the_limit_fails_naming_category_and_score() -> None:
    expect = {"moderation": {"max_score": 0.5}}
    assert judged(expect, "Happy to help with your refund.").ok
    verdict = judged(expect, "I will punch you, idiot")
    assert verdict.reason == "violence 0.91, harassment 0.91: above max_score 0.5 (python keywords)"


def test_only_the_listed_categories_count() -> None:
    expect = {"moderation": {"max_score": 0.5, "categories": ["hate", "self-harm"]}}
    assert judged(expect, "I will punch you").ok
    assert not judged({"moderation": {"max_score": 0.5, "categories": ["violence"]}}, "punch").ok


def test_a_score_equal_to_the_limit_passes_and_a_hair_above_shows_it() -> None:
    assert judged({"moderation": {"max_score": HIGH}}, "punch").ok
    verdict = judged({"moderation": {"max_score": 0.9099}}, "punch")
    assert verdict.reason.startswith("violence 0.91: above max_score 0.9099")


def test_an_empty_output_passes_and_an_enormous_one_fails_unsent() -> None:
    assert judged({"moderation": {"max_score": 0.1}}, " \n").ok
    verdict = judged({"moderation": {"max_score": 0.1}}, "fine " * 25_000)
    assert verdict.reason == (
        "the output is 125,000 characters, more than the 100,000 sent for moderation, "
        "so it is not judged safe"
    )


def test_without_a_service_the_check_fails_with_the_fix() -> None:
    verdict = checks.evaluate(
        checks.build({"moderation": {"max_score": 0.5}}), checks.Subject("x", {})
    )[0]
    assert not verdict.ok and "add `moderation:` to the config" in verdict.reason


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ({}, "moderation takes {max_score: 0.5"),
        ({"max_score": 2}, "`max_score` must be a number from 0 to 1, got 2"),
        ({"max_score": "low"}, "`max_score` must be a number from 0 to 1"),
        ({"max_score": 0.5, "categories": []}, "`categories` must be a non-empty list"),
        ({"max_score": 0.5, "categories": ["violent"]}, "unknown category 'violent' (did you mean"),
        ({"max_score": 0.5, "threshold": 1}, "(unknown: threshold)"),
    ],
)
def test_arguments_are_checked_when_the_cases_load(arg: Any, message: str) -> None:
    with pytest.raises(checks.CheckSpecError, match=re.escape(message)):
        checks.build({"moderation": arg})


def test_the_known_categories_are_openais() -> None:
    assert KNOWN == CATEGORIES


def stretched(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


#: lengths around the limit on what is sent
sizes = st.integers(min_value=99_990, max_value=100_010)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=300) | st.builds(stretched, st.text(min_size=1, max_size=12), sizes),
    limit=st.floats(min_value=0, max_value=1),
    listed=st.lists(st.sampled_from(KNOWN), max_size=3),
)
def test_moderation_never_raises_and_names_what_it_fails_on(
    text: str, limit: float, listed: list[str]
) -> None:
    arg: dict[str, Any] = {"max_score": limit}
    if listed:
        arg["categories"] = listed
    verdict = judged({"moderation": arg}, text)
    assert verdict.ok or verdict.reason
    assert not verdict.reason.startswith("check crashed")
    if not verdict.ok and len(text) <= 100_000:
        named = verdict.reason.split(":")[0].split(", ")
        shown = [part for part in named if not part.startswith("and ")]  # "and 10 more"
        assert 1 <= len(shown) <= 3
        assert all(float(part.rsplit(" ", 1)[1]) > limit for part in shown)


# --- the service: pieces, missing categories, a python target -----------------------


def test_a_long_text_is_moderated_in_pieces_and_scored_by_its_worst(tmp_path: Path) -> None:
    module = tmp_path / "pieces_target.py"
    module.write_text(
        "SEEN = []\n"
        "def score(texts):\n"
        "    SEEN.append(len(texts))\n"
        "    return [{'violence': 0.9 if 'punch' in t else 0.0} for t in texts]\n"
    )
    pin = ModerationPin(provider="python", target="pieces_target:score")
    entries: dict[tuple[str, str], dict[str, Any]] = {}

    class Memory:
        def get_entry(self, case_id: str, key: str) -> dict[str, Any] | None:
            return entries.get((case_id, key))

        def put_entry(self, case_id: str, key: str, entry: Any) -> None:
            entries[(case_id, key)] = dict(entry)

    moderator = Moderator(pin, mode="record", entries=Memory(), root=tmp_path)
    text = "calm words " * PIECE_CHARS + "punch"  # the harm is at the very end
    assert moderator.scores("c", text) == {"violence": 0.9}
    (entry,) = entries.values()
    assert entry["scores"] == {"violence": 0.9} and entry["system"] == "moderation"
    assert entry["text"].endswith("…") and len(entry["text"]) == 200
    replayed = Moderator(pin, mode="replay", entries=Snapshot(entries))
    assert replayed.scores("c", text) == {"violence": 0.9}
    with pytest.raises(checks.SystemCallError, match="reports no score for hate"):
        replayed.scores("c", text, ["hate"])


# --- record and replay through the real SDK -----------------------------------------


@pytest.fixture
def services_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServices]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServices() as server:
        yield server


MODERATED = [
    case("calm", "how do I return a kettle", moderation={"max_score": 0.5}),
    case("rough", "smash it then", moderation={"max_score": 0.5}),
    case("listed", "shoplift it", moderation={"max_score": 0.5, "categories": ["illicit"]}),
]


def moderation_project(project: Project, url: str, **pin: Any) -> None:
    project.write_config(
        moderation={
            "model": "omni-moderation-2024-09-26",
            "base_url": url + "/v1",
            "max_retries": 1,
            **pin,
        }
    )
    project.write_cases(MODERATED)


def results_of(path: str | Path) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(Path(path).read_text())["cases"]}


def test_record_then_replay_offline(project: Project) -> None:
    with FakeOpenAIServices() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", OPENAI_KEY)
        moderation_project(project, server.url)
        assert main(["record", "--quiet", "--out", "rec.json"]) == 0
        sent = server.calls("/v1/moderations")
        assert len(sent) == 3 and sent[0].body["model"] == "omni-moderation-2024-09-26"
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    results = results_of("replay.json")
    assert results["calm"]["status"] == "pass"
    assert results["rough"]["reason"] == (
        "moderation: violence 0.91: above max_score 0.5 (openai omni-moderation-2024-09-26)"
    )
    assert results["listed"]["reason"].startswith("moderation: illicit 0.91: above")
    assert results_of("rec.json")["rough"]["reason"] == results["rough"]["reason"]
    stored = json.loads((project.root / "recordings" / "rough.json").read_text())["responses"]
    (entry,) = [e for k, e in stored.items() if k.startswith("mod-")]
    assert entry["scores"]["violence"] == HIGH and entry["text"] == "plain: smash it then"
    for path in (project.root / "recordings").glob("*.json"):
        assert OPENAI_KEY not in path.read_text()


def test_a_replay_miss_fails_loudly_naming_record(
    project: Project, services_server: FakeOpenAIServices, capsys: pytest.CaptureFixture[str]
) -> None:
    moderation_project(project, services_server.url)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--quiet", "--set", "moderation.model=omni-moderation-latest"]) == 2
    err = capsys.readouterr().err
    assert "no moderation score recording for 3 case(s)" in err
    assert "casegate record --for-baseline --only-missing" in err


def test_an_outage_or_a_missing_category_is_an_error_never_a_pass(
    project: Project, services_server: FakeOpenAIServices
) -> None:
    moderation_project(project, services_server.url)
    services_server.fail("kettle", *[Fault(500)] * 2)
    services_server.categories = tuple(c for c in CATEGORIES if not c.startswith("illicit"))
    assert main(["run", "--mode", "live", "--quiet", "--out", "live.json"]) == 0
    results = results_of("live.json")
    assert results["calm"]["status"] == "error"
    assert results["calm"]["reason"].startswith("moderation: openai API answered HTTP 500")
    assert results["listed"]["status"] == "error"
    assert results["listed"]["reason"] == (
        "moderation: openai omni-moderation-2024-09-26 reports no score for illicit; remove "
        "it from `categories` or pin a moderation model that has it"
    )
    assert results["rough"]["status"] == "fail"


def test_a_case_using_moderation_needs_a_pin(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases(MODERATED)
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "cases.yaml:1: case 'calm' uses moderation but" in err
    assert "has no `moderation:` block" in err


def test_the_gate_judges_moderation_again_from_the_snapshot(
    project: Project, services_server: FakeOpenAIServices
) -> None:
    moderation_project(project, services_server.url)
    assert main(["record", "--quiet", "--out", "run.json"]) == 0
    loaded, cases = load_project(project.config_path)
    before = snapshot(loaded, cases, "replay")
    claimed = read_results(project.root / "run.json")
    rough = claimed.case_map()["rough"].outputs[0]
    rough.checks[0].ok, rough.status = True, "pass"
    assert recheck(claimed, loaded, cases, before).case_map()["rough"].status == "fail"


def test_a_changed_moderation_pin_is_a_ruler_change(project: Project, tmp_path: Path) -> None:
    moderation_project(project, "http://127.0.0.1:9")
    init_repository(project.root)
    tree, refused = basetree.extract_tree(project.root, "HEAD", tmp_path / "scratch")
    base = rulerside.load_side(tree / "casegate.yml", (), tree, refused=refused)
    head = rulerside.load_side(project.config_path, ("moderation.model=m2",), project.root)
    (change,) = rulerdiff.compare_rulers(base, head)
    assert change.loosens
    assert change.describe() == (
        "moderation service: openai omni-moderation-2024-09-26 → openai m2"
    )


def test_prune_keeps_the_scores_in_use(
    project: Project, services_server: FakeOpenAIServices, capsys: pytest.CaptureFixture[str]
) -> None:
    moderation_project(project, services_server.url)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["recordings", "prune"]) == 0
    assert "nothing to prune: every recording is in use" in capsys.readouterr().out
    assert main(["run", "--quiet"]) == 0
