"""Memory and time to load a suite's case files, as a ratio to the files' size.

    .venv/bin/python bench/load_memory.py              # suites of 1, 4 and 16 MB
    .venv/bin/python bench/load_memory.py 2 8          # any sizes, in MB
    .venv/bin/python bench/load_memory.py --before     # also PyYAML's node-graph loader

Each size gets a fresh folder of YAML case files (at most 4 MB each) written the way the
example suite's are: block mappings, a question, three checks, tags and a note. One more
suite is the shape of issue #19's report: a single 3.9 MB file whose one case holds a flow
list of a million numbers. Each measurement runs in a child process, which loads one tiny
case file first (every import and schema built), then the suite:

- `yaml`: casegate's YAML loader alone (gate.yamlfile.load_yaml), every document kept;
- `cases`: the whole of `load_cases` (YAML, defaults, validation, checks built);
- `before` (with --before): PyYAML's own loader building its node graph first, which is
  what gate.yamlfile did until issue #19 (only the YAML, every document kept).

Printed for each: the child's peak resident memory during the load, over what it held
before (Linux's VmHWM, reset just before), as a multiple of the files' size; and the wall
time (best of three; one run at 16 MB and up, and for `before`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MB = 1_000_000
FILE_LIMIT = 4 * MB
TINY = "- id: tiny\n  input: {question: hello}\n  expect: {contains: hi}\n"


def case(index: int) -> str:
    return (
        f"- id: return-{index:07d}\n"
        f"  input:\n"
        f"    question: How do I return order {index} after the 30-day window closed?\n"
        f"  expect:\n"
        f"    contains: returns portal\n"
        f"    max_words: 80\n"
        f'    not_regex: "(?i)guarantee(d)? a refund"\n'
        f"  tags: [returns, orders]\n"
        f"  note: ticket SUP-{index % 997} asked this in other words.\n"
    )


def build_cases(folder: Path, size: int) -> list[Path]:
    """Case files of `size` bytes in all, at most FILE_LIMIT each."""
    files: list[Path] = []
    written, index = 0, 0
    while written < size:
        path = folder / f"part-{len(files):03d}.yaml"
        chunk: list[str] = []
        length = 0
        while length < min(FILE_LIMIT, size - written):
            text = case(index)
            chunk.append(text)
            length += len(text)
            index += 1
        path.write_text("".join(chunk))
        files.append(path)
        written += length
    return files


def build_long_list(folder: Path) -> list[Path]:
    """Issue #19's shape: one case, its input a flow list of a million numbers."""
    numbers = ", ".join(str(n % 100) for n in range(1_000_000))
    path = folder / "long-list.yaml"
    path.write_text(f"- id: long\n  input: {{numbers: [{numbers}]}}\n  expect: {{json: true}}\n")
    return [path]


def _status(field: str) -> int:
    """A memory figure of this process from /proc/self/status, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) * 1024
    raise SystemExit(f"no {field} in /proc/self/status (this bench reads Linux's figures)")


def child_main(mode: str, files: list[Path]) -> None:
    """In the child: load the tiny file, then the suite; print seconds and bytes grown.

    The peak is Linux's VmHWM, reset (clear_refs 5) after the warm-up and after freed
    memory went back to the system (malloc_trim): what the load itself adds, even where
    it would fit in memory the imports used and freed.
    """
    sys.path.insert(0, str(REPO))
    import ctypes
    import gc

    import yaml

    from gate.suite.cases import load_cases
    from gate.yamlfile import load_yaml
    from gate.yamlloader import _LineLoader

    tiny = files[0].parent / "tiny.yaml"
    tiny.write_text(TINY)
    load_cases([tiny])
    load_yaml(TINY)
    yaml.load(TINY, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    started = time.perf_counter()
    kept: list[object] = []
    if mode == "cases":
        kept.append(load_cases(files))
    elif mode == "yaml":
        kept.extend(load_yaml(path.read_text()) for path in files)
    else:
        kept.extend(yaml.load(path.read_text(), Loader=_LineLoader) for path in files)  # noqa: S506
    elapsed = time.perf_counter() - started
    print(json.dumps({"seconds": elapsed, "grown": _status("VmHWM") - before}))


def measure(mode: str, files: list[Path], runs: int) -> tuple[float, int]:
    """Best wall time and the peak memory growth of `runs` children."""
    best_time, grown = float("inf"), 0
    argv = [sys.executable, __file__, "--child", mode, *map(str, files)]
    for _ in range(runs):
        done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO)
        found = json.loads(done.stdout)
        best_time = min(best_time, found["seconds"])
        grown = max(grown, found["grown"])
    return best_time, grown


def main(argv: list[str]) -> None:
    if argv[:1] == ["--child"]:
        child_main(argv[1], [Path(name) for name in argv[2:]])
        return
    before = "--before" in argv
    sizes = [int(arg) for arg in argv if arg != "--before"] or [1, 4, 16]
    modes = ["yaml", "cases", *(["before"] if before else [])]
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(f"{'suite':>22}  {'mode':>6}  {'peak RSS growth':>22}  {'time':>8}  {'per MB':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        suites = [(f"{mb} MB of cases", mb * MB) for mb in sizes] + [("3.9 MB long list", 0)]
        for name, size in suites:
            folder = Path(scratch) / name.replace(" ", "-")
            folder.mkdir()
            files = build_cases(folder, size) if size else build_long_list(folder)
            total = sum(path.stat().st_size for path in files)
            for mode in modes:
                runs = 1 if total >= 16 * MB or mode == "before" else 3
                seconds, grown = measure(mode, files, runs)
                print(
                    f"{name:>22}  {mode:>6}  {grown / MB:8.0f} MB = {grown / total:5.1f}x  "
                    f"{seconds:7.2f}s  {seconds / (total / MB):7.2f}s",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
