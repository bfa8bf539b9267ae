"""JUnit XML for CI systems other than GitHub: one testcase per case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from gate.results import RunResults


def write_junit(results: RunResults, path: Path, regressions: frozenset[str] = frozenset()) -> None:
    """Failed cases become <failure>, errored ones <error>; regressions say so."""
    suite = ET.Element(
        "testsuite",
        name=results.suite,
        tests=str(results.summary.cases),
        failures=str(results.summary.failed),
        errors=str(results.summary.errors),
    )
    for case in results.cases:
        seconds = (case.latency_ms or 0) / 1000
        element = ET.SubElement(
            suite, "testcase", classname=results.suite, name=case.id, time=f"{seconds:.3f}"
        )
        prefix = "regression: " if case.id in regressions else ""
        prefix = ("[critical] " if case.critical else "") + prefix
        if case.status == "fail":
            failure = ET.SubElement(element, "failure", message=prefix + case.reason)
            failure.text = "\n".join(f"{c.check}: {c.reason}" for c in case.checks if not c.ok)
        elif case.status == "error":
            ET.SubElement(element, "error", message=prefix + case.reason)
    root = ET.Element("testsuites")
    root.append(suite)
    tree = ET.ElementTree(root)
    ET.indent(tree)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
