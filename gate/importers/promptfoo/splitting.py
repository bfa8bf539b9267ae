"""promptfoo's `defaultTest` assertions as the suite's `defaults.expect`.

promptfoo runs the defaultTest assertions beside each test's own. casegate merges
`defaults.expect` under each case's `expect`, where a case's own key replaces the default's
and `key: null` removes it. So the import writes, per case, only what differs from the
defaults: nothing for a test that only inherits; the whole check for a key the test adds
to (one `contains` list holding both); `null` for a default the test disables
(`options.disableDefaultAsserts`). Merged, every case judges exactly what it judged before
the split; each is checked against casegate's own merge before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate import checks
from gate.importers.promptfoo.cases import Draft
from gate.importers.promptfoo.scores import build_problem
from gate.suite.defaults import SuiteDefaults, merge

_ABSENT = object()


def common_defaults(drafts: Sequence[Draft]) -> dict[str, Any]:
    """The defaultTest checks every inheriting case has alike (an assertion that reads a
    test's vars differs per case, so it stays in each case)."""
    inheriting = [draft.inherited for draft in drafts if draft.inherited]
    if not inheriting:
        return {}
    first = inheriting[0]
    common = {k: v for k, v in first.items() if all(i.get(k, _ABSENT) == v for i in inheriting)}
    for key in list(common):
        if key in checks.MODIFIERS:
            # A case cannot remove a default modifier (`null` is refused), so one goes into
            # the defaults only when every case has it alike.
            if any(draft.expect.get(key, _ABSENT) != common[key] for draft in drafts):
                del common[key]
        elif build_problem({key: common[key]}) is not None:
            del common[key]  # a check that only holds beside others stays in the cases
    if not set(common) - checks.MODIFIERS:
        return {}
    if build_problem(common) is not None:
        return {}
    return common


def split_defaults(drafts: Sequence[Draft], notes: list[str]) -> dict[str, Any]:
    """`defaults.expect` for the suite; each draft's `expect` becomes its own part of it."""
    defaults = common_defaults(drafts)
    if not defaults:
        return {}
    suite = SuiteDefaults(expect=defaults)
    split: list[tuple[Draft, dict[str, Any]]] = []
    for draft in drafts:
        own = {k: v for k, v in draft.expect.items() if defaults.get(k, _ABSENT) != v}
        own.update({k: None for k in defaults if k not in draft.expect})
        merged = merge({"expect": own}, suite).record.get("expect", {})
        if merged != draft.expect:
            notes.append(
                "`defaultTest` merged into every case: a case's checks would not survive "
                "casegate's merge of `defaults.expect` unchanged"
            )
            return {}
        split.append((draft, own))
    for draft, own in split:
        draft.expect = own
    removed = sum(any(v is None for v in own.values()) for _, own in split)
    shared = sum(any(own.get(k) is not None for k in defaults) for _, own in split)
    notes.append(
        f"`defaultTest`'s assertions became `defaults.expect` ({', '.join(defaults)}) in each "
        "config"
        + (
            f"; {shared} case(s) hold a whole check where the test added to a default one (a "
            "case's own key replaces the default's)"
            if shared
            else ""
        )
        + (
            f"; {removed} case(s) remove defaults with `null` (disableDefaultAsserts)"
            if removed
            else ""
        )
    )
    return defaults
