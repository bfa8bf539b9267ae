"""A promptfoo tests spreadsheet (`.xlsx`), read as data with the standard library alone.

promptfoo reads the first sheet (or `tests.xlsx#Name`, `tests.xlsx#2`) with the first row as
column names, every other non-blank row a test, as its CSV rows are (tables.py); a number
stays a number, as `sheet_to_json` gives it. Formulas are not evaluated: the value the sheet
saved with them is read. The archive is refused past MAX_XLSX_BYTES unpacked, and an XML
part that declares a DOCTYPE is refused, so no entity is ever expanded.
"""

from __future__ import annotations

import posixpath
import re
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path
from typing import Any

from gate.importers.promptfoo.reading import problem_at
from gate.limits import MB

#: the most an .xlsx may unpack to (all its parts): a tests file, not a data warehouse
MAX_XLSX_BYTES = 20 * MB
_MAIN = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
_RELS = "{http://schemas.openxmlformats.org/package/2006/relationships}"
_REL_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
_CELL = re.compile(r"([A-Z]{1,3})(\d+)")


def rows_in_xlsx(path: Path, sheet: str | None, shown: Path) -> list[tuple[int, dict[str, Any]]]:
    """(row number, {column name: value}) for each non-blank row under the header row."""
    try:
        with zipfile.ZipFile(path) as archive:
            if sum(info.file_size for info in archive.infolist()) > MAX_XLSX_BYTES:
                raise problem_at(shown, None, f"unpacks past {MAX_XLSX_BYTES // MB} MB")
            parts = {name: archive.read(name) for name in archive.namelist()}
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise problem_at(shown, None, f"not a readable .xlsx workbook ({exc})") from None
    target = _sheet_part(parts, sheet, shown)
    strings = [_text(item) for item in _xml(parts, "xl/sharedStrings.xml", shown, optional=True)]
    table: dict[int, dict[int, Any]] = {}
    for row in _xml(parts, target, shown).iter(f"{_MAIN}row"):
        for cell in row.iter(f"{_MAIN}c"):
            found = _CELL.fullmatch(cell.get("r", ""))
            if found is None:
                raise problem_at(shown, None, f"{target}: a cell without a reference")
            value = _value(cell, strings, shown)
            table.setdefault(int(found.group(2)), {})[_column(found.group(1))] = value
    if not table:
        return []
    first = min(table)
    header = {col: str(name).strip() for col, name in table[first].items() if name != ""}
    rows = []
    for number in sorted(n for n in table if n > first):
        cells = table[number]
        if all(value == "" for value in cells.values()):
            continue
        rows.append((number, {name: cells.get(col, "") for col, name in header.items()}))
    return rows


def _sheet_part(parts: dict[str, bytes], sheet: str | None, shown: Path) -> str:
    workbook = _xml(parts, "xl/workbook.xml", shown)
    sheets = [(s.get("name", ""), s.get(_REL_ID, "")) for s in workbook.iter(f"{_MAIN}sheet")]
    if not sheets:
        raise problem_at(shown, None, "the workbook has no sheet")
    if sheet is None:
        chosen = sheets[0]
    elif sheet.isdigit() and 1 <= int(sheet) <= len(sheets):
        chosen = sheets[int(sheet) - 1]
    else:
        matching = [entry for entry in sheets if entry[0] == sheet]
        if not matching:
            names = ", ".join(name for name, _ in sheets)
            raise problem_at(shown, None, f"no sheet {sheet!r} (it has: {names})")
        chosen = matching[0]
    relations = _xml(parts, "xl/_rels/workbook.xml.rels", shown)
    for relation in relations.iter(f"{_RELS}Relationship"):
        if relation.get("Id") == chosen[1]:
            target = relation.get("Target", "")
            return posixpath.normpath(
                target.lstrip("/") if target.startswith("/") else posixpath.join("xl", target)
            )
    raise problem_at(shown, None, f"sheet {chosen[0]!r} points at no part of the workbook")


def _xml(parts: dict[str, bytes], name: str, shown: Path, optional: bool = False) -> ET.Element:
    data = parts.get(name)
    if data is None:
        if optional:
            return ET.Element("none")
        raise problem_at(shown, None, f"not a readable .xlsx workbook (no {name})")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise problem_at(shown, None, f"{name} declares a DOCTYPE, which a workbook never needs")
    try:
        return ET.fromstring(data)  # noqa: S314 - no DOCTYPE, so no entity to expand
    except ET.ParseError as exc:
        raise problem_at(shown, None, f"{name} is not XML ({exc})") from None


def _text(node: ET.Element) -> str:
    """A string item: its `t` runs joined (rich text), phonetic runs left out."""
    phonetic = {id(t) for run in node.iter(f"{_MAIN}rPh") for t in run.iter(f"{_MAIN}t")}
    return "".join(t.text or "" for t in node.iter(f"{_MAIN}t") if id(t) not in phonetic)


def _value(cell: ET.Element, strings: list[str], shown: Path) -> Any:
    kind = cell.get("t", "n")
    if kind == "inlineStr":
        inline = cell.find(f"{_MAIN}is")
        return _text(inline) if inline is not None else ""
    raw = cell.findtext(f"{_MAIN}v")
    if raw is None:
        return ""
    if kind == "s":
        if not raw.isdigit() or int(raw) >= len(strings):
            raise problem_at(shown, None, f"cell {cell.get('r')}: no shared string {raw}")
        return strings[int(raw)]
    if kind == "b":
        return raw == "1"
    if kind in ("str", "e"):
        return raw
    try:
        number = float(raw)
    except ValueError:
        return raw
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


def _column(letters: str) -> int:
    index = 0
    for letter in letters:
        index = index * 26 + ord(letter) - ord("A") + 1
    return index
