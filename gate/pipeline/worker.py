"""The supervised run: `python -m gate.pipeline.worker REQUEST.json`, started by
gate.produce.supervise.

This process imports the user's code (python targets, custom checks), so it
decides nothing: it runs the suite and writes the results file. Whatever the
user's code does here — `sys.exit(0)`, `os._exit(0)`, a stray signal — the
supervisor only gates a results file this process finished writing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EXIT_DONE = 0
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def main(argv: list[str]) -> int:
    from gate.errors import CasegateError
    from gate.pipeline.run import execute
    from gate.produce.answers import samples_for
    from gate.results import read_results, write_results
    from gate.suite.project import load_project
    from gate.suite.select import Selection
    from gate.suite.shard import Shard
    from gate.usercode import installed_folders, sources_only_outside

    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    status = Path(request["status"])
    # The suite's code is compiled from its sources: a `.pyc` committed beside it is
    # never what runs.
    sources_only_outside(installed_folders())
    try:
        if request.get("sandbox"):
            # As root until here: the suite's code is imported only after this.
            from gate.produce.sandbox import enter

            enter(request["sandbox"])
        shard = Shard.parse(request["shard"]) if request.get("shard") else None
        selection = Selection(tuple(request["cases"]), tuple(request["tags"]), shard)
        loaded, cases = load_project(Path(request["config"]), request["overrides"], selection)
        # Only `samples: auto` stops against the baseline: a fixed-sample suite's run
        # need not parse it (the gate has read it already).
        adaptive = any(samples_for(case, loaded) is None for case in cases)
        reference = None
        if request["reference"] and adaptive:
            reference = read_results(Path(request["reference"]))
        results = execute(
            loaded,
            cases,
            request["mode"],
            only_missing=request["only_missing"],
            show_progress=request["show_progress"],
            reference=reference,
            selection=selection.to_dict(),
            estimate=bool(request.get("estimate")),
            gate_judges=bool(request.get("gate_judges")),
        )
        results.shard = shard.to_dict() if shard else None
        write_results(results, Path(request["out"]))
    except CasegateError as exc:
        status.write_text(json.dumps({"problems": exc.problems}), encoding="utf-8")
        return exc.exit_code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    status.write_text(json.dumps({"done": request["nonce"]}), encoding="utf-8")
    return EXIT_INTERRUPTED if results.interrupted else EXIT_DONE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
