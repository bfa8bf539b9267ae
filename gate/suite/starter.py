"""`casegate init`: a starter config, two example cases and the five workflows.

`--shards N` writes casegate-sharded.yml (a matrix of N shard jobs, then one job
that merges and gates their parts) in place of casegate-pull-request.yml.

The files live in `gate/scaffold/`; the workflows name the Action as `{{ action }}`,
filled in with the reference the user gives (this repository's own workflows are
the same files with `./`, and a test keeps them identical). Each provider has its
own config, and the python and command providers a stub `system.py` beside it.
`.gitignore` is the one file init may change rather than refuse: it gains the
`.casegate/` line once, or is created holding it.
"""

from __future__ import annotations

import argparse
import json
import re
from importlib import resources
from pathlib import Path

from gate.errors import ConfigError
from gate.files import cannot_write, write_new_files
from gate.suite import schema
from gate.suite.branches import BRANCH_PATTERN, DEFAULT_BRANCH, default_branch

DEFAULT_ACTION = "casegate/casegate@v1"
DEFAULT_PROVIDER = "openai"
GITIGNORE = ".gitignore"

#: scaffold file → where it goes in the user's repository (the default provider's set)
FILES = {
    "casegate.yml": "casegate.yml",
    "cases/examples.yaml": "cases/examples.yaml",
    "prompts/assistant.md": "prompts/assistant.md",
    "workflows/casegate-pull-request.yml": ".github/workflows/casegate-pull-request.yml",
    "workflows/casegate-model-swap.yml": ".github/workflows/casegate-model-swap.yml",
    "workflows/casegate-baseline.yml": ".github/workflows/casegate-baseline.yml",
    "workflows/casegate-comment.yml": ".github/workflows/casegate-comment.yml",
    "workflows/casegate-drift.yml": ".github/workflows/casegate-drift.yml",
    "gitignore": GITIGNORE,
}

PULL_REQUEST = ".github/workflows/casegate-pull-request.yml"
SHARDED = "workflows/casegate-sharded.yml"

#: provider → the scaffold files that replace or join the default set
PROVIDERS: dict[str, dict[str, str]] = {
    "openai": {},
    "anthropic": {"anthropic/casegate.yml": "casegate.yml"},
    "python": {"python/casegate.yml": "casegate.yml", "python/system.py": "system.py"},
    "command": {"command/casegate.yml": "casegate.yml", "command/system.py": "system.py"},
}

#: provider → the code behind the system that init writes: a change to it changes answers, so
#: the workflows' `paths:` filters list it beside the prompts and the cases
CODE_PATHS = {"python": ("system.py",), "command": ("system.py",)}
#: the line in every workflow's `paths:` filter after which the code's paths go
_LAST_SUITE_PATH = '      - "casegate.yml"\n'

#: what `casegate record` does for each provider, in the next steps init prints
_RECORDS = {
    "python": "calls answer() in system.py once per case (a stub until you replace it)",
    "command": "runs `python3 system.py` once per case (a stub until you replace it)",
}


def starter_files(
    action: str = DEFAULT_ACTION,
    provider: str = DEFAULT_PROVIDER,
    shards: int | None = None,
    branch: str = DEFAULT_BRANCH,
) -> dict[str, str]:
    """Destination path → content, for `provider`; sharded pull-request checks with `shards`;
    the baseline refreshed after merges to `branch`."""
    scaffold = resources.files("gate") / "scaffold"
    chosen = {destination: source for source, destination in FILES.items()}
    chosen.update({destination: source for source, destination in PROVIDERS[provider].items()})
    if shards is not None:
        del chosen[PULL_REQUEST]
        chosen[".github/workflows/casegate-sharded.yml"] = SHARDED
    matrix = json.dumps([f"{index}/{shards}" for index in range(1, (shards or 0) + 1)])
    code = "".join(f'      - "{path}"\n' for path in CODE_PATHS.get(provider, ()))
    return {
        destination: _schema_line(destination, action)
        + (scaffold / source)
        .read_text(encoding="utf-8")
        .replace("{{ action }}", action)
        .replace("{{ shards }}", matrix)
        .replace("{{ branch }}", branch)
        .replace(_LAST_SUITE_PATH, _LAST_SUITE_PATH + code)
        for destination, source in chosen.items()
    }


def _schema_line(destination: str, action: str) -> str:
    """The editor's schema line for the config and the case files (gate.suite.schema), at
    the schemas published beside the Action the workflows run; nothing for other files."""
    if destination == "casegate.yml":
        return schema.modeline(schema.schema_url(action, "config", DEFAULT_ACTION))
    if destination.startswith("cases/"):
        return schema.modeline(schema.schema_url(action, "cases", DEFAULT_ACTION))
    return ""


def ignored(gitignore: str) -> bool:
    """Whether a `.gitignore` already ignores casegate's `.casegate/` folders."""
    return any(
        line.strip().lstrip("/").rstrip("*").rstrip("/") == ".casegate"
        for line in gitignore.splitlines()
    )


def _merged_gitignore(path: Path, block: str) -> str | None:
    """The new text of `path` with `block` appended once; None when nothing is to change."""
    try:
        current = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):  # the first write names a file in the way
        return block
    except OSError as exc:
        raise cannot_write(path, exc) from None
    except UnicodeDecodeError:
        raise ConfigError(
            f"{path}: not UTF-8 text, so casegate init does not edit it; add the line "
            "`.casegate/` yourself, or save it as UTF-8"
        ) from None
    if ignored(current):
        return None
    if current:  # a blank line between what was there and casegate's lines
        current = current if current.endswith("\n") else current + "\n"
        current += "\n"
    return current + block


def write_starter(
    target: Path,
    action: str = DEFAULT_ACTION,
    provider: str = DEFAULT_PROVIDER,
    shards: int | None = None,
    branch: str = DEFAULT_BRANCH,
) -> list[Path]:
    """Write every starter file, or none: an existing file is never overwritten, and when
    one cannot be written (an OutputError naming it) the files and folders made are removed.

    `.gitignore` is written last, and only when it does not ignore `.casegate/` yet.
    """
    files = starter_files(action, provider, shards, branch)
    gitignore = _merged_gitignore(target / GITIGNORE, files.pop(GITIGNORE))
    planned = {target / name: content for name, content in files.items()}
    if gitignore is not None:  # last, and replaced whole: it was read above
        planned[target / GITIGNORE] = gitignore
    return write_new_files(
        planned,
        refusal=[
            "{path}: already exists; casegate init writes nothing over it",
            "move those files aside (or write the rest by hand from `gate/scaffold/`)",
        ],
        mask=False,  # casegate's own templates: ${GITHUB_TOKEN} in a push URL stays
        may_replace={target / GITIGNORE},
    )


#: the providers whose starter config says `samples: auto` (they call a model), and the
#: `adaptive.max` it sets: a baseline draws 3 times that a case
SAMPLED = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
STARTER_MAX = 12


def next_steps(target: Path, provider: str) -> list[str]:
    """The commands to run after init, each with what it does for `provider`."""
    config = "" if target == Path(".") else f" -c {target / 'casegate.yml'}"
    if provider in SAMPLED:
        # A baseline under `samples: auto` replays 3 times adaptive.max samples a case: recorded
        # in one go, then replayed by every check and by the baseline refresh after a merge.
        commands = [
            (f"casegate validate{config}", "the config and both cases load; nothing is called"),
            (
                f"casegate baseline --mode record{config}",
                f"with {SAMPLED[provider]} set: {3 * STARTER_MAX} calls per case (samples: auto, "
                "3 × adaptive.max), "
                "stored under recordings/ and estimated into baselines/assistant.json",
            ),
            (f"casegate check{config}", "replays them as a pull request will: no key, no cost"),
        ]
    else:
        commands = [
            (f"casegate validate{config}", "the config and both cases load; nothing is called"),
            (f"casegate record{config}", _RECORDS[provider]),
            (f"casegate baseline{config}", "replays the recordings into baselines/assistant.json"),
            (
                f"casegate check{config}",
                "replays them against that baseline, as a pull request will",
            ),
        ]
    width = max(len(command) for command, _ in commands)
    return [f"  {command:<{width}}  # {what}" for command, what in commands]


def cmd_init(args: argparse.Namespace) -> int:
    branch, how = (args.branch, "--branch") if args.branch else default_branch(args.dir)
    for path in write_starter(args.dir, args.action, args.provider, args.shards, branch):
        print(f"added .casegate/ to {path}" if path.name == GITIGNORE else f"wrote {path}")
    print(
        f"the baseline refreshes after merges to {branch} ({how}; pass --branch NAME "
        "to choose another)"
    )
    print(
        f"the workflows run the Action as `uses: {args.action}`"
        + (
            " (casegate's own repository, tag v1; to run a fork or a copy in your organisation, "
            "pass --action OWNER/REPO@REF, pinned to a full commit SHA for the surest supply)"
            if args.action == DEFAULT_ACTION
            else ""
        )
    )
    print("next: edit prompts/ and cases/, run these, and commit everything they write:")
    print("\n".join(next_steps(args.dir, args.provider)))
    return 0


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`casegate init [--dir PATH] [--action REF] [--provider NAME]`."""
    init = commands.add_parser(
        "init", help="write a starter config, two example cases and the five workflows"
    )
    init.add_argument("--dir", type=Path, default=Path("."), help="where (default: here)")
    init.add_argument(
        "--action",
        default=DEFAULT_ACTION,
        help="the Action reference the workflows use (default: %(default)s)",
    )
    init.add_argument(
        "--branch",
        type=_branch_name,
        help="the branch merges land on, whose pushes refresh the baseline (default: the "
        "remote's default branch, else main or master, whichever the repository has)",
    )
    init.add_argument(
        "--provider",
        choices=tuple(PROVIDERS),
        default=DEFAULT_PROVIDER,
        help="the system under test: a hosted model, your python function or any command "
        "(default: %(default)s)",
    )
    init.add_argument(
        "--shards",
        type=_shard_count,
        metavar="N",
        help="check pull requests in N parallel shard jobs and one merging job "
        "(casegate-sharded.yml, in place of casegate-pull-request.yml)",
    )
    init.set_defaults(handler=cmd_init)


def _branch_name(text: str) -> str:
    if not re.fullmatch(BRANCH_PATTERN, text) or ".." in text:
        raise argparse.ArgumentTypeError(
            "expected a branch name: letters, digits, '.', '_', '-' and '/'"
        )
    return text


def _shard_count(text: str) -> int:
    from gate.suite.shard import MAX_SHARDS

    if not text.isdigit() or not 2 <= int(text) <= MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"expected a number of shards from 2 to {MAX_SHARDS}")
    return int(text)
