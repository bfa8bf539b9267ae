"""Clustering near-duplicate requests and ranking the clusters (gate/grow/rank.py)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
from rapidfuzz import fuzz, utils

from gate.cli import main
from gate.grow.exchange import Exchange, Message
from gate.grow.nearby import THRESHOLD
from gate.grow.rank import WINDOW, clusters_of, rank
from gate.suite.sections import Price
from tests.conftest import Project, case
from tests.grow.test_sources import DATA


def exchange(text: str, **fields: object) -> Exchange:
    return Exchange(
        kind="log", file="f", line=1, ids=(), messages=(Message("user", text),), **fields
    )  # type: ignore[arg-type]


def brute_force(texts: list[str]) -> set[frozenset[int]]:
    """Clusters by comparing every pair: what the blocking must agree with."""
    parent = list(range(len(texts)))

    def find(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in itertools.combinations(range(len(texts)), 2):
        score = fuzz.token_sort_ratio(texts[a], texts[b], processor=utils.default_process)
        if score >= THRESHOLD:
            parent[find(b)] = find(a)
    groups: dict[int, set[int]] = {}
    for i in range(len(texts)):
        groups.setdefault(find(i), set()).add(i)
    return {frozenset(g) for g in groups.values()}


def test_reworded_copies_cluster_and_different_requests_do_not() -> None:
    texts = [
        "Where is my order A12345?",
        "where is my order a12345",
        "Order A12345: where is my?",  # the same words, reordered
        "Where is my parcell A12345?",  # misspelt: below the threshold against the others
        "Can I change my delivery address?",
        "can I change my delivery adress?",
    ]
    groups = {frozenset(g) for g in clusters_of(texts)}
    assert groups == brute_force(texts)
    assert frozenset({0, 1, 2}) in groups and frozenset({4, 5}) in groups


def test_blocking_agrees_with_every_pair_compared_on_a_crowded_bucket() -> None:
    # Every text shares its longest word, so one bucket holds them all and is compared in
    # overlapping windows: the clusters must still be every pair's.
    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta"]
    texts = []
    for _ in range(WINDOW * 2 + 50):
        chosen = rng.sample(words, 4)
        texts.append("supercalifragilistic " + " ".join(chosen))
    assert {frozenset(g) for g in clusters_of(texts)} == brute_force(texts)


def test_clusters_rank_failed_then_flagged_then_cost_then_novelty() -> None:
    exchanges = [
        exchange("cheap and ordinary question here", input_tokens=10),
        exchange("an expensive question asked once", input_tokens=9000),
        exchange("a question a user flagged", flagged="user.feedback=negative", input_tokens=1),
        exchange("a question that failed", error="span status ERROR", input_tokens=1),
        exchange("cheap and ordinary question here!", input_tokens=10),
    ]
    clusters, unit = rank(exchanges, ["nothing like these"], {})
    assert unit == "tokens"
    assert [c.representative.user_text() for c in clusters] == [
        "a question that failed",
        "a question a user flagged",
        "an expensive question asked once",
        "cheap and ordinary question here",
    ]
    assert len(clusters[-1].members) == 2 and clusters[-1].cost == 20


def test_cost_is_in_dollars_when_every_call_with_usage_is_priced() -> None:
    priced = [
        exchange("a", model="big", input_tokens=1_000_000),
        exchange("b", model="small", output_tokens=1_000_000),
        exchange("c", cost_usd=0.5),
    ]
    pricing = {"big": Price(input=3.0, output=15.0), "small": Price(input=0.1, output=0.4)}
    clusters, unit = rank(priced, [], pricing)
    assert unit == "USD"
    assert [(c.representative.user_text(), c.cost) for c in clusters] == [
        ("a", 3.0),
        ("c", 0.5),
        ("b", 0.4),
    ]
    # one call of an unpriced model: every cost falls back to tokens, never a mix
    _, unit = rank([*priced, exchange("d", model="unknown", input_tokens=5)], [], pricing)
    assert unit == "tokens"


def test_novelty_breaks_ties_in_favour_of_what_the_suite_lacks() -> None:
    exchanges = [exchange("how long do refunds take"), exchange("is the coat waterproof")]
    clusters, _ = rank(exchanges, ["how long do refunds take to arrive"], {})
    assert [c.representative.user_text() for c in clusters] == [
        "is the coat waterproof",
        "how long do refunds take",
    ]
    assert clusters[1].novelty < clusters[0].novelty


def test_rank_through_the_cli_skips_a_near_duplicate_and_writes_the_rest(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("refund-days", "How long do refunds take?", contains="days")])
    code = main(["add", "--from-otel", str(DATA / "otel.json"), "--rank", "--top", "5"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0
    assert "3 requests in 3 clusters, ranked by failed, flagged, cost (tokens), novelty" in out
    assert "span b7ad6b7169203331: skipped, a near-duplicate of case 'refund-days'" in captured.err
    first, second = [line for line in out.splitlines() if line.lstrip()[:2] in ("1.", "2.")]
    assert "my-parcel-arrived-damaged" in first and "1 failed, 1 flagged" in first
    assert "can-i-change-the-delivery-address" in second
    written = sorted(p.name for p in (project.root / "cases").glob("*.yaml"))
    assert len(written) == 3 and "cases.yaml" in written


def test_rank_dry_run_prints_only_yaml_on_stdout(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    project.write_cases([case("unrelated", "Is the coat waterproof?", contains="yes")])
    assert main(["add", "--from-log", str(DATA / "requests.jsonl"), "--rank", "--dry-run"]) == 0
    captured = capsys.readouterr()
    drafts = yaml.safe_load(captured.out)
    assert [d["input"]["question"][:12] for d in drafts] == [
        "Can I get my",
        "Where is ord",
        "Do you ship ",
    ]
    assert "3 requests in 3 clusters" in captured.err
    assert sorted(p.name for p in (project.root / "cases").iterdir()) == ["cases.yaml"]
