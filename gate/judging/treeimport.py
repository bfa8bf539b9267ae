"""Import the suite's own modules from one tree only, and note what they touched.

The judging process (gate.judging.judgeworker) imports the custom checks from the base
commit's extraction. Python's own import system would let a package folder, a
compiled extension or a `.pyc` stand in for a module's source, and would look on
`sys.path` too; `TreeFinder` does neither: a module is a `.py` file (or a package's
`__init__.py`) under the tree's root, compiled from its source, and a name that is
both a file and a folder is refused. `Footprint` records, through an audit hook,
every file under the root that the checks opened or listed and whether they started
a program: the ruler compares exactly those files between the two trees.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class AmbiguousModule(ImportError):
    """A module name that means both a file and a folder."""


class _SourceLoader(importlib.abc.Loader):
    def __init__(self, origin: Path, finder: TreeFinder) -> None:
        self.origin = origin
        self.finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        code = compile(self.origin.read_bytes(), str(self.origin), "exec", dont_inherit=True)
        self.finder.loaded[module.__name__] = self.origin
        exec(code, module.__dict__)  # noqa: S102 - the base commit's own check, on purpose


class TreeFinder(importlib.abc.MetaPathFinder):
    """Finds modules as `.py` sources under `root`, nowhere else, never compiled files.

    Put last on `sys.meta_path`: the standard library and casegate's dependencies are
    found first (gate.usercode refuses a suite module that collides with one).
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        #: module name → the file it was compiled from
        self.loaded: dict[str, Path] = {}

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        parts = fullname.split(".")
        folder = self.root.joinpath(*parts)
        source = folder.parent / f"{parts[-1]}.py"
        package = folder / "__init__.py"
        if source.is_file() and folder.is_dir():
            raise AmbiguousModule(
                f"{fullname}: both {self._shown(source)} and the folder {self._shown(folder)}/ "
                "exist; one module name must mean one file"
            )
        if package.is_file():
            origin, is_package = package, True
        elif source.is_file():
            origin, is_package = source, False
        else:
            return None
        if not origin.resolve().is_relative_to(self.root):
            return None  # a link out of the tree is not part of it
        spec = importlib.machinery.ModuleSpec(
            fullname, _SourceLoader(origin, self), origin=str(origin), is_package=is_package
        )
        if is_package:
            spec.submodule_search_locations = [str(folder)]
        spec.has_location = True
        return spec

    def _shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()


class Footprint:
    """What the code under judgement touched under `root` (an audit hook, installed once)."""

    #: audit events that read a file by path, and those that list a folder
    OPENS = frozenset({"open"})
    LISTS = frozenset({"os.listdir", "os.scandir", "glob.glob"})
    STARTS = frozenset(
        {"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork"}
    )

    #: what a check may read outside the tree without the review needing to compare it:
    #: the system's own files and the kernel's views
    SYSTEM = ("/proc", "/dev", "/sys", "/etc", "/usr", "/lib", "/lib64", "/bin", "/sbin")

    def __init__(self, root: Path, also_allowed: Sequence[str] = ()) -> None:
        self.root = root.resolve()
        self.opened: set[str] = set()
        self.listed: set[str] = set()
        #: files outside the tree, the interpreter and the system that a check read
        self.outside: set[str] = set()
        self.programs = False
        self.active = False
        # The interpreter, the standard library, installed packages and casegate itself.
        allowed = [*self.SYSTEM, *also_allowed, sys.prefix, sys.base_prefix, sys.exec_prefix]
        allowed += [entry for entry in sys.path if entry]
        self.allowed = tuple(os.path.realpath(entry) for entry in allowed)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        if not self.active:
            return
        if event in self.STARTS:
            self.programs = True
        elif event in self.OPENS or event in self.LISTS:
            target = args[0] if args else None
            relative = self._relative(target)
            if relative is not None:
                (self.opened if event in self.OPENS else self.listed).add(relative)
            else:
                self._note_outside(target)

    def _note_outside(self, target: Any) -> None:
        if isinstance(target, bytes):
            target = os.fsdecode(target)
        if not isinstance(target, str | os.PathLike):
            return
        path = os.path.realpath(target)
        if not any(path == base or path.startswith(base + os.sep) for base in self.allowed):
            self.outside.add(path)

    def _relative(self, target: Any) -> str | None:
        if isinstance(target, bytes):
            target = os.fsdecode(target)
        if not isinstance(target, str | os.PathLike):
            return None  # a file descriptor: opened by path first
        try:
            path = Path(os.path.abspath(target))
            relative = path.relative_to(self.root)
        except (ValueError, OSError):
            return None
        return relative.as_posix()

    def install(self) -> None:
        sys.addaudithook(self.hook)
        self.active = True
