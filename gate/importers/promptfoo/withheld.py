"""What an import left out on purpose (secrets, endpoints), said in MIGRATION.md and the
terminal, and counted: an endpoint or a secret is never a mapped setting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gate.importers.promptfoo.js import inline_code
from gate.importers.promptfoo.providers import Pin, foreign_key_advice
from gate.importers.promptfoo.sensitive import Endpoint, Scrubber
from gate.importers.promptfoo.writing import Variant
from gate.yamlfile import printable

#: key paths named in one terminal line before "and N more"
SHOWN_IN_TERMINAL = 6


@dataclass(frozen=True)
class Group:
    """Endpoints left out of one place: a config's system, the judge pin, or the suite."""

    label: str  # "`casegate.yml`", "the judge pin", "the suite"
    written: str  # where they are commented out
    endpoints: list[Endpoint]
    kind: str | None = None  # the casegate provider, for a chat provider
    host: str | None = None  # where promptfoo's requests went, when not the provider's own


@dataclass
class Withheld:
    """Everything left out, by where it was: the text for people and the settings count."""

    dropped: list[tuple[str, str]]  # (file, path.to.key), never a value
    groups: list[Group] = field(default_factory=list)
    settings: int = 0
    settings_mapped: int = 0

    def migration_lines(self) -> list[str]:
        """MIGRATION.md's bullets (without the leading `- `)."""
        lines: list[str] = []
        if self.dropped:
            lines.append(
                f"**warning**: the values of {len(self.dropped)} key(s) whose names say they hold "
                "a secret were dropped; no file written here holds them, and the importer "
                "printed none: "
                + "; ".join(
                    f"in `{origin}`, " + ", ".join(inline_code(path) for path in paths)
                    for origin, paths in self.dropped_by_file().items()
                )
            )
        for group in self.groups:
            for endpoint in group.endpoints:
                kept = f"as `{endpoint.setting}` " if endpoint.setting else ""
                lines.append(
                    f"**warning** ({group.label}): endpoint {inline_code(printable(endpoint.path))}"
                    f" ({inline_code(endpoint.shown)}) not copied and not mapped: written "
                    f"{kept}commented out in {group.written}"
                )
            if group.host is not None and group.kind is not None:
                lines.append(
                    f"**needs a person** ({group.label}): promptfoo sent these requests to "
                    f"{group.host}, not {group.kind}'s own host. Its `api_key_env` is a "
                    "placeholder no one has set, so nothing is sent until you "
                    f"{foreign_key_advice(group.kind, group.host)}; then uncomment the endpoint "
                    "you keep"
                )
        return lines

    def dropped_by_file(self) -> dict[str, list[str]]:
        by_file: dict[str, list[str]] = {}
        for origin, path in self.dropped:
            by_file.setdefault(origin, []).append(path)
        return by_file

    def warnings(self) -> list[str]:
        """One line each for the terminal: key names and hosts, never a secret's value."""
        found: list[str] = []
        if self.dropped:
            shown = "; ".join(
                f"in {origin}, {_first(paths)}" for origin, paths in self.dropped_by_file().items()
            )
            found.append(
                f"dropped the values of {len(self.dropped)} secret-named key(s), written "
                f"nowhere: {shown}"
            )
        for group in self.groups:
            paths = ", ".join(f"{printable(e.path)} ({e.shown})" for e in group.endpoints)
            found.append(
                f"{group.label.replace('`', '')}: endpoint(s) not copied and not mapped, "
                f"commented out in {group.written.replace('`', '')}: {paths}"
            )
            if group.host is not None and group.kind is not None:
                found.append(
                    f"{group.label.replace('`', '')}: promptfoo sent its requests to "
                    f"{group.host}, so api_key_env is a placeholder: "
                    f"{foreign_key_advice(group.kind, group.host)}"
                )
        return found


def _first(paths: Sequence[str]) -> str:
    more = len(paths) - SHOWN_IN_TERMINAL
    return ", ".join(paths[:SHOWN_IN_TERMINAL]) + (f" and {more} more" if more > 0 else "")


def withheld(
    variants: Sequence[Variant],
    pin: Pin | None,
    suite_endpoints: Sequence[Endpoint],
    loose: Sequence[Endpoint],
    scrubber: Scrubber,
) -> Withheld:
    """What the written configs left out, once they are written (`suite_files`): `loose` are
    the `env:` endpoints that reach no system here (commented out in `casegate.yml`)."""
    found = Withheld(list(dict.fromkeys(scrubber.dropped)))
    counted: set[int] = set()
    configs: dict[tuple[int, tuple[Endpoint, ...], str | None], list[Variant]] = {}
    for variant in variants:
        provider = variant.provider
        if id(provider) not in counted:
            counted.add(id(provider))
            found.settings += provider.settings
            found.settings_mapped += provider.settings_mapped
        mine = [e for e in variant.endpoints if e not in provider.endpoints]
        found.settings += len(mine)  # a prompt's config endpoints count too
        if variant.endpoints:  # one group for the configs of one provider (several prompts)
            same = (id(provider), tuple(variant.endpoints), variant.foreign_host)
            configs.setdefault(same, []).append(variant)
    for group in configs.values():
        provider, first = group[0].provider, group[0]
        kind = str(provider.system["provider"]) if provider.known else None
        names = ", ".join(f"`{variant.config_name}`" for variant in group)
        found.groups.append(Group(names, names, first.endpoints, kind, first.foreign_host))
    if pin is not None and pin.endpoints:
        found.settings += len([e for e in pin.endpoints if e not in suite_endpoints])
        found.groups.append(
            Group(
                "the judge pin",
                "the `judge:` of every config",
                list(pin.endpoints),
                str(pin.settings["provider"]),
                pin.foreign_host,
            )
        )
    if loose:
        found.groups.append(Group("the suite", "`casegate.yml`", list(loose)))
    found.settings += len(suite_endpoints)
    return found
