"""Red-team attacks on sharding: `--shard I/N`, `casegate merge`, `check --parts` and the
Action's `shard`/`parts` inputs.

Each test asserts the safe behaviour (a refusal, exit 2, or the block an unsharded run
gives), so an attack that works shows up as a failing test.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gate.cli import main
from gate.suite.shard import shard_of
from tests.conftest import Project, case
from tests.fakes.actions import Runner, git
from tests.github.test_action_shards import run_shards
from tests.holdout.test_holdout_helpers import KEY_TEXT, casegate

REPO = Path(__file__).resolve().parents[2]


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


def without_time(data: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key != "created_at"}


# --- a critical case sampled 8 times: recorded 1 pass then 7 fails on the candidate --------

GOOD_BOT = """
def answer(case_input, system):
    return "good answer"
"""
# The candidate: the first call per question answers well, every later one badly.
FLAKY_BOT = """
CALLS = {}

def answer(case_input, system):
    question = case_input.get("question", "")
    CALLS[question] = CALLS.get(question, 0) + 1
    return "good answer" if CALLS[question] == 1 else "bad answer"
"""
# What a pull request commits as a custom check: imported only by the supervised child,
# it rewrites the child's results so that every sample of the critical case is the
# recorded sample 0 (a pass). Outputs, checks and counts all match a recording.
FORGE = """
import copy

import gate.results as results

_write = results.RunResults.write


def _forged(self, stream):
    for case in self.cases:
        if case.id == "refund-policy":
            case.outputs = [copy.deepcopy(case.outputs[0]) for _ in case.outputs]
    return _write(self, stream)


results.RunResults.write = _forged


def ok(text, case):
    return True
"""
CRITICAL = "refund-policy"
# A case in the critical case's shard of a 2-way split (its custom check runs in that child).
FORGER = next(f"forge-{n}" for n in range(100) if shard_of(f"forge-{n}", 2) == 2)
assert shard_of(CRITICAL, 2) == 2


def _sampled_cases(forger_expect: dict[str, Any], samples: int | None = 8) -> str:
    cases = [
        {
            "id": CRITICAL,
            "critical": True,
            **({"samples": samples} if samples else {}),
            "input": {"question": "refund"},
            "expect": {"contains": "good"},
        },
        *[
            {"id": name, "input": {"question": name}, "expect": {"contains": "answer"}}
            for name in ("alpha", "beta", "gamma")
        ],
        {"id": FORGER, "input": {"question": "z"}, "expect": forger_expect},
    ]
    return json.dumps(cases)


def _sampled_project(root: Path, samples: int | None = 8, extra: str = "") -> Path:
    """A baseline where the critical case passes every sample, and a candidate (cand.yml)
    recorded passing only its first: an unsharded check blocks on a critical regression."""
    root.mkdir()
    (root / "good_bot.py").write_text(GOOD_BOT)
    (root / "flaky_bot.py").write_text(FLAKY_BOT)
    (root / "cases").mkdir()
    (root / "cases" / "c.yaml").write_text(_sampled_cases({"contains": "answer"}, samples))
    config = (
        textwrap.dedent(
            """\
        suite: demo
        cases: cases
        system: {name: NAME, provider: python, target: "TARGET"}
        recordings: recordings
        baseline: baselines/demo.json
        concurrency: 1
        """
        )
        + extra
    )
    (root / "casegate.yml").write_text(
        config.replace("NAME", "v1").replace("TARGET", "good_bot:answer")
    )
    (root / "cand.yml").write_text(
        config.replace("NAME", "v2").replace("TARGET", "flaky_bot:answer")
    )
    # The baseline records its own samples: under `samples: auto` it is estimated at
    # 3 x adaptive.max per case, more than the adaptive `record` run keeps.
    for command in (["record"], ["record", "-c", "cand.yml"], ["baseline", "--mode", "record"]):
        finished = casegate(*command, "--quiet", cwd=root)
        assert finished.returncode == 0, finished.stdout + finished.stderr
    unsharded = casegate("check", "-c", "cand.yml", "--out", "whole.json", cwd=root)
    assert unsharded.returncode == 1, unsharded.stdout + unsharded.stderr
    assert unsharded.stdout.startswith("BLOCK: demo")
    return root


@pytest.fixture
def sampled(tmp_path: Path) -> Path:
    return _sampled_project(tmp_path / "sampled")


def _run_parts(root: Path) -> list[str]:
    parts = []
    for index in (1, 2):
        part = f"p{index}.json"
        finished = casegate(
            "run", "-c", "cand.yml", "--shard", f"{index}/2", "--out", part, "--quiet", cwd=root
        )
        assert finished.returncode == 0, finished.stderr
        parts.append(part)
    return parts


def _check_parts(root: Path, parts: list[str]) -> Any:
    return casegate("check", "-c", "cand.yml", "--parts", *parts, "--out", "merged.json", cwd=root)


def test_a_part_repeating_a_passing_recorded_sample_still_blocks(sampled: Path) -> None:
    """The part says the critical case's 8 samples are 8 copies of recorded sample 0: each
    matches a recording, every check agrees, the count is the case's 8."""
    parts = _run_parts(sampled)
    data = read(sampled / "p2.json")
    for result in data["cases"]:
        if result["id"] == CRITICAL:
            assert result["passes"] == 1
            result["outputs"] = [dict(result["outputs"][0]) for _ in result["outputs"]]
    write(sampled / "p2.json", data)
    finished = _check_parts(sampled, parts)
    assert finished.returncode in (1, 2), finished.stdout  # never SHIP
    assert not finished.stdout.startswith("SHIP")


def test_a_part_truncating_an_adaptive_case_to_its_passing_sample_still_blocks(
    tmp_path: Path,
) -> None:
    """`samples: auto`: the recheck accepts any number of samples, so a part keeps only the
    critical case's first (passing) recorded sample of the 4 the adaptive run took."""
    root = _sampled_project(tmp_path / "adaptive", samples=None, extra="samples: auto\n")
    parts = _run_parts(root)
    data = read(root / "p2.json")
    for result in data["cases"]:
        if result["id"] == CRITICAL:
            assert result["passes"] == 1 and result["samples"] >= 4
            result["outputs"] = result["outputs"][:1]
    write(root / "p2.json", data)
    finished = _check_parts(root, parts)
    assert finished.returncode in (1, 2), finished.stdout  # never SHIP
    assert not finished.stdout.startswith("SHIP")


@pytest.mark.parametrize("mode", ["replay", "live"])
def test_a_custom_check_forging_samples_in_a_shard_child_still_blocks(
    sampled: Path, mode: str
) -> None:
    """The Action's flow: each shard job runs `check --shard`, then `check --parts` gates.
    The PR adds a case whose custom check module rewrites the child's results. Live, the
    module runs in the shard's supervised child and its gate process judges the child
    again; in replay no code of the PR runs at all."""
    (sampled / "forge.py").write_text(FORGE)
    (sampled / "cases" / "c.yaml").write_text(_sampled_cases({"check": "forge:ok"}))
    parts, refused = [], []
    for index in (1, 2):
        part = f"p{index}.json"
        finished = casegate(
            "check", "-c", "cand.yml", "--mode", mode, "--shard", f"{index}/2", "--out", part,
            cwd=sampled,
        )  # fmt: skip
        if finished.returncode == 2:  # the shard's own gate process saw the forgery
            refused.append(finished.stderr)
        else:
            assert finished.returncode == 0, finished.stdout + finished.stderr
            parts.append(part)
    if mode == "live":
        assert any("its results cannot be trusted" in reason for reason in refused), refused
    else:
        assert refused == [] and len(parts) == 2
    if len(parts) == 2:
        finished = casegate(
            "check", "-c", "cand.yml", "--mode", mode, "--parts", *parts, "--out", "merged.json",
            cwd=sampled,
        )  # fmt: skip
        assert finished.returncode == 1, finished.stdout + finished.stderr
        assert finished.stdout.startswith("BLOCK: demo")


def test_the_same_forgery_unsharded_still_blocks(sampled: Path) -> None:
    """The root cause is shared with the unsharded check: the recheck never asks that the
    sample numbers be 0..n-1, each once."""
    (sampled / "forge.py").write_text(FORGE)
    (sampled / "cases" / "c.yaml").write_text(_sampled_cases({"check": "forge:ok"}))
    finished = casegate("check", "-c", "cand.yml", "--out", "whole.json", cwd=sampled)
    assert finished.returncode in (1, 2), finished.stdout
    assert not finished.stdout.startswith("SHIP")


# --- hurried authors ------------------------------------------------------------------


def _parts(count: int, *extra: str, where: Path) -> list[Path]:
    paths = []
    for index in range(1, count + 1):
        path = where / f"part-{index}-of-{count}.json"
        command = ["run", *extra, "--shard", f"{index}/{count}", "--out", str(path), "--quiet"]
        assert main(command) == 0
        paths.append(path)
    return paths


def test_merge_refuses_parts_judged_on_other_expectations(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Parts run before a case's `expect` changed, merged after: the config hash and the ids
    match, but the verdicts are of cases this commit no longer has."""
    cases = [case(f"c{n}", "hi", contains="hi") for n in range(6)]
    project.write_cases(cases)
    parts = _parts(2, "--mode", "live", where=project.root)
    cases[0]["expect"] = {"contains": "never said"}
    project.write_cases(cases)
    capsys.readouterr()
    out = project.root / "merged.json"
    status = main(["merge", *map(str, parts), "--out", str(out), "--quiet"])
    assert status == 2, read(out)["summary"]
    assert "c0" in capsys.readouterr().err


def test_check_parts_judges_stale_parts_on_this_commits_expectations(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = [case(f"c{n}", "hi", contains="hi", fields_={"critical": True}) for n in range(6)]
    project.write_cases(cases)
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    parts = _parts(2, "--mode", "live", where=project.root)
    cases[0]["expect"] = {"contains": "never said"}
    project.write_cases(cases)
    capsys.readouterr()
    status = main(["check", "--mode", "live", "--parts", *map(str, parts), "--out", "m.json"])
    assert status == 2  # refused: the parts judged c0 on expectations it no longer has
    assert "case 'c0' was judged on other expectations" in capsys.readouterr().err


def test_an_empty_shard_is_merged_like_any_other(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """README: "A shard may be empty (a small suite over many jobs); its part is merged all
    the same." Under `check --shard` (what the Action runs), an empty shard exits 2, so its
    job fails and the merge can never gate: a suite smaller than its matrix never ships."""
    project.write_cases([case("only-one", "hi", contains="hi")])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    owner = shard_of("only-one", 2)
    parts = []
    for index in (1, 2):
        out = project.root / f"p{index}.json"
        status = main(["check", "--mode", "live", "--shard", f"{index}/2", "--out", str(out)])
        assert status == 0, f"shard {index}/2 (owner {owner}): {capsys.readouterr().err}"
        parts.append(str(out))
    assert main(["check", "--mode", "live", "--parts", *parts, "--out", "m.json"]) == 0


def test_parts_of_another_set_override_are_refused(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case(f"c{n}", "hi", contains="plain") for n in range(6)])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    parts = _parts(2, "--mode", "live", "--set", "system.style=plain", where=project.root)
    capsys.readouterr()
    status = main(["check", "--mode", "live", "--parts", *map(str, parts), "--out", "m.json"])
    assert status == 2
    assert "another config" in capsys.readouterr().err
    # Mixed: one part with the override, one without.
    (project.root / "bare").mkdir()
    bare = _parts(2, "--mode", "live", where=project.root / "bare")
    capsys.readouterr()
    status = main(["merge", str(parts[0]), str(bare[1]), "--out", "m2.json"])
    assert status == 2
    assert "differs" in capsys.readouterr().err


def test_parts_of_a_match_everything_selection_are_not_the_whole_suite(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case(f"c{n}", "hi", contains="hi") for n in range(6)])
    assert main(["baseline", "--mode", "live", "--quiet"]) == 0
    parts = _parts(2, "--mode", "live", "--case", "*", where=project.root)
    capsys.readouterr()
    status = main(["check", "--mode", "live", "--parts", *map(str, parts), "--out", "m.json"])
    assert status == 2
    assert "give the same --case/--tag as the shard jobs" in capsys.readouterr().err


def test_a_part_copied_under_two_names_is_an_overlap(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case(f"c{n}", "hi", contains="hi") for n in range(6)])
    one, two = _parts(2, "--mode", "live", where=project.root)
    copy = project.root / "copy.json"
    shutil.copy(one, copy)
    capsys.readouterr()
    assert main(["merge", str(one), str(copy), str(two), "--out", "m.json"]) == 2
    assert "overlapping parts" in capsys.readouterr().err


def test_duplicate_ids_across_case_files_are_refused_before_sharding(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("same", "hi", contains="hi")], "a.yaml")
    project.write_cases([case("same", "hi", contains="nope")], "b.yaml")
    capsys.readouterr()
    assert main(["run", "--mode", "live", "--shard", "1/2", "--out", "p.json"]) == 2
    assert "duplicate case id 'same'" in capsys.readouterr().err


def test_ids_differing_only_by_case_merge_into_the_unsharded_run(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = ["Refund", "refund", "REFUND", "refund.", "refund-", "r_1", "R_1", "0", "00"]
    project.write_cases(
        [case(i, "hi", contains="hi" if n % 2 else "nope") for n, i in enumerate(ids)]
    )
    assert main(["record", "--quiet"]) == 0  # replayed: latencies are the recorded ones
    whole = project.root / "whole.json"
    assert main(["run", "--out", str(whole), "--quiet"]) == 0
    for count in (2, 3, 5):
        parts = _parts(count, where=project.root)
        merged = project.root / f"merged-{count}.json"
        assert main(["merge", *map(str, parts), "--out", str(merged), "--quiet"]) == 0
        expected, found = without_time(read(whole)), without_time(read(merged))
        assert found == expected
        assert [c["id"] for c in found["cases"]] == sorted(ids)


# --- the held-out slice -----------------------------------------------------------------

HOLD_BOT = """
def answer(case_input, system):
    return system.get("style", "good") + ": " + case_input["question"]
"""
HELD = """
- id: h-alpha
  input: {question: alpha}
  expect: {contains: good}
- id: h-beta
  input: {question: beta}
  expect: {contains: bad}
- id: h-gamma
  input: {question: gamma}
  expect: {contains: gamma}
"""


@pytest.fixture
def held(tmp_path: Path) -> Path:
    root = tmp_path / "held"
    root.mkdir()
    (root / "bot.py").write_text(HOLD_BOT)
    (root / "cases").mkdir()
    (root / "cases" / "main.yaml").write_text(
        "".join(
            f"- id: r{n}\n  input: {{question: q{n}}}\n  expect: {{contains: q{n}}}\n"
            for n in range(6)
        )
    )
    (root / "casegate.yml").write_text(
        "suite: s\ncases: cases\nsystem: {name: n, provider: python, target: 'bot:answer'}\n"
        "recordings: recordings\nbaseline: baselines/s.json\nholdout: holdout/s\n"
        "gate: {holdout_max_drop: 0.1}\n"
    )
    (root / "held.yaml").write_text(HELD)
    assert casegate("holdout", "add", "held.yaml", cwd=root, key=KEY_TEXT).returncode == 0
    for style in (None, "none"):
        overrides = ["--set", f"system.style={style}"] if style else []
        recorded = casegate("record", *overrides, cwd=root, key=KEY_TEXT)
        assert recorded.returncode == 0, recorded.stderr
    assert casegate("baseline", cwd=root, key=KEY_TEXT).returncode == 0
    return root


def _held_parts(root: Path, count: int, *extra: str) -> list[str]:
    parts = []
    for index in range(1, count + 1):
        part = f"part-{index}.json"
        finished = casegate("check", *extra, "--shard", f"{index}/{count}", "--out", part, cwd=root)
        assert finished.returncode == 0, finished.stdout + finished.stderr
        parts.append(part)
    return parts


def test_check_parts_applies_holdout_max_drop_like_an_unsharded_check(held: Path) -> None:
    """Shard jobs have no key; the gate job does, and scores the whole slice once."""
    worse = ("--set", "system.style=none")
    unsharded = casegate("check", *worse, cwd=held, key=KEY_TEXT)
    assert unsharded.returncode == 1, unsharded.stdout
    parts = _held_parts(held, 3, *worse)
    finished = casegate("check", *worse, "--parts", *parts, cwd=held, key=KEY_TEXT)
    assert finished.returncode == 1, finished.stdout + finished.stderr
    assert "the held-out pass rate fell" in finished.stdout


def test_merge_scores_the_held_out_slice_like_an_unsharded_run(held: Path) -> None:
    """README: the merged results equal an unsharded run apart from `created_at`."""
    whole = casegate("run", "--out", "whole.json", cwd=held, key=KEY_TEXT)
    assert whole.returncode == 0, whole.stderr
    parts = []
    for index in (1, 2):
        part = f"run-{index}.json"
        ran = casegate("run", "--shard", f"{index}/2", "--out", part, cwd=held, key=KEY_TEXT)
        assert ran.returncode == 0, ran.stderr
        parts.append(part)
    merged = casegate("merge", *parts, "--out", "merged.json", cwd=held, key=KEY_TEXT)
    assert merged.returncode == 0, merged.stderr
    assert (
        read(held / "merged.json")["holdout"]["status"]
        == read(held / "whole.json")["holdout"]["status"]
    )


# --- messages ---------------------------------------------------------------------------

FIX_WORDS = ("run ", "merge ", "pass ", "give ", "download", "wait", "remove", "use ", "check ")


def _refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err.strip()


def test_merge_refusals_are_one_line_with_a_cause_and_a_fix(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case(f"c{n}", "hi", contains="hi") for n in range(6)])
    one, two = _parts(2, "--mode", "live", where=project.root)
    doubled = read(two)
    doubled["cases"] = [doubled["cases"][0], *doubled["cases"]]
    write(project.root / "doubled.json", doubled)
    messages = {
        "overlap": _refusal(capsys, ["merge", str(one), str(one), str(two), "--out", "m.json"]),
        "case twice": _refusal(
            capsys, ["merge", str(one), str(project.root / "doubled.json"), "--out", "m.json"]
        ),
    }
    unclear = {
        name: message
        for name, message in messages.items()
        if "\n" in message or not any(word in message for word in FIX_WORDS)
    }
    assert unclear == {}


# --- the Action -------------------------------------------------------------------------


def test_a_committed_link_for_the_parts_folder_is_refused(runner: Runner) -> None:
    """The PR commits forged parts in `evil/` and `casegate-parts` as a link to it; the
    workflow's download-artifact then writes the real parts through the link too."""
    parts = run_shards(runner, 2, runner.workspace / "evil")
    for part in parts:  # forged to pass: every case rewritten as a pass
        data = read(part)
        for result in data["cases"]:
            result.update(status="pass", passed=True)
        write(part, data)
    (runner.workspace / "casegate-parts").symlink_to("evil")
    git("add", "-A", cwd=runner.workspace)
    git("commit", "-qm", "parts of my own", cwd=runner.workspace)
    run_shards(runner, 2, runner.workspace / "casegate-parts" / "downloaded")
    finished = runner.run(parts="casegate-parts")
    assert finished.returncode == 2, finished.stdout
    # Refused as a link, or for the committed files it leads to: either way, no verdict.
    assert "input `parts`" in finished.stdout
    assert not (runner.last_files / "output").exists()
    assert runner.api.writes() == []


def test_a_part_from_a_whole_run_in_the_parts_folder_is_refused(runner: Runner) -> None:
    run_shards(runner, 2, runner.workspace / "casegate-parts")
    whole = runner.run()
    assert whole.returncode == 1
    extra = runner.workspace / "casegate-parts" / "extra"
    extra.mkdir()
    shutil.copy(runner.workspace / ".casegate" / "support-results.json", extra / "r.json")
    finished = runner.run(parts="casegate-parts")
    assert finished.returncode == 2, finished.stdout
    assert "not a shard's results" in finished.stdout


@pytest.mark.parametrize("count", [4, 7])
def test_the_sharded_action_blocks_on_the_committed_candidate(runner: Runner, count: int) -> None:
    """Sanity: the example's 3 critical regressions block over 4 and over 7 shards too."""
    folder = runner.workspace / f"casegate-parts-{count}"
    run_shards(runner, count, folder)
    finished = runner.run(parts=folder.name)
    assert finished.returncode == 1, finished.stdout
    assert runner.outputs()["critical-regressions"] == "3"
