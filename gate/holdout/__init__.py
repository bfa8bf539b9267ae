"""The held-out slice: cases nobody reads while writing prompts, sealed in the repository.

A suite may declare `holdout: <path>`. That folder holds two files, each encrypted
and authenticated with one key that lives in an environment variable (an Actions
secret), never in the repository:

- `slice.sealed`: the held-out cases and the rotation log (part of the ruler);
- `recordings.sealed`: their recorded responses (the pull request's claim, like
  any recording, but one only a holder of the key can make).

Runs score the slice and report aggregates only: how many cases, how many pass,
how many regressed or were fixed. No report, log, results file or message ever
names a held-out case or shows its input, output or reason.

Modules: `keys` (the key), `sealed` (the encrypted file format), `store` (the two
files of a slice), `loading` (held-out cases from sealed text), `outcome` (what a
comparison says about the slice), `scoring` (running it), `rule`
(`gate.holdout_max_drop`), `rulerdiff` (what a pull request changed about it),
`casefiles` (moving cases in and out of readable files), `rotation` (the seeded
swap) and `commands` (`casegate holdout …`).
"""
