"""Clusters of near-duplicate cases: they move together, so the suite test flips them together.

A case may declare `cluster:`; otherwise the suite may derive one for every case
with `clusters: {by: tag}` (the case's first tag) or `clusters: {by: id_prefix}`
(the id up to its last `-`, `_`, `.` or `/`: `refund-01` and `refund-02` are one).
A suite with neither has no clusters and is tested case by case, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from gate.suite.sections import ClustersConfig

_SEPARATOR = re.compile(r"[-_./]")


def cluster_of(
    case_id: str, declared: str | None, tags: list[str], clusters: ClustersConfig | None
) -> str | None:
    """The case's cluster: its own `cluster:`, else the suite's rule, else none."""
    if declared:
        return declared
    if clusters is None:
        return None
    if clusters.by == "tag":
        return tags[0] if tags else None
    parts = _SEPARATOR.split(case_id)
    return case_id[: len(case_id) - len(parts[-1]) - 1] if len(parts) > 1 else None


def configured(config: Mapping[str, Any]) -> ClustersConfig | None:
    """The `clusters:` rule a run recorded in its config (None: none, or unreadable)."""
    data = config.get("clusters")
    if not isinstance(data, dict):
        return None
    try:
        return ClustersConfig.model_validate(data)
    except ValueError:
        return None


def clusters_of(cases: Iterable[Any], config: Mapping[str, Any]) -> dict[str, str]:
    """Case id → cluster for every clustered case of a run (its CaseResults)."""
    rule = configured(config)
    found = {}
    for case in cases:
        cluster = cluster_of(case.id, case.cluster, case.tags, rule)
        if cluster:
            found[case.id] = cluster
    return found
