"""`similar` and `levenshtein`: closeness to a reference text, by words or by embeddings.

Embeddings come from the real `openai` SDK pointed at a loopback server speaking
`/v1/embeddings` (tests/fakes/openai_services.py), or from a python target, and
are recorded and replayed like outputs.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gate import checks
from gate.checks.similar import figure
from gate.cli import main
from gate.deciding import basetree, rulerdiff, rulerside
from gate.deciding.recheck import recheck, snapshot
from gate.judging.sample import judge_sample
from gate.judging.services import Services
from gate.outputs import Output
from gate.produce.answers import Answer
from gate.produce.services.embeddings import Embedder, as_float32, cosine
from gate.produce.services.recorded import Snapshot
from gate.results import read_results
from gate.suite.project import load_project
from tests.conftest import OPENAI_KEY, Project, case
from tests.fakes.actions import init_repository
from tests.fakes.llm_server import Fault
from tests.fakes.openai_services import FakeOpenAIServices, embed

REFUND = "plain: refunds go back to your card within five days"


class WordEmbedder:
    """Stands in for gate.produce.services.embeddings.Embedder in check-level tests: the loopback
    server's word-count vectors, compared as casegate compares them."""

    def describe(self) -> str:
        return "python words"

    def similarity(self, case_id: str, reference: str, text: str) -> float:
        return cosine(as_float32(embed(reference)), as_float32(embed(text)))


def judged(expect: dict[str, Any], text: str) -> checks.Verdict:
    subject = checks.Subject(text, {}, services=Services(embedder=WordEmbedder()))  # type: ignore[arg-type]
    verdicts = checks.evaluate(checks.build(expect), subject)
    assert len(verdicts) == 1
    return verdicts[0]


def lexical(to: str, minimum: float = 0.8) -> dict[str, Any]:
    return {"similar": {"to": to, "min": minimum, "method": "lexical"}}


# --- the checks themselves ----------------------------------------------------------


def test_lexical_similarity_ignores_case_punctuation_and_word_order() -> None:
    assert judged(lexical("Refunds go back to your card."), "your card: REFUNDS go back to").ok
    verdict = judged(lexical("Refunds go back to your card in 5 days"), "We never refund anything.")
    assert not verdict.ok
    assert verdict.reason.startswith("similarity 0.")
    assert verdict.reason.endswith(
        '(lexical, token_sort_ratio) to "Refunds go back to your card…, the minimum is 0.8'
    )


def test_lexical_similarity_counts_words_the_reference_lacks() -> None:
    # token_set_ratio would score this 1.0: every word of the reference is in it.
    padded = "refunds go back to your card " + "but first call us and wait " * 5
    verdict = judged(lexical("refunds go back to your card"), padded)
    assert not verdict.ok and verdict.reason.startswith("similarity 0.29 ")


def test_a_score_is_shown_on_its_own_side_of_the_limit() -> None:
    assert figure(0.7999, 0.8) == "0.7999"  # never "0.80", which would read as a pass
    assert figure(0.62, 0.8) == "0.62"
    assert figure(0.5004, 0.5) == "0.5004"


def test_embedding_similarity_names_the_model_and_the_reference() -> None:
    expect = {"similar": {"to": "refunds go back to your card", "min": 0.9}}
    assert judged(expect, "Refunds go back to your card!").ok
    verdict = judged(expect, "our office is closed on sundays")
    assert not verdict.ok
    assert '(embedding, cosine, python words) to "refunds go back to your card"' in verdict.reason
    assert verdict.reason.endswith("the minimum is 0.9")


def test_an_output_too_long_to_compare_fails_without_a_call() -> None:
    verdict = judged({"similar": {"to": "x y", "min": 0.1}}, "x y " * 5000)
    assert not verdict.ok
    assert verdict.reason == (
        "the output is 20,000 characters, more than the 8,000 similar compares, so it is not "
        'judged similar to "x y"'
    )


def test_embedding_similarity_without_a_service_fails_with_the_fix() -> None:
    built = checks.build({"similar": {"to": "a", "min": 0.5}})
    verdict = checks.evaluate(built, checks.Subject("a", {}))[0]
    assert not verdict.ok and "add `embeddings:` to the config" in verdict.reason


def test_levenshtein_counts_edits_and_bounds_them_by_length() -> None:
    expect = {"levenshtein": {"to": "ORD-1234", "max": 1}}
    assert judged(expect, "ORD-1235").ok
    verdict = judged(expect, "ORD-9935")
    assert verdict.reason == 'edit distance 3 to "ORD-1234", the maximum is 1'
    verdict = judged(expect, "ORD-1234 " * 1000)
    assert verdict.reason == (
        'edit distance at least 8,992 to "ORD-1234" (the lengths differ by that much), '
        "the maximum is 1"
    )
    assert judged({**expect, "normalize": ["strip", "lower"]}, "  ord-1234\n").ok


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ({"to": "x"}, "similar takes {to:"),
        ({"to": "x", "min": 0.5, "methd": "lexical"}, "(unknown: methd)"),
        ({"to": "", "min": 0.5}, "`to` must be a non-empty string"),
        ({"to": "x", "min": 1.5}, "`min` must be a number from 0 to 1"),
        ({"to": "x", "min": True}, "`min` must be a number from 0 to 1"),
        ({"to": "x", "min": 0.5, "method": "cosine"}, "`method` is embedding or lexical"),
        ({"to": "?!", "min": 0.5, "method": "lexical"}, "no letter or digit"),
        ({"to": "x" * 8001, "min": 0.5}, "`to` is 8,001 characters; the limit is 8,000"),
        ("x", "similar takes {to:"),
    ],
)
def test_similar_arguments_are_checked_when_the_cases_load(arg: Any, message: str) -> None:
    with pytest.raises(checks.CheckSpecError, match=re.escape(message)):
        checks.build({"similar": arg})


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ({"to": "x", "max": -1}, "`max` must be a whole number from 0 to 8,000"),
        ({"to": "x", "max": 2.5}, "`max` must be a whole number"),
        ({"to": 3, "max": 1}, "`to` must be a non-empty string"),
        ({"max": 1}, "levenshtein takes {to:"),
    ],
)
def test_levenshtein_arguments_are_checked_when_the_cases_load(arg: Any, message: str) -> None:
    with pytest.raises(checks.CheckSpecError, match=re.escape(message)):
        checks.build({"levenshtein": arg})


ALL = {
    "similar": {"to": "Refunds go back to your card", "min": 0.7},
    "levenshtein": {"to": "ORD-1234", "max": 3},
}


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(max_size=300)
    | st.builds(
        lambda unit, size: (unit * (size // len(unit) + 1))[:size],
        st.text(min_size=1, max_size=12),
        st.integers(min_value=7_990, max_value=8_010),  # around the limit on what is compared
    )
)
def test_no_closeness_check_raises_on_arbitrary_text(text: str) -> None:
    for method in ("embedding", "lexical"):
        expect = {**ALL, "similar": {**ALL["similar"], "method": method}}
        subject = checks.Subject(text, {}, services=Services(embedder=WordEmbedder()))  # type: ignore[arg-type]
        verdicts = checks.evaluate(checks.build(expect), subject)
        assert len(verdicts) == 2
        assert all(v.ok or v.reason for v in verdicts)
        assert not any(v.reason.startswith("check crashed") for v in verdicts)
        for verdict in verdicts:
            if verdict.reason.startswith("similarity "):  # the score shown is below the minimum
                assert float(verdict.reason.split()[1]) < 0.7


# --- record and replay through the real SDK -----------------------------------------


@pytest.fixture
def services_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServices]:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAIServices() as server:
        yield server


SIMILAR_CASES = [
    case("close", "refunds go back to your card", similar={"to": REFUND, "min": 0.8}),
    case("far", "the weather today", similar={"to": REFUND, "min": 0.8}),
]


def embedding_project(project: Project, url: str, **pin: Any) -> None:
    project.write_config(
        embeddings={
            "provider": "openai",
            "model": "text-embedding-3-small",
            "base_url": url + "/v1",
            "max_retries": 1,
            **pin,
        }
    )
    project.write_cases(SIMILAR_CASES)


def results_of(path: str | Path) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(Path(path).read_text())["cases"]}


def test_record_then_replay_offline_gives_the_recorded_scores(project: Project) -> None:
    with FakeOpenAIServices() as server, pytest.MonkeyPatch.context() as env:
        env.setenv("OPENAI_API_KEY", OPENAI_KEY)
        embedding_project(project, server.url)
        assert main(["record", "--quiet", "--out", "rec.json"]) == 0
        sent = server.calls("/v1/embeddings")
        assert sent and sent[0].body["model"] == "text-embedding-3-small"
        assert sent[0].body["encoding_format"] == "float"
        assert sent[0].headers.get("Authorization", sent[0].headers.get("authorization")) == (
            f"Bearer {OPENAI_KEY}"
        )
    # The server is gone and the key unset: replay needs neither.
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    recorded, replayed = results_of("rec.json"), results_of("replay.json")
    assert replayed["close"]["status"] == "pass"
    assert replayed["far"]["status"] == "fail"
    assert replayed["far"]["reason"] == recorded["far"]["reason"]  # the very same score
    assert "(embedding, cosine, openai text-embedding-3-small)" in replayed["far"]["reason"]
    stored = json.loads((project.root / "recordings" / "far.json").read_text())["responses"]
    embeddings = {k: v for k, v in stored.items() if k.startswith("emb-")}
    assert len(embeddings) == 2  # the reference and the output
    assert {entry["text"] for entry in embeddings.values()} == {REFUND, "plain: the weather today"}
    assert all(entry["dimensions"] == 33 for entry in embeddings.values())
    for path in (project.root / "recordings").glob("*.json"):
        assert OPENAI_KEY not in path.read_text()


def test_a_replay_miss_names_the_cases_and_casegate_record(
    project: Project, services_server: FakeOpenAIServices, capsys: pytest.CaptureFixture[str]
) -> None:
    embedding_project(project, services_server.url)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--quiet", "--set", "embeddings.model=text-embedding-3-large"]) == 2
    err = capsys.readouterr().err
    assert "no embedding recording for 2 case(s)" in err and "close, far" in err
    assert "casegate record --for-baseline --only-missing" in err


def test_record_only_missing_asks_only_for_what_replay_would_miss(
    project: Project, services_server: FakeOpenAIServices
) -> None:
    embedding_project(project, services_server.url)
    assert main(["record", "--quiet"]) == 0
    asked = len(services_server.calls("/v1/embeddings"))
    assert main(["record", "--only-missing", "--quiet"]) == 0
    assert len(services_server.calls("/v1/embeddings")) == asked
    project.write_cases(
        [*SIMILAR_CASES, case("new", "a new question", similar={"to": REFUND, "min": 0.1})]
    )
    assert main(["record", "--only-missing", "--quiet", "--out", "more.json"]) == 0
    (new,) = services_server.calls("/v1/embeddings")[asked:]
    assert new.texts == [REFUND, "plain: a new question"]  # its own file holds neither yet
    assert results_of("more.json")["new"]["status"] == "pass"


def test_a_missing_embedding_makes_the_sample_an_error_naming_record(project: Project) -> None:
    embedding_project(project, "http://127.0.0.1:9")
    loaded, cases = load_project(project.config_path)
    assert loaded.config.embeddings is not None
    embedder = Embedder(loaded.config.embeddings, mode="replay", entries=Snapshot({}))
    close = next(c for c in cases if c.id == "close")
    sample = judge_sample(close, 0, Answer(Output(text=REFUND)), loaded, None, Services(embedder))
    assert sample.status == "error"
    assert sample.reason.startswith("embeddings: no recorded embedding for this text under openai")
    assert "`casegate record --only-missing`" in sample.reason
    assert embedder.missing == ["close"]


def test_an_outage_is_an_error_never_a_pass(
    project: Project, services_server: FakeOpenAIServices
) -> None:
    embedding_project(project, services_server.url)
    services_server.fail("the weather", *[Fault(503)] * 2)
    assert main(["run", "--mode", "live", "--quiet", "--out", "live.json"]) == 0
    results = results_of("live.json")
    assert results["far"]["status"] == "error"  # it fails on a working day; never a pass
    assert results["far"]["reason"].startswith("embeddings: openai API answered HTTP 503")
    assert "gave up after 2 attempts" in results["far"]["reason"]
    assert results["close"]["status"] == "pass"


def test_a_key_the_server_refuses_is_named_and_never_recorded(
    project: Project, services_server: FakeOpenAIServices
) -> None:
    embedding_project(project, services_server.url)
    services_server.fail(
        "the weather",
        Fault(
            401,
            body=json.dumps(
                {
                    "error": {
                        "message": f"Incorrect API key provided: {OPENAI_KEY}",
                        "type": "invalid_request_error",
                    }
                }
            ),
        ),
    )
    assert main(["record", "--quiet", "--out", "rec.json"]) == 2  # a call failed: said
    far = results_of("rec.json")["far"]
    assert far["status"] == "error" and "(check the key in OPENAI_API_KEY)" in far["reason"]
    assert "Incorrect API key provided: ***" in far["reason"]
    assert OPENAI_KEY not in Path("rec.json").read_text()
    stored = json.loads((project.root / "recordings" / "far.json").read_text())["responses"]
    assert not any(key.startswith("emb-") for key in stored)  # a failed call is never stored


WORD_EMBEDDER = """
import re, hashlib

CALLS = []

def embed(texts):
    CALLS.append(len(texts))
    vectors = []
    for text in texts:
        vector = [0.0] * 16 + [1.0]
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            vector[hashlib.sha256(word.encode()).digest()[0] % 16] += 1.0
        vectors.append(vector)
    return vectors
"""


def python_embedding_project(project: Project, module: str) -> None:
    project.write_text(f"{module}.py", WORD_EMBEDDER)
    project.write_config(
        embeddings={"provider": "python", "target": f"{module}:embed", "model": "words-v1"}
    )
    project.write_cases(SIMILAR_CASES)


def test_a_python_embedder_is_recorded_and_never_imported_in_replay(project: Project) -> None:
    module = f"embedder_{project.module}"
    python_embedding_project(project, module)
    assert main(["record", "--quiet", "--out", "rec.json"]) == 0
    assert results_of("rec.json")["close"]["status"] == "pass"
    (project.root / f"{module}.py").write_text("raise RuntimeError('imported in replay')\n")
    assert main(["run", "--quiet", "--out", "replay.json"]) == 0
    replayed = results_of("replay.json")
    assert replayed["far"]["reason"] == results_of("rec.json")["far"]["reason"]
    assert "(embedding, cosine, python " in replayed["far"]["reason"]


def test_a_python_embedder_that_answers_wrongly_makes_an_error(project: Project) -> None:
    module = f"embedder_{project.module}"
    python_embedding_project(project, module)
    project.write_text(f"{module}.py", "def embed(texts):\n    return [[0.0, float('nan')]]\n")
    assert main(["run", "--mode", "live", "--quiet", "--out", "live.json"]) == 0
    far = results_of("live.json")["far"]
    assert far["status"] == "error"
    assert far["reason"].startswith(f"embeddings: {module}:embed returned 1 item(s) for 2 texts")


@pytest.mark.parametrize(
    ("embeddings", "problem"),
    [
        (None, "case 'close' uses similar (method embedding) but"),
        ({"provider": "openai"}, "embeddings.model is required for provider 'openai'"),
        ({"provider": "python", "model": "m"}, "embeddings.target is required"),
        ({"provider": "python", "target": "nowhere_x:embed"}, "cannot import 'nowhere_x'"),
        ({"provider": "bard", "model": "m"}, "embeddings.provider: Input should be"),
        ({"provider": "openai", "model": "m", "modle": "x"}, "unknown key 'embeddings.modle'"),
    ],
)
def test_a_bad_or_missing_pin_is_refused_with_its_line(
    project: Project, capsys: pytest.CaptureFixture[str], embeddings: Any, problem: str
) -> None:
    project.write_config(**({"embeddings": embeddings} if embeddings else {}))
    project.write_cases(SIMILAR_CASES)
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert problem in err, err
    assert "Traceback" not in err


def test_prune_keeps_the_embeddings_in_use_and_deletes_the_stale_ones(
    project: Project, services_server: FakeOpenAIServices, capsys: pytest.CaptureFixture[str]
) -> None:
    embedding_project(project, services_server.url)
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["recordings", "prune", "--dry-run"]) == 0
    assert "nothing to prune: every recording is in use" in capsys.readouterr().out
    embedding_project(project, services_server.url, model="text-embedding-3-large")
    assert main(["record", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["recordings", "prune"]) == 0
    out = capsys.readouterr().out
    # Each file: the old model's vectors of the reference and of the output.
    assert "recordings/far.json: 2 of 5 responses unused" in out
    assert 'of "plain: the weather today", embeddings, text-embedding-3-small' in out
    assert main(["run", "--quiet"]) == 0  # what replay needs is still there


# --- the ruler and the gate's own process -------------------------------------------


def changes(project: Project, tmp_path: Path, *overrides: str) -> list[str]:
    tree, refused = basetree.extract_tree(project.root, "HEAD", tmp_path / "scratch")
    base = rulerside.load_side(tree / "casegate.yml", (), tree, refused=refused)
    head = rulerside.load_side(project.config_path, overrides, project.root)
    return [
        f"{'-' if c.loosens else '+'} {c.describe()}" for c in rulerdiff.compare_rulers(base, head)
    ]


def test_a_changed_embeddings_pin_is_a_ruler_change(project: Project, tmp_path: Path) -> None:
    embedding_project(project, "http://127.0.0.1:9")
    init_repository(project.root)
    assert changes(project, tmp_path / "a") == []
    assert changes(project, tmp_path / "b", "embeddings.model=text-embedding-3-large") == [
        "- embeddings service: openai text-embedding-3-small → openai text-embedding-3-large"
    ]
    assert changes(project, tmp_path / "c", "embeddings.base_url=http://elsewhere/v1") == [
        "- embeddings service: openai text-embedding-3-small: base_url changed"
    ]


def test_the_gate_judges_similarity_again_from_the_snapshot(
    project: Project, services_server: FakeOpenAIServices
) -> None:
    embedding_project(project, services_server.url)
    assert main(["record", "--quiet", "--out", "run.json"]) == 0
    loaded, cases = load_project(project.config_path)
    before = snapshot(loaded, cases, "replay")
    claimed = read_results(project.root / "run.json")
    far = claimed.case_map()["far"].outputs[0]
    far.checks[0].ok, far.status = True, "pass"  # the run says "similar enough"
    judged = recheck(claimed, loaded, cases, before).case_map()
    assert judged["far"].status == "fail" and "similarity 0." in judged["far"].reason
    # Outside replay there is nothing to measure with: the run's word stands.
    claimed = read_results(project.root / "run.json")
    claimed.case_map()["far"].outputs[0].checks[0].ok = True
    assert recheck(claimed, loaded, cases, None).case_map()["far"].status == "pass"


FORGER = """
import json, pathlib

# Runs in the supervised child when the suite imports its custom checks: it makes every
# recorded embedding of case 'far' the same vector, so any output looks identical to the
# reference.
path = pathlib.Path(__file__).parent / "recordings" / "far.json"
document = json.loads(path.read_text())
vectors = [e for k, e in document["responses"].items() if k.startswith("emb-")]
for entry in vectors:
    entry["vector"] = vectors[0]["vector"]
    entry["dimensions"] = vectors[0]["dimensions"]
path.write_text(json.dumps(document))

def ok(text, case):
    return True
"""


def test_code_in_the_run_cannot_forge_a_similarity_pass(project: Project) -> None:
    from gate.pipeline.check import check

    module = f"embedder_{project.module}"
    python_embedding_project(project, module)
    assert main(["record", "--quiet"]) == 0
    assert main(["baseline", "--quiet"]) == 0
    forger = f"forger_{project.module}"
    project.write_text(f"{forger}.py", FORGER)
    project.write_cases(
        [
            SIMILAR_CASES[0],
            {**SIMILAR_CASES[1], "expect": {**SIMILAR_CASES[1]["expect"], "check": f"{forger}:ok"}},
        ]
    )
    loaded, cases = load_project(project.config_path)
    assert loaded.baseline_path is not None
    outcome = check(
        loaded,
        cases,
        baseline_path=loaded.baseline_path,
        mode="replay",
        out=project.root / "check.json",
        show_progress=False,
    )
    # The forgery worked inside the run: the recordings it could read give every text the
    # reference's vector. (The run no longer judges `similar` in replay: the gate does.)
    forged = json.loads((project.root / "recordings" / "far.json").read_text())["responses"]
    assert len({json.dumps(e["vector"]) for k, e in forged.items() if k.startswith("emb-")}) == 1
    judged = outcome.candidate.case_map()["far"]
    assert judged.status == "fail"  # ...and the gate's own process did not believe it
    assert "similarity 0." in judged.reason
    assert results_of(project.root / "check.json")["far"]["status"] == "fail"  # its account


def test_validate_lists_the_config_line_of_a_bad_python_target(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.config_path.write_text(
        textwrap.dedent(
            f"""\
            suite: demo
            cases: cases
            system: {{name: echo, provider: python, target: "{project.module}:answer"}}
            recordings: recordings
            embeddings:
              provider: python
              target: "missing_{project.module}:embed"
            """
        )
    )
    project.write_cases(SIMILAR_CASES)
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "casegate.yml:7: embeddings.target: cannot import" in err


@pytest.mark.parametrize(
    ("vector", "problem"),
    [
        ([float("nan"), 1.0], "a vector holds nan, not a finite 32-bit number"),
        ([1e39], "a vector holds 1e+39, not a finite 32-bit number"),
        ([10**400], "not a finite 32-bit number"),
        ([True, 1.0], "a vector holds bool True, not a number"),
        ("0.1 0.2", "a vector must be a list of numbers, not str"),
        ([], "a vector must have 1 to 65,536 numbers, not 0"),
    ],
)
def test_a_vector_that_is_not_one_is_refused(vector: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        as_float32(vector)


def test_a_numpy_array_is_a_vector() -> None:
    import numpy as np

    assert as_float32(np.array([0.5, 2.0], dtype=np.float32)) == (0.5, 2.0)
    assert cosine(as_float32(np.array([1.0, 0.0])), as_float32([0.0, 3.0])) == 0.0
    with pytest.raises(ValueError, match="all zeros"):
        cosine(as_float32([0.0, 0.0]), as_float32([1.0, 1.0]))
