"""The judging process: `python -m gate.judging.judgeworker REQUEST.json`, started by
gate.judging.judgeproc.

It gives the custom checks their verdicts on the candidate's outputs, importing the
checks from one tree (the base commit's extraction, under a ruling) through
gate.judging.treeimport, in a process that never ran the system under test. It writes the
verdicts and what the checks touched (modules, files opened or listed, programs
started) for the gate, which reads them as untrusted data.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    from gate.checks import modifiers_of
    from gate.checks.base import Subject
    from gate.checks.custom import custom, parse_custom
    from gate.errors import CasegateError
    from gate.judging.treeimport import Footprint, TreeFinder
    from gate.outputs import Context, ToolCall
    from gate.suite.cases import Case
    from gate.usercode import UserCodeError, load_from_tree

    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    out = Path(request["out"])
    try:
        if request.get("sandbox"):
            from gate.produce.sandbox import enter

            enter(request["sandbox"])
    except CasegateError as exc:
        out.write_text(json.dumps({"problems": exc.problems}), encoding="utf-8")
        return 2
    sys.dont_write_bytecode = True  # nothing compiled is ever kept, or read
    imports, tree = Path(request["imports"]), Path(request["tree"])
    os.chdir(imports)
    finder = TreeFinder(imports)
    sys.meta_path.append(finder)
    import gate

    own = [
        str(Path(gate.__file__).parent),
        os.environ.get("HOME", ""),
        os.environ.get("TMPDIR", ""),
    ]
    footprint = Footprint(tree, [path for path in own if path])
    footprint.install()
    verdicts: dict[str, dict[str, list[Any]]] = {}
    for item in request["cases"]:
        case = Case.model_validate(item["case"])
        failed_import = None
        for entry in parse_custom(case.expect["check"]):
            try:
                load_from_tree(entry.spec, imports)
            except UserCodeError as exc:
                failed_import = str(exc)
            except ImportError as exc:  # e.g. a module name that is a file and a folder
                failed_import = f"{entry.spec}: {exc}"
        judge = custom("check", case.expect["check"], modifiers_of(case.expect))
        mine = verdicts.setdefault(case.id, {})
        for sample in item["samples"]:
            if failed_import is not None:
                mine[str(sample["sample"])] = [False, f"cannot import: {failed_import}", None]
                continue
            subject = Subject(
                sample["text"] or "",
                case.input,
                [ToolCall.model_validate(call) for call in sample["tool_calls"]],
                case,
                stop_reason=sample["stop_reason"],
                latency_ms=sample["latency_ms"],
                cost_usd=sample["cost_usd"],
                output_tokens=sample["output_tokens"],
                input_tokens=sample["input_tokens"],
                model=sample["model"],
                contexts=[Context.model_validate(context) for context in sample["contexts"]],
            )
            try:
                verdict = judge(subject)
                mine[str(sample["sample"])] = [verdict.ok, verdict.reason, verdict.score]
            except Exception as exc:  # a check must not end the judging
                mine[str(sample["sample"])] = [False, f"check crashed: {type(exc).__name__}", None]
    footprint.active = False
    out.write_text(
        json.dumps(
            {
                "done": request["nonce"],
                "verdicts": verdicts,
                "modules": {
                    name: file.resolve().relative_to(tree.resolve()).as_posix()
                    for name, file in finder.loaded.items()
                },
                "opened": sorted(footprint.opened),
                "listed": sorted(footprint.listed),
                "programs": footprint.programs,
                "outside": sorted(footprint.outside),
            }
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
