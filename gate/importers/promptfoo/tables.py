"""promptfoo's tests in a CSV file: one test per row, `__expected` columns as assertions.

As promptfoo reads them (its csv.ts, PROMPTFOO_VERSION): the first row names the columns;
a column is a var unless its name starts with `__`. Each non-empty `__expected…` cell is an
assertion written as text (`contains: Paris`, `similar(0.9): …`, `grade: …`,
`javascript: …`, or else the whole cell as `equals`), in column order.
`__description` is the test's description (`Row #N` when missing), `__metadata:key` (and
`__metadata:key[]`, comma-separated) its metadata, `__config:__expectedN:threshold` the
threshold of the N-th assertion, `__threshold`, `__prefix`, `__suffix` the test's own.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from gate.importers.promptfoo.js import js_string
from gate.importers.promptfoo.reading import Folder, problem_at
from gate.importers.promptfoo.sheets import rows_in_xlsx
from gate.yamlfile import LineDict

#: promptfoo's assertion types (its BaseAssertionTypesSchema), for `type(threshold): value`
ASSERTION_TYPES = [
    "answer-relevance",
    "bleu",
    "classifier",
    "contains",
    "contains-all",
    "contains-any",
    "contains-html",
    "contains-json",
    "contains-sql",
    "contains-xml",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "conversation-relevance",
    "cost",
    "equals",
    "factuality",
    "finish-reason",
    "g-eval",
    "gleu",
    "guardrails",
    "icontains",
    "icontains-all",
    "icontains-any",
    "is-html",
    "is-json",
    "is-refusal",
    "is-sql",
    "is-valid-function-call",
    "is-valid-openai-function-call",
    "is-valid-openai-tools-call",
    "is-xml",
    "javascript",
    "latency",
    "levenshtein",
    "llm-rubric",
    "pi",
    "meteor",
    "model-graded-closedqa",
    "model-graded-factuality",
    "moderation",
    "perplexity",
    "perplexity-score",
    "python",
    "regex",
    "rouge-n",
    "ruby",
    "similar",
    "starts-with",
    "trace-error-spans",
    "trace-span-count",
    "trace-span-duration",
    "webhook",
    "human",
    "select-best",
    "max-score",
    "assert-set",
]
# Tried in the schema's order, as in promptfoo: an alternative whose rest does not match
# (`contains` in `contains-any: a, b`) gives way to the next, in both regex engines.
_ASSERTION = re.compile(
    r"^(not-)?("
    + "|".join(re.escape(kind) for kind in ASSERTION_TYPES)
    + r")(?:\((\d+(?:\.\d+)?)\))?(?::([\s\S]*))?$"
)
#: the types whose `type(threshold)` form gets promptfoo's default threshold
_SCORED = {
    "answer-relevance",
    "classifier",
    "context-faithfulness",
    "context-recall",
    "context-relevance",
    "cost",
    "latency",
    "levenshtein",
    "perplexity-score",
    "perplexity",
    "rouge-n",
    "similar",
    "starts-with",
}
#: `similar` written in a CSV cell defaults to 0.8, not the 0.75 of a YAML assertion
CSV_SIMILAR_THRESHOLD = 0.8
_CODE_SUFFIXES = (".js", ".cjs", ".mjs", ".ts", ".cts", ".mts")
_SPECIAL = ("expected", "prefix", "suffix", "description", "providerOutput", "metric")


def assertion_from_text(expected: str) -> dict[str, Any]:
    """promptfoo's assertionFromString: one `__expected` cell as an assertion."""
    for prefix in ("javascript:", "fn:", "eval:"):
        if expected.startswith(prefix):
            return {"type": "javascript", "value": expected[len(prefix) :].strip()}
    if expected.startswith("file://") and expected[7:].split(":")[0].endswith(_CODE_SUFFIXES):
        return {"type": "javascript", "value": expected.strip()}
    for prefix in ("grade:", "llm-rubric:"):
        if expected.startswith(prefix):
            return {"type": "llm-rubric", "value": expected[len(prefix) :]}
    if expected.startswith("python:") or (
        expected.startswith("file://") and (expected.endswith(".py") or ".py:" in expected)
    ):
        body = expected.removeprefix("python:") if expected.startswith("python:") else expected
        return {"type": "python", "value": body.strip()}
    match = _ASSERTION.fullmatch(expected)
    if match is None:
        return {"type": "equals", "value": expected}
    negated, kind, threshold_text, value = match.groups()
    full = f"not-{kind}" if negated else kind
    threshold = float(threshold_text) if threshold_text else None
    if kind in ("contains-all", "contains-any", "icontains-all", "icontains-any"):
        return {
            "type": full,
            "value": [part.strip() for part in value.split(",")] if value else value,
        }
    if kind in ("contains-json", "is-json"):
        return {"type": full, "value": value}
    assertion: dict[str, Any] = {"type": full, "value": value.strip() if value else value}
    if kind in _SCORED:
        default = CSV_SIMILAR_THRESHOLD if kind == "similar" else 0.75
        assertion["threshold"] = threshold if threshold is not None else default
    return assertion


def tests_in_csv(path: Path, folder: Folder, where: Path, line: int | None) -> list[LineDict]:
    """One promptfoo test per row of the CSV file at `path`, each knowing its row's line."""
    text = folder.text(path, where, line)
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        rows = [(reader.line_num, row) for row in reader]
    except csv.Error as exc:
        raise problem_at(path, reader.line_num, f"invalid CSV: {exc}") from None
    if header is None:
        return []
    header = [name.strip() for name in header]
    named: list[tuple[int, dict[str, Any]]] = []
    for number, (row_line, row) in enumerate(rows, start=1):
        if not any(cell.strip() for cell in row) and len(row) <= 1:
            continue  # a blank line
        if len(row) != len(header):
            raise problem_at(
                path,
                row_line,
                f"row {number} has {len(row)} fields, the header {len(header)} "
                "(promptfoo refuses a CSV whose rows differ in length)",
            )
        named.append((row_line, dict(zip(header, row, strict=True))))
    return tests_of_rows(named, path)


def tests_in_xlsx(path: Path, sheet: str | None, shown: Path) -> list[LineDict]:
    """One promptfoo test per row of a spreadsheet's sheet (sheets.py reads it)."""
    return tests_of_rows(rows_in_xlsx(path, sheet, shown), shown)


def tests_of_rows(rows: list[tuple[int, dict[str, Any]]], path: Path) -> list[LineDict]:
    tests: list[LineDict] = []
    for number, (row_line, row) in enumerate(rows, start=1):
        test = _test_of(row, path, row_line)
        test.setdefault("description", f"Row #{number}")
        test.line = row_line
        tests.append(test)
    return tests


def _test_of(row: dict[str, Any], path: Path, line: int) -> LineDict:
    """promptfoo's testCaseFromCsvRow (a spreadsheet's numbers read as text where it reads
    text: the special columns)."""
    variables: dict[str, Any] = {}
    asserts: list[dict[str, Any]] = []
    options: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    thresholds: dict[int, float] = {}
    test = LineDict()
    for key, cell in row.items():
        value = js_string(cell) if key.startswith("__") else cell
        if not key.startswith("__"):
            variables[key] = cell
        elif key.startswith("__expected"):
            if value.strip():
                asserts.append(assertion_from_text(value.strip()))
        elif key in ("__prefix", "__suffix"):
            options[key[2:]] = value
        elif key == "__description":
            if value:
                test["description"] = value
        elif key == "__threshold":
            threshold = _number(value)
            if threshold:  # promptfoo keeps it only when it parses to a number other than 0
                test["threshold"] = threshold
        elif key.startswith("__metadata:"):
            name = key.removeprefix("__metadata:")
            if name.endswith("[]") and value.strip():
                parts = re.split(r"(?<!\\),", value)
                metadata[name[:-2]] = [part.strip().replace("\\,", ",") for part in parts]
            elif value.strip():
                metadata[name] = value
        elif key.startswith("__config:"):
            index, threshold = _config_column(key, value, path, line)
            thresholds[index] = threshold
        else:  # __providerOutput, __metric: nothing a case carries; other `__` keys are vars
            if key[2:] not in _SPECIAL and key != "__metadata":
                variables[key] = cell
    for index, threshold in thresholds.items():
        if index < len(asserts):
            asserts[index]["threshold"] = threshold
    test["vars"] = variables
    if asserts:
        test["assert"] = asserts
    if options:
        test["options"] = options
    if metadata:
        test["metadata"] = metadata
    return test


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _config_column(key: str, value: str, path: Path, line: int) -> tuple[int, float]:
    """`__config:__expectedN:threshold`: (N - 1, the threshold); promptfoo refuses the rest."""
    parts = key.removeprefix("__config:").split(":")
    found = re.fullmatch(r"__expected(\d*)", parts[0]) if len(parts) == 2 else None
    if found is None or parts[1] != "threshold" or found.group(1) == "0":
        raise problem_at(
            path, 1, f"column {key!r}: promptfoo takes only `__config:__expected<N>:threshold`"
        )
    try:
        threshold = float(value)
    except ValueError:
        raise problem_at(path, line, f"column {key!r}: {value!r} is not a number") from None
    return (int(found.group(1)) - 1 if found.group(1) else 0), threshold
