"""User code (python targets, custom checks), imported on purpose from the config's folder.

casegate's own package and its dependencies always win: the config's folder
goes at the *end* of `sys.path`, and a user module whose top-level name is
already taken by casegate, the standard library or an installed package is
refused with a message naming the file, instead of silently losing (or, worse,
winning) the race.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import sys
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gate.errors import ConfigError

OWN_PACKAGE = "gate"
_lock = threading.Lock()
#: `module:function` → the callable, filled by `prepare` before any sample is judged
_loaded: dict[str, Callable[..., Any]] = {}


class UserCodeError(ConfigError):
    """A user module cannot be imported, or would shadow casegate or a dependency."""


def parse_spec(spec: str, what: str) -> tuple[str, str]:
    """`pkg.module:function` → ("pkg.module", "function"); UserCodeError when malformed."""
    module_name, sep, attribute = spec.partition(":")
    parts = module_name.split(".")
    if (
        not sep
        or not attribute
        or not all(part.isidentifier() for part in parts)
        or not all(part.isidentifier() for part in attribute.split("."))
    ):
        raise UserCodeError(f"{what} takes 'module:function', got {spec!r}")
    return module_name, attribute


def module_file(module_name: str, root: Path) -> Path | None:
    """The file under `root` that `module_name` names, found without importing anything."""
    base = root.joinpath(*module_name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _load_exact(module_name: str, source: Path) -> types.ModuleType:
    """The module compiled from exactly `source`, the file the ruler hashes.

    No import machinery picks the file: a package folder or a `__pycache__` entry of
    the same name (which Python would prefer, even unchecked against the source)
    cannot stand in for it.
    """
    if source.name != "__init__.py" and source.with_suffix("").is_dir():
        raise UserCodeError(
            f"{source}: a folder {source.with_suffix('').name}/ of the same name is beside it; "
            "one module name must mean one file"
        )
    with _lock:
        loaded = sys.modules.get(module_name)
        if loaded is not None and getattr(loaded, "__file__", None) == str(source):
            return loaded
    if "." in module_name:
        importlib.import_module(module_name.rpartition(".")[0])  # its package, as usual
    module = types.ModuleType(module_name)
    module.__file__ = str(source)
    if source.name == "__init__.py":
        module.__path__ = [str(source.parent)]
    code = compile(source.read_bytes(), str(source), "exec", dont_inherit=True)
    sys.modules[module_name] = module
    try:
        exec(code, module.__dict__)  # noqa: S102 - the suite's own code, on purpose
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return module


def local_sources(module_name: str, root: Path) -> dict[str, Path]:
    """The files under `root` that importing `module_name` runs, found by reading them.

    The module, the `__init__.py` of each package above it, and, transitively, every
    module under `root` they import (`import x`, `from x import y`, relative imports).
    Read with `ast`, never imported; an import computed at run time is not seen.
    """
    found: dict[str, Path] = {}
    pending = [module_name]
    while pending:
        name = pending.pop()
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):
            prefix = ".".join(parts[:depth])
            file = module_file(prefix, root)
            if file is None or prefix in found:
                continue
            found[prefix] = file
            pending.extend(_imports_of(prefix, file))
    return found


def _imports_of(module_name: str, file: Path) -> list[str]:
    try:
        tree = ast.parse(file.read_bytes(), str(file))
    except (SyntaxError, ValueError, RecursionError, OSError):
        return []  # it fails when imported, where the error is reported
    package = module_name if file.name == "__init__.py" else module_name.rpartition(".")[0]
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".") if package else []
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            if base:
                names.append(base)
                names.extend(f"{base}.{alias.name}" for alias in node.names)
    return names


def _top_level_file(top: str, root: Path) -> Path | None:
    for candidate in (root / f"{top}.py", root / top):
        if candidate.exists():
            return candidate
    return None


def _collision(top: str, root: Path) -> str | None:
    """Why a user module named `top` under root may not be imported, or None."""
    user_file = _top_level_file(top, root)
    if user_file is None:
        return None
    if top == OWN_PACKAGE:
        owner = "casegate's own package"
    elif top in sys.stdlib_module_names:
        owner = "a standard-library module"
    else:
        found = importlib.util.find_spec(top) if top not in sys.modules else None
        loaded = sys.modules.get(top)
        origin = getattr(found, "origin", None) or getattr(loaded, "__file__", None)
        if origin is None:
            return None
        try:
            Path(origin).resolve().relative_to(root.resolve())
            return None  # it is the user's own module, already importable
        except ValueError:
            owner = f"an installed package ({Path(origin).parent})"
    return (
        f"{user_file}: the module name {top!r} is taken by {owner}; casegate never lets a "
        "repository file stand in for it — rename the file and update the config"
    )


def enable(root: Path) -> None:
    """Make the config's folder importable, after casegate and its dependencies."""
    folder = str(root.resolve())
    with _lock:
        if folder not in sys.path:
            sys.path.append(folder)
    importlib.invalidate_caches()  # the module may be newer than the finder caches


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the `.py` each time: no `__pycache__` entry, checked or not, stands in."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


def sources_only_outside(trusted: list[str]) -> None:
    """From now on, a module found in a folder outside `trusted` is compiled from its
    `.py`: a `.pyc` committed beside it (even one marked "unchecked") never runs, nor does
    a `.pyc` with no source. What a reviewer reads is what runs.

    The trusted folders (the standard library, the installed packages, casegate) keep
    the bytecode their installer compiled: compiling them too made every supervised
    run start 0.5 s later, and 2 s later with the provider SDKs. Nothing is written.
    """
    sys.dont_write_bytecode = True
    roots = tuple(os.path.join(os.path.realpath(folder), "") for folder in trusted if folder)

    def source_only_finder(entry: str) -> importlib.machinery.FileFinder:
        folder = os.path.realpath(entry or os.getcwd())
        if os.path.join(folder, "").startswith(roots) or not os.path.isdir(folder):
            raise ImportError  # the next hook's: Python's own finder, or zip imports
        return importlib.machinery.FileFinder(
            entry,
            (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
            (_SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES),
        )

    sys.path_hooks.insert(0, source_only_finder)
    sys.path_importer_cache.clear()  # finders made before this would still read bytecode


def installed_folders() -> list[str]:
    """The folders whose code the installer put there: the standard library, the
    installed packages and casegate's own package."""
    import sysconfig

    paths = sysconfig.get_paths()
    folders = [paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    return [*folders, str(Path(__file__).resolve().parents[1])]


def load_callable(spec: str, what: str, root: Path) -> Callable[..., Any]:
    """Import `module:function` from the config's folder; UserCodeError with the cause."""
    module_name, attribute = parse_spec(spec, what)
    problem = _collision(module_name.split(".")[0], root)
    if problem:
        raise UserCodeError(f"{what} {spec!r}: {problem}")
    enable(root)
    try:
        source = module_file(module_name, root)
        if source is not None:
            module = _load_exact(module_name, source)
        else:
            module = importlib.import_module(module_name)
    except UserCodeError:
        raise
    except Exception as exc:
        raise UserCodeError(
            f"{what}: cannot import {module_name!r} ({type(exc).__name__}: {exc}); put the "
            f"module beside the config, in {root}"
        ) from None
    target: Any = module
    for part in attribute.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise UserCodeError(f"{what}: {module_name!r} has no attribute {attribute!r}")
    if not callable(target):
        raise UserCodeError(f"{what}: {spec!r} is not callable")
    return target  # type: ignore[no-any-return]


def prepare_check(spec: str, root: Path) -> None:
    """Import one custom check before the run judges anything."""
    function = load_callable(spec, "check", root)
    with _lock:
        _loaded[spec] = function


def check_function(spec: str) -> Callable[..., Any]:
    """A custom check prepared for this run (KeyError: it was not prepared)."""
    with _lock:
        return _loaded[spec]


def _defined_under(function: Any, root: Path) -> bool:
    source = getattr(sys.modules.get(function.__module__), "__file__", None)
    if not isinstance(source, str):
        return False
    return Path(source).resolve().is_relative_to(root.resolve())


def load_from_tree(spec: str, root: Path) -> Callable[..., Any]:
    """Import one custom check through gate.judging.treeimport's finder (already installed for
    `root`), and prepare it for this process's checks; UserCodeError with the cause."""
    module_name, attribute = parse_spec(spec, "check")
    problem = _collision(module_name.split(".")[0], root)
    if problem:
        raise UserCodeError(f"check {spec!r}: {problem}")
    if "." in attribute or attribute.startswith("_"):
        # `module:TABLE.pop` would let one case's check change what another's sees.
        raise UserCodeError(
            f"check {spec!r}: name a function of the module (module:function), not an "
            "attribute path or a private name"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UserCodeError(f"check: cannot import {module_name!r} ({exc})") from None
    except Exception as exc:
        raise UserCodeError(
            f"check: importing {module_name!r} raised {type(exc).__name__}: {exc}"
        ) from None
    target = getattr(module, attribute, None)
    if not inspect.isfunction(target) or not _defined_under(target, root):
        raise UserCodeError(
            f"check {spec!r}: not a function defined in the suite's own modules (a builtin, "
            "a class or a method of another object cannot be a check)"
        )
    with _lock:
        _loaded[spec] = target
    return target
