"""Is the baseline still the yardstick it claims to be? Warnings that never block.

A baseline goes stale three ways: another casegate wrote it (another results
schema), the config moved on without it (a merge that did not refresh it), or
time did (a hosted model drifts under the same name). Each is said at the top of
the report; none changes the verdict, since the baseline is still the best
reference there is and refusing to gate would only hide the comparison.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from gate.produce.recordings import TRANSPORT_KEYS
from gate.results import SCHEMA, RunResults
from gate.suite.config import Config, LoadedConfig
from gate.yamlfile import printable

#: keys that change no verdict: how fast, what is only warned about, how the system is
#: reached (its transport settings and labels, which recordings ignore too), whether a
#: pull request's changed recordings are made again first (`verify`), and what `casegate
#: add` drops from production data (`privacy`)
NOT_MEASURED = frozenset(
    {"concurrency", "baseline_max_age_days", "drift", "recordings.max_age_days", "history"}
    | {"verify", "privacy"}
    | {f"system.{key}" for key in TRANSPORT_KEYS}
)
REFRESH = "refresh it with `casegate baseline` (the Action's `command: baseline`)"
SHOWN_DIFFERENCES = 5
#: how a pull request's check names the config its baseline is held to
BASE_CONFIG = "the base commit's config"


def baseline_warnings(
    baseline: RunResults,
    reference: LoadedConfig | None,
    *,
    against: str = "this config",
    ignore: Sequence[str] = (),
    now: dt.datetime | None = None,
) -> list[str]:
    """Why `baseline` may no longer be the right reference, one sentence each.

    `reference` is the config the baseline should have been written with: the
    base commit's in a pull request, else the one in use (`against` names it);
    `ignore` holds dotted keys this run overrode on purpose (`--set`).
    """
    warnings = []
    if baseline.schema != SCHEMA:
        warnings.append(
            f"the baseline was written by casegate {_brief(baseline.casegate_version)} with "
            f"results schema {_brief(baseline.schema)}; this casegate writes {SCHEMA}, and "
            f"ignored what it does not know: {REFRESH}"
        )
    if reference is not None and baseline.config_hash != reference.config_hash():
        moved = config_differences(baseline.config, reference.as_dict(), ignore)
        if moved:
            shown = ", ".join(moved[:SHOWN_DIFFERENCES])
            more = len(moved) - SHOWN_DIFFERENCES
            shown += f" and {more} more" if more > 0 else ""
            # Against the base commit the staleness is the base branch's, not this change's:
            # its baseline missed the refresh after an earlier merge.
            when = (
                "the base branch's baseline missed its refresh after an earlier merge there; "
                "on that branch, "
                if against == BASE_CONFIG
                else "it was not refreshed after the config changed; once the change is merged, "
            )
            warnings.append(
                f"the baseline was written with another config than {against} ({shown}): "
                f"{when}{REFRESH}"
            )
    limit = (
        reference.config.baseline_max_age_days
        if reference is not None
        else Config.model_fields["baseline_max_age_days"].default
    )
    age = _age_warning(baseline.created_at, limit, now or dt.datetime.now(dt.UTC))
    if age:
        warnings.append(age)
    return warnings


def _age_warning(created_at: str, limit: int | None, now: dt.datetime) -> str | None:
    if limit is None:
        return None
    try:
        created = dt.datetime.fromisoformat(created_at)
    except (TypeError, ValueError):
        return (
            f"the baseline's created_at {_brief(created_at)} is not a date, so its age is "
            f"unknown: {REFRESH}"
        )
    if created.tzinfo is None:
        created = created.replace(tzinfo=dt.UTC)  # casegate writes UTC
    days = (now - created).days
    if days <= limit:
        return None
    return (
        f"the baseline is {days} days old (written {created.date().isoformat()}), older than "
        f"baseline_max_age_days ({limit}): a hosted model can drift under the same name; "
        f"{REFRESH}"
    )


def config_differences(
    before: Mapping[str, Any], after: Mapping[str, Any], ignore: Sequence[str] = ()
) -> list[str]:
    """Dotted keys whose values differ, as `key a → b` when both are short.

    A key only `after` has at its default is no difference (a newer casegate
    added it); a key only `before` has is one this casegate does not know, and
    the schema warning speaks for it.
    """
    skipped = {*NOT_MEASURED, *ignore}
    found: list[str] = []
    _walk(
        _paths_as_mappings(before),
        _paths_as_mappings(after),
        _defaults_of(Config),
        "",
        skipped,
        found,
    )
    return found


def _paths_as_mappings(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """`recordings: PATH` and `recordings: {path: PATH, …}` say the same about the path."""
    recordings = config.get("recordings")
    if isinstance(recordings, str):
        return {**config, "recordings": {"path": recordings}}
    return config


_ABSENT = object()


def _walk(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    defaults: Any,
    prefix: str,
    skipped: set[str],
    found: list[str],
) -> None:
    for key in sorted(after, key=str):
        path = f"{prefix}{key}"
        if path in skipped:
            continue
        new = after[key]
        default = defaults.get(key, _ABSENT) if isinstance(defaults, dict) else _ABSENT
        old = before.get(key, _ABSENT)
        if old is _ABSENT and new == default:
            continue
        if isinstance(new, dict) and (old is _ABSENT or isinstance(old, dict)):
            inner = old if isinstance(old, dict) else {}
            nested = default if isinstance(default, dict) else {}
            _walk(inner, new, nested, path + ".", skipped, found)
        elif old != new:
            found.append(_difference(path, None if old is _ABSENT else old, new))


def overridden_keys(overrides: Sequence[str]) -> list[str]:
    """The dotted keys `--set KEY=VALUE` overrides name: the run's own experiment."""
    return [text.partition("=")[0].strip() for text in overrides]


def _difference(path: str, old: Any, new: Any) -> str:
    before, after = _scalar(old), _scalar(new)
    if before is None or after is None:
        return f"{printable(path)} changed"
    return f"{printable(path)} {before} → {after}"


def _scalar(value: Any) -> str | None:
    if value is None:
        return "unset"
    if isinstance(value, str):
        return json.dumps(value) if len(value) <= 40 else None
    if isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"{value:g}"
    return None


def _defaults_of(model: type[BaseModel]) -> dict[str, Any]:
    """The model's field defaults as the config's JSON form has them, nested models too."""
    found: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            found[name] = _defaults_of(kind)
        elif not info.is_required():
            value = info.get_default(call_default_factory=True)
            found[name] = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    return found


def _brief(value: object) -> str:
    text = printable(str(value))
    return text if len(text) <= 40 else text[:39] + "…"
