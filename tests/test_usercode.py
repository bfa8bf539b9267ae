"""User code comes from the config's folder, on purpose, and never stands in for casegate."""

from __future__ import annotations

import py_compile
import sys
from pathlib import Path

import pytest

from gate import usercode
from gate.cli import main
from tests.conftest import Project, case


@pytest.mark.parametrize(
    ("file", "owner"),
    [
        ("gate.py", "casegate's own package"),
        ("gate/__init__.py", "casegate's own package"),
        ("json.py", "a standard-library module"),
        ("tabulate.py", "an installed package"),
        ("yaml/__init__.py", "an installed package"),
    ],
)
def test_a_module_named_like_casegate_or_a_dependency_is_refused(
    tmp_path: Path, file: str, owner: str
) -> None:
    path = tmp_path / file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("def fn(text, case):\n    return True\n")
    module = file.removesuffix("/__init__.py").removesuffix(".py")
    with pytest.raises(usercode.UserCodeError) as caught:
        usercode.load_callable(f"{module}:fn", "check", tmp_path)
    message = str(caught.value)
    assert owner in message and str(tmp_path / module) in message and "rename" in message


def test_the_config_folder_is_searched_after_casegate(tmp_path: Path) -> None:
    (tmp_path / "my_checks_after.py").write_text("def fn(text, case):\n    return True\n")
    before = list(sys.path)
    try:
        function = usercode.load_callable("my_checks_after:fn", "check", tmp_path)
        assert function("x", None) is True
        assert sys.path[: len(before)] == before and sys.path[-1] == str(tmp_path.resolve())
    finally:
        sys.path[:] = before


@pytest.mark.parametrize("spec", ["nocolon", "a.b:", ":fn", "a b:c", "1mod:fn", "mod:fn()"])
def test_malformed_specs(spec: str, tmp_path: Path) -> None:
    with pytest.raises(usercode.UserCodeError, match="takes 'module:function'"):
        usercode.load_callable(spec, "check", tmp_path)


def test_validate_names_the_case_line_of_an_unimportable_check(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", check="no_such_checks_mod:fn")])
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert "cases/cases.yaml:1: case 'a': check: cannot import 'no_such_checks_mod'" in err
    assert "put the module beside the config" in err


def test_validate_refuses_a_check_module_that_shadows_a_dependency(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_text("requests.py", "def fn(text, case):\n    return True\n")
    project.write_cases([case("a", "hi", check="requests:fn")])
    assert main(["validate"]) == 2
    assert "the module name 'requests' is taken by an installed package" in capsys.readouterr().err


def test_loading_cases_imports_no_user_code(project: Project) -> None:
    marker = project.root / "imported"
    module = f"loud_{project.module}"
    project.write_text(
        f"{module}.py", f"open({str(marker)!r}, 'w')\ndef fn(t, c):\n    return True\n"
    )
    project.write_cases([case("a", "hi", check=f"{module}:fn")])
    from gate.suite.project import load_project

    load_project(project.config_path)
    assert not marker.exists()


def test_validate_imports_the_python_target_and_blames_its_line(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write_cases([case("a", "hi", contains="hi")])
    project.write_config(system={"name": "x", "provider": "python", "target": "no_bot_here:answer"})
    assert main(["validate"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("casegate: casegate.yml:6: system.target: cannot import 'no_bot_here'")
    project.write_config()
    assert main(["validate"]) == 0


def test_the_module_loaded_is_exactly_the_file_the_ruler_hashes(tmp_path: Path) -> None:
    # A cached .pyc marked "unchecked" would win in Python's own import: not here.
    module = "hashed_check_mod"
    (tmp_path / f"{module}.py").write_text("def fn(text, case):\n    return 'lenient'\n")
    py_compile.compile(
        str(tmp_path / f"{module}.py"),
        cfile=str(tmp_path / "__pycache__" / f"{module}.{sys.implementation.cache_tag}.pyc"),
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    (tmp_path / f"{module}.py").write_text("def fn(text, case):\n    return 'strict'\n")
    assert usercode.load_callable(f"{module}:fn", "check", tmp_path)("x", None) == "strict"


def test_a_package_beside_a_module_of_the_same_name_is_refused(tmp_path: Path) -> None:
    (tmp_path / "twin_check_mod.py").write_text("def fn(text, case):\n    return True\n")
    (tmp_path / "twin_check_mod").mkdir()
    (tmp_path / "twin_check_mod" / "__init__.py").write_text("def fn(t, c):\n    return 1\n")
    with pytest.raises(usercode.UserCodeError, match="one module name must mean one file"):
        usercode.load_callable("twin_check_mod:fn", "check", tmp_path)
