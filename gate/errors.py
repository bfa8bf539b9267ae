"""The few error types that cross module boundaries.

Each carries one or more `problems`, each a single line a person can act on.
The CLI and the Action print them and exit with `exit_code`; nothing else
turns an error into output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


class CasegateError(Exception):
    """A problem the user can fix; printed without a traceback."""

    exit_code = 2

    def __init__(
        self, problems: str | Iterable[str], excerpts: Mapping[str, str] | None = None
    ) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        #: problem → the lines of the file it points at (a YAML error's line and a caret),
        #: printed below it; the problem itself stays one line, for logs and annotations
        self.excerpts = dict(excerpts or {})
        super().__init__("\n".join(self.problems))


class ConfigError(CasegateError):
    """The run configuration (casegate.yml or --set) is invalid."""


class CaseFileError(CasegateError):
    """One or more case files are malformed; each problem names file and line."""


class MissingRecordingError(CasegateError):
    """Replay mode met a request that was never recorded."""


class ResultsError(CasegateError):
    """A results or baseline file is unreadable or incompatible."""


class SystemCallError(Exception):
    """The system under test failed for one request; that case becomes an error.

    Not a CasegateError: it never ends the run.
    """


def located(path: object, line: int | None, message: str) -> str:
    """Format a problem as `path:line: message` (line omitted when unknown)."""
    return f"{path}:{line}: {message}" if line else f"{path}: {message}"


#: the shell's code for a process stopped by Ctrl-C (128 + SIGINT)
INTERRUPTED = 130


def link_loop(exc: BaseException) -> CasegateError | None:
    """A loop of symbolic links met anywhere (a prompt file, a recordings folder, a
    baseline a pull request committed as a loop), as one clear problem; None otherwise.

    Python reports it as an OSError (ELOOP) where the kernel does, and as a
    RuntimeError from `Path.resolve`.
    """
    import errno

    if isinstance(exc, OSError) and exc.errno == errno.ELOOP:
        where = exc.filename or "a path"
        return CasegateError(
            f"{where}: is a loop of symbolic links; casegate reads only real files: remove the link"
        )
    if isinstance(exc, RuntimeError) and str(exc).startswith("Symlink loop"):
        where = str(exc).removeprefix("Symlink loop from ").strip("'")
        return CasegateError(
            f"{where}: is a loop of symbolic links; casegate reads only real files: remove the link"
        )
    return None
