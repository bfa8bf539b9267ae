"""The suite's composition in words: `casegate suite`'s text and the markdown report's footer
(the figures are gate.suite.composition's)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gate.deciding.noise.clusters import cluster_of
from gate.reporting.show import one_line
from gate.suite.cases import Case
from gate.suite.composition import RECENT_DAYS, Composition, composition

if TYPE_CHECKING:
    from gate.suite.config import LoadedConfig

#: tags, clusters and recent ids the text names before it counts the rest
LISTED = 50


def composition_of(
    loaded: LoadedConfig,
    cases: Sequence[Case],
    *,
    days: int = RECENT_DAYS,
    today: dt.date | None = None,
) -> Composition:
    """The figures as of `today` (default: today in UTC), clusters as the noise-aware gate
    groups them (a case's own `cluster:`, else the suite's `clusters:` rule)."""
    rule = loaded.config.clusters
    return composition(
        cases,
        today=today or dt.datetime.now(dt.UTC).date(),
        recent_days=days,
        cluster=lambda case: cluster_of(case.id, case.cluster, case.tags, rule),
    )


def footer(found: Composition, *, selected: bool = False) -> str:
    """One line of counts for the end of the markdown report: no tag, cluster or case id
    (they come from the pull request and would need escaping; the counts say enough).
    `selected`: the figures are of a `--case`/`--tag` selection, not the whole suite."""
    parts = [
        f"{found.cases} case(s)",
        f"{found.critical} critical ({found.critical_share:.0%})",
    ]
    tags = len(found.by_tag)
    unguarded = len(found.tags_without_critical)
    parts.append(f"{tags} tag(s)" + (f", {unguarded} without a critical case" if tags else ""))
    parts.append(f"{found.explained_share:.0%} with provenance")
    parts.append(f"{len(found.recent)} added in {found.recent_days} days")
    if found.undated:
        parts.append(f"{found.undated} undated")
    return ("Selected cases: " if selected else "Suite: ") + " · ".join(parts)


def text(found: Composition, holdout: str | None = None) -> str:
    """`casegate suite`: the figures, a heading and a few lines each; names on one line."""
    lines = [
        f"{found.cases} case(s), {found.critical} critical ({found.critical_share:.0%})",
        "",
        f"tags ({len(found.by_tag)}, {found.untagged} case(s) untagged):",
        *_counted(found.by_tag),
    ]
    unguarded = found.tags_without_critical
    lines.append(
        f"tags without a critical case ({len(unguarded)}): {_names(unguarded)}"
        if unguarded
        else "tags without a critical case: none"
    )
    lines += [
        "",
        f"clusters ({len(found.by_cluster)}, {found.unclustered} case(s) in none):",
        *(_counted(found.by_cluster) or ["  none declared (`cluster:`) or derived (`clusters:`)"]),
        "",
        "age (`added:`): "
        + (
            f"oldest {found.oldest}, median {found.median}, newest {found.newest}; "
            if found.dated
            else ""
        )
        + f"{found.undated} of {found.cases} case(s) have no date",
        f"provenance: {found.explained} of {found.cases} case(s) ({found.explained_share:.0%}) "
        "say why they exist (`provenance` or a `note`)"
        + (
            f"; {found.placeholder_notes} note(s) still say the placeholder"
            if found.placeholder_notes
            else ""
        ),
        f"added in the {found.recent_days} days to {found.as_of} ({len(found.recent)})"
        + (f": {_names(found.recent)}" if found.recent else ": none"),
    ]
    if holdout is not None:
        lines.append(f"and a held-out slice in {_name(holdout)} (sealed: never counted here)")
    return "\n".join(lines)


def _name(name: str) -> str:
    """A tag, cluster or case name as the pull request wrote it, safe to print: control
    characters escaped (no terminal escape), one line, quoted when it starts with `:` or a
    space, so no line of the output can begin a workflow command (`::error::`, which the
    runner finds after leading spaces too), and `##[` broken up."""
    shown = one_line(name)  # `##[` broken up there: the runner reads it anywhere in a line
    return json.dumps(shown) if shown.lstrip().startswith(":") or shown != shown.strip() else shown


def _counted(pairs: tuple[tuple[str, int], ...]) -> list[str]:
    shown = [f"  {_name(name)}: {count}" for name, count in pairs[:LISTED]]
    if len(pairs) > LISTED:
        shown.append(f"  and {len(pairs) - LISTED} more")
    return shown


def _names(names: tuple[str, ...]) -> str:
    shown = ", ".join(_name(name) for name in names[:LISTED])
    return shown + (f" and {len(names) - LISTED} more" if len(names) > LISTED else "")
