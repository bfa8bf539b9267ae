"""`casegate import promptfoo CONFIG`: a promptfoo suite as a casegate suite, plus what is left.

Follows promptfoo's documented semantics as of PROMPTFOO_VERSION (see CONTAINS_LIST_PARSING
for the one place where releases disagree). The config is read as data with promptfoo's
YAML dialect (YAML 1.2, as js-yaml reads it: `Yes` is text); no code in it is ever run,
and a `file://` reference that leaves the config's folder is refused.

What is written (all of it or nothing, never over an existing file):

- `casegate.yml` for the first provider (and prompt), `casegate.<provider>.yml` for each
  other one: promptfoo compares them side by side, casegate runs one system per config;
- `cases/<suite>.yaml`: one case per test (per combination, for array vars);
- `prompts/…md`: the system turn of a chat-format prompt; the rest becomes `message`;
- `promptfoo_checks.py`: a stub per `javascript`/`python` assertion, failing until ported;
  `promptfoo_systems.py`: a stub system for a provider casegate has no adapter for;
- `MIGRATION.md`: per test, what was mapped and what needs a person.

Every case is validated as `casegate validate` would before anything is written.
"""

from gate.importers.promptfoo.common import PROMPTFOO_VERSION, PromptfooError
from gate.importers.promptfoo.js import js_string, split_values
from gate.importers.promptfoo.suite import Outcome, import_promptfoo

__all__ = [
    "PROMPTFOO_VERSION",
    "Outcome",
    "PromptfooError",
    "import_promptfoo",
    "js_string",
    "split_values",
]
