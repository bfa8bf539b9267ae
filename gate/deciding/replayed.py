"""What a verdict was measured on: the live system, or recordings — and then when they were
captured, how many of them the change under test added or changed, and what the last drift
run found when it compared them with the live system.

A replayed verdict judges the recorded answers. It says nothing about what the live system
answers today, and the report never words it as if it did. The dates are what the recording
files say (the author's claim, in a pull request); the count of changed recordings is what
the base commit's files show. Every value is parsed and formatted here (dates from parsed
datetimes, counts), so nothing a recording file holds reaches the headline as text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: a drift run's outcome, as the headline names it
DRIFT_RESULTS = ("in step", "drifted", "incomplete")
#: the cases on changed recordings the headline names before "and N more"
CHANGED_LISTED = 10


def day_of(captured_at: str | None) -> dt.date | None:
    """The UTC day of an ISO 8601 timestamp; None when absent or not one."""
    if not isinstance(captured_at, str) or not captured_at or len(captured_at) > 64:
        return None
    try:
        moment = dt.datetime.fromisoformat(captured_at)
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(dt.UTC)
    return moment.date()


@dataclass(frozen=True, slots=True)
class LastDrift:
    """The last drift run on record (gate.drift.replayed reads it)."""

    day: str
    #: one of DRIFT_RESULTS
    result: str
    cases: int
    flips: int = 0
    changed: int = 0
    errors: int = 0

    def text(self) -> str:
        if self.result == "in step":
            return f"{self.day}, in step ({self.cases} case(s) run live answered as recorded)"
        if self.result == "drifted":
            parts = [f"{self.flips} verdict flip(s)"] if self.flips else []
            if self.changed:
                parts.append(f"{self.changed} other case(s) answering differently")
            return f"{self.day}, drifted: {', '.join(parts) or 'answers changed'}"
        return f"{self.day}, incomplete: {self.errors} case(s) could not be measured live"

    def to_dict(self) -> dict[str, Any]:
        return {
            "date": self.day,
            "result": self.result,
            "cases": self.cases,
            "flips": self.flips,
            "changed": self.changed,
            "errors": self.errors,
        }


@dataclass(frozen=True, slots=True)
class ReplayAccount:
    """How the candidate's outputs were produced, for the report's headline."""

    #: the candidate's mode: "replay", "live" or "record" (live, each answer recorded)
    mode: str
    #: replayed samples, and the first and last day they were captured (None: no date)
    samples: int = 0
    captured_from: str | None = None
    captured_to: str | None = None
    #: replayed samples whose recording has no readable capture date
    undated: int = 0
    #: replayed samples whose recording the change added or changed against `relative_to`
    #: (None: no base to compare with, outside a pull request or `check --base`)
    changed: int | None = None
    changed_cases: tuple[str, ...] = ()
    relative_to: str | None = None
    #: why the changed recordings could not be counted against the base, if they could not
    changed_problem: str | None = None
    #: of `changed_cases`, those whose every changed recording carries CI's seal
    #: (gate.produce.seal) and is no older than the base's recording of the same request
    sealed_cases: tuple[str, ...] = ()
    #: why no seal could be checked (None: the gate held the recording key)
    seal_problem: str | None = None
    last_drift: LastDrift | None = None
    #: the system's code (the python target's module, the command's files) the change
    #: edited against `relative_to`: replayed answers recorded before it are the old code's
    code_changed: tuple[str, ...] = ()
    #: where the gate looked for the last drift run ("": it could not look)
    drift_source: str = ""
    drift_problem: str | None = None

    @property
    def replayed(self) -> bool:
        return self.mode == "replay"

    @property
    def unsealed_cases(self) -> tuple[str, ...]:
        """The changed cases judged on a recording CI did not seal (or that could not be
        checked): the author's answers, as far as the gate can tell."""
        sealed = set(self.sealed_cases)
        return tuple(case for case in self.changed_cases if case not in sealed)

    def title(self) -> str:
        """A few words after the verdict: never a replayed ship read as a live one."""
        return "replayed, not live" if self.replayed else "live"

    def captured_text(self) -> str:
        if not self.samples:
            return "replayed from recordings (no sample was replayed)"
        if self.captured_from is None or self.captured_to is None:
            return f"replayed from {self.samples} recording(s), none with a capture date"
        span = (
            self.captured_from
            if self.captured_from == self.captured_to
            else f"{self.captured_from}–{self.captured_to}"
        )
        text = f"replayed from recordings captured {span}"
        if self.undated:
            text += f" ({self.undated} of {self.samples} have no capture date)"
        return text

    def changed_text(self) -> str:
        if self.changed is not None:
            return f"{self.changed} changed in this pull request, against {self.relative_to}"
        return self.changed_problem or ""

    def drift_text(self) -> str:
        if self.last_drift is not None:
            text = f"last drift run: {self.last_drift.text()}"
            if self.captured_to is not None and self.last_drift.day < self.captured_to:
                text += "; some of these recordings are newer than it"
            return text
        if self.drift_problem:
            return f"last drift run unknown: {self.drift_problem}"
        where = f" (looked for {self.drift_source})" if self.drift_source else ""
        return f"no drift run on record{where}"

    def lines(self) -> list[str]:
        """The headline's account, one sentence a line (plain text: the caller escapes)."""
        if not self.replayed:
            how = "recorded as they arrived" if self.mode == "record" else "nothing replayed"
            return [f"live: every output came from the system during this run ({how})"]
        captured = self.captured_text()
        changed = self.changed_text()
        lines = [captured + (f" ({changed})" if changed else "")]
        if self.unsealed_cases:
            # Named, since these are the answers the author of the change recorded: casegate
            # cannot tell how they were made (one draw of several, or edited by hand).
            lines.append(
                "judged on recordings this change added or changed, not sealed by CI: "
                + listed(self.unsealed_cases)
                + f" ({self.seal_problem or 'made by its author, as far as the gate can tell'}"
                + "; rerun them in CI to check them)"
            )
        if self.sealed_cases:
            lines.append(
                "changed recordings sealed by CI (made by casegate in CI, unedited since): "
                + listed(self.sealed_cases)
            )
        if self.code_changed:
            # Recordings are keyed on the config, not the code: a code change alone replays
            # the answers the old code gave.
            recorded_again = (
                "and no recording did: these are the old code's answers"
                if self.changed == 0
                else "while recordings are keyed on the config, not the code: any answer "
                "recorded before the change is the old code's"
            )
            lines.append(
                f"the system's code changed in this pull request ({listed(self.code_changed)}) "
                f"{recorded_again}; bump `system.version` and record again to judge the new "
                "code"
            )
        return [
            *lines,
            "this verdict judges those recorded answers, not what the live system answers today",
            self.drift_text(),
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "captured_from": self.captured_from,
            "captured_to": self.captured_to,
            "undated": self.undated,
            "changed_in_pr": self.changed,
            "changed_cases": list(self.changed_cases),
            "changed_relative_to": self.relative_to,
            "changed_problem": self.changed_problem,
            "sealed_cases": list(self.sealed_cases),
            "unsealed_cases": list(self.unsealed_cases),
            "seal_problem": self.seal_problem,
            "last_drift": None if self.last_drift is None else self.last_drift.to_dict(),
            "drift_source": self.drift_source,
            "drift_problem": self.drift_problem,
            "system_code_changed": list(self.code_changed),
        }


def listed(cases: tuple[str, ...]) -> str:
    more = len(cases) - CHANGED_LISTED
    return ", ".join(cases[:CHANGED_LISTED]) + (f" and {more} more" if more > 0 else "")


def account(
    mode: str | None,
    dates: Iterable[str | None],
    *,
    changed: int | None = None,
    changed_cases: Iterable[str] = (),
    relative_to: str | None = None,
    changed_problem: str | None = None,
    sealed_cases: Iterable[str] = (),
    seal_problem: str | None = None,
    last_drift: LastDrift | None = None,
    drift_source: str = "",
    drift_problem: str | None = None,
    code_changed: Iterable[str] = (),
) -> ReplayAccount:
    """The account of a run in `mode` that replayed samples captured at `dates`."""
    if mode != "replay":
        return ReplayAccount(mode=mode or "live")
    days, undated, count = [], 0, 0
    for captured in dates:
        count += 1
        day = day_of(captured)
        if day is None:
            undated += 1
        else:
            days.append(day)
    return ReplayAccount(
        mode="replay",
        samples=count,
        captured_from=min(days).isoformat() if days else None,
        captured_to=max(days).isoformat() if days else None,
        undated=undated,
        changed=changed,
        changed_cases=tuple(sorted(set(changed_cases))),
        relative_to=relative_to,
        changed_problem=changed_problem,
        sealed_cases=tuple(sorted(set(sealed_cases))),
        seal_problem=seal_problem,
        last_drift=last_drift,
        drift_source=drift_source,
        drift_problem=drift_problem,
        code_changed=tuple(sorted(set(code_changed))),
    )
