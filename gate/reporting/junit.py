"""JUnit XML for CI systems other than GitHub: one testcase per case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from gate.files import write_text
from gate.results import RunResults


def junit_xml(results: RunResults, regressions: frozenset[str] = frozenset()) -> str:
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
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(results: RunResults, path: Path, regressions: frozenset[str] = frozenset()) -> None:
    """Write the XML atomically, secrets masked; an OutputError when the path is unwritable."""
    write_text(path, junit_xml(results, regressions))
