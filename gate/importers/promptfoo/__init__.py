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

Nothing that would send a key anywhere is copied (sensitive.py): a value under a key that
names a secret (`apiKey`, a `Cookie` or `X-API-Token` header, `tls.passphrase`…) is dropped
from every file and every line printed, and said to be dropped by its key's name; an endpoint
(`apiBaseUrl`, `apiHost`, a proxy, `apiKeyEnvar`…) is written commented out, warned about and
counted as not mapped. A system promptfoo sent to a third party's host gets a placeholder
`api_key_env`, never the provider's own key variable.
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
