"""How much of a folder of real promptfoo configs `casegate import promptfoo` takes.

    .venv/bin/python bench/promptfoo_coverage.py CORPUS_DIR [--show N]

CORPUS_DIR is a local copy of promptfoo's `examples/` (or any folder of promptfoo configs);
nothing is fetched. Every YAML file in it whose top level is a mapping with `prompts`,
`providers`, `targets` or `tests` is a config. Each is imported into a temporary folder
and every `casegate*.yml` it writes is loaded as `casegate validate` loads it. Printed:
configs found, configs with tests, the share imported and valid, the share of assertions
and tests mapped mechanically (the importer's own count, as MIGRATION.md gives it), and
the most frequent reasons a config was refused, a test skipped or an assertion left to a
person.

A config's assertions are counted only when it imports: a refused config's tests are
counted under "refused", not as unmapped assertions.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import yaml

from gate.errors import CasegateError
from gate.importers.promptfoo import import_promptfoo
from gate.importers.promptfoo.scores import stand_ins
from gate.suite.project import load_project

_CONFIG_KEYS = {"prompts", "providers", "targets", "tests"}


def configs_in(corpus: Path) -> Iterator[tuple[Path, bool]]:
    """(config, whether it has tests) for every promptfoo config under `corpus`."""
    for path in sorted(corpus.rglob("*")):
        if path.suffix not in (".yaml", ".yml") or not path.is_file():
            continue
        if "node_modules" in path.parts:
            continue
        try:
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError, ValueError):
            continue
        if isinstance(document, dict) and _CONFIG_KEYS & set(document):
            yield path, bool(document.get("tests"))


def _reason(text: str) -> str:
    """A refusal's kind: the message without the file, line, names and quoted values."""
    text = re.sub(r"^\S+?:(\d+:)? ", "", text.strip().splitlines()[0] if text.strip() else "")
    # an assertion type or a key stays (`rouge-n`); a quoted value does not
    text = re.sub(r"`([^`]*)`", _kept, text)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "…", text)
    text = re.sub(r"\d+", "N", text)
    return text[:110]


def _kept(match: re.Match[str]) -> str:
    return match.group(0) if re.fullmatch(r"[a-z][\w.:-]{0,40}", match.group(1)) else "…"


def _shorten(line: str) -> str:
    line = line.split("; original:")[0]
    return _reason(line)


def measure(corpus: Path, show: int) -> int:
    found = list(configs_in(corpus))
    with_tests = [path for path, has in found if has]
    refusals: Counter[str] = Counter()
    needs: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    unmapped: Counter[str] = Counter()
    imported = valid = 0
    tests = tests_mapped = assertions = assertions_mapped = drafts = 0
    invalid: list[str] = []
    with tempfile.TemporaryDirectory() as temp, stand_ins() as stood_in:
        for number, config in enumerate(with_tests):
            out = Path(temp) / f"out-{number}"
            quiet = io.StringIO()
            try:
                with contextlib.redirect_stderr(quiet):
                    outcome = import_promptfoo(config, out)
            except CasegateError as exc:
                refusals[_reason(str(exc))] += 1
                continue
            imported += 1
            tests += outcome.tests
            tests_mapped += outcome.tests_mapped
            assertions += outcome.assertions
            assertions_mapped += outcome.assertions_mapped
            drafts += outcome.drafts
            migration = (out / "MIGRATION.md").read_text(encoding="utf-8")
            for line in migration.splitlines():
                kind = re.search(r"; original: .*?\"type\": \"([^\"]+)\"", line)
                if kind:
                    unmapped[kind.group(1).split(":")[0]] += 1
                if line.startswith("- **needs a person**: "):
                    needs[_shorten(line.removeprefix("- **needs a person**: "))] += 1
                elif line.startswith("- **not written**: "):
                    skipped[_shorten(line.removeprefix("- **not written**: "))] += 1
            problems = _validate(out)
            if problems:
                invalid.append(f"{config.relative_to(corpus)}: {problems}")
            else:
                valid += 1
    print(f"corpus: {corpus}")
    if stood_in:
        print(
            "checks this tree lacks, validated by the importer's own shape rules: "
            + ", ".join(stood_in)
        )
    print(f"configs found: {len(found)}")
    print(f"configs with tests: {len(with_tests)}")
    print(f"imported: {imported} of {len(with_tests)} ({_pct(imported, len(with_tests))})")
    print(f"imported and valid: {valid} of {len(with_tests)} ({_pct(valid, len(with_tests))})")
    print(
        f"assertions mapped (in imported configs): {assertions_mapped} of {assertions} "
        f"({_pct(assertions_mapped, assertions)})"
    )
    graders = unmapped["promptfoo"]
    print(
        f"assertions mapped, leaving out promptfoo's red-team graders (`promptfoo:redteam:*`, "
        f"{graders} of them): {assertions_mapped} of {assertions - graders} "
        f"({_pct(assertions_mapped, assertions - graders)})"
    )
    print(
        f"tests imported as cases (in imported configs): {tests - _unwritten(skipped)} of "
        f"{tests}; mapped with nothing left to a person: {tests_mapped} of {tests} "
        f"({_pct(tests_mapped, tests)}); draft cases (no check casegate could take): {drafts}"
    )
    _top("configs refused", refusals, show)
    _top("assertions not mapped, by type (`promptfoo` is a red-team grader)", unmapped, show)
    _top("tests not written", skipped, show)
    _top("assertions and settings needing a person", needs, show)
    if invalid:
        print(f"imported but not valid ({len(invalid)}):")
        for line in invalid[:show]:
            print(f"  {line[:200]}")
    return 0


def _unwritten(skipped: Counter[str]) -> int:
    return sum(skipped.values())


def _validate(out: Path) -> str:
    for config in sorted(out.glob("casegate*.yml")):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                load_project(config)
        except CasegateError as exc:
            return f"{config.name}: {' '.join(str(exc).split())[:160]}"
    return ""


def _pct(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "n/a"


def _top(title: str, counts: Counter[str], show: int) -> None:
    if not counts:
        return
    print(f"{title} (top {min(show, len(counts))} of {len(counts)} kinds):")
    for reason, count in counts.most_common(show):
        print(f"  {count:4d}  {reason}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="a local copy of promptfoo's examples/")
    parser.add_argument("--show", type=int, default=12, help="reasons listed per kind")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"promptfoo_coverage: {args.corpus} is not a folder", file=sys.stderr)
        return 2
    return measure(args.corpus, args.show)


if __name__ == "__main__":
    sys.exit(main())
