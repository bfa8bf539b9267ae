"""`casegate init`: a starter config, two example cases and the three workflows.

The files live in `gate/scaffold/`; the workflows name the Action as `{{ action }}`,
filled in with the reference the user gives (this repository's own workflows are
the same files with `./`, and a test keeps them identical).
"""

from __future__ import annotations

import contextlib
from importlib import resources
from pathlib import Path

from gate.errors import ConfigError
from gate.files import OutputError, cannot_write, write_text

DEFAULT_ACTION = "casegate/casegate@v1"

#: scaffold file → where it goes in the user's repository
FILES = {
    "casegate.yml": "casegate.yml",
    "cases/examples.yaml": "cases/examples.yaml",
    "prompts/assistant.md": "prompts/assistant.md",
    "workflows/casegate-pull-request.yml": ".github/workflows/casegate-pull-request.yml",
    "workflows/casegate-model-swap.yml": ".github/workflows/casegate-model-swap.yml",
    "workflows/casegate-baseline.yml": ".github/workflows/casegate-baseline.yml",
}


def starter_files(action: str = DEFAULT_ACTION) -> dict[str, str]:
    """Destination path → content."""
    scaffold = resources.files("gate") / "scaffold"
    return {
        destination: (scaffold / source).read_text(encoding="utf-8").replace("{{ action }}", action)
        for source, destination in FILES.items()
    }


def write_starter(target: Path, action: str = DEFAULT_ACTION) -> list[Path]:
    """Write every starter file, or none: an existing file is never overwritten, and when
    one cannot be written (an OutputError naming it) the files and folders made are removed."""
    files = starter_files(action)
    try:
        existing = [target / name for name in files if (target / name).exists()]
        new_folders = {f for name in files for f in (target / name).parents if not f.exists()}
    except OSError as exc:  # a folder on the way that cannot be read
        raise cannot_write(target, exc) from None
    if existing:
        raise ConfigError(
            [f"{path}: already exists; casegate init writes nothing over it" for path in existing]
            + ["move those files aside (or write the rest by hand from `gate/scaffold/`)"]
        )
    written: list[Path] = []
    try:
        for name, content in files.items():
            write_text(target / name, content)
            written.append(target / name)
    except OutputError:
        for path in written:
            path.unlink(missing_ok=True)
        for folder in sorted(new_folders, key=lambda f: len(f.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    return written
