"""The services some checks measure with: embeddings (`similar`) and moderation.

They are pinned in the config (`embeddings:`, `moderation:`) and recorded and
replayed like outputs, in the same recordings folder (gate.produce.services.recorded).
The run builds them beside the judge; the gate's own process rebuilds them over
a snapshot of the recordings taken before the run, so it judges `similar` and
`moderation` again without the run's code, and without a network.

Modules: `pins` (the config's data, imported by gate.suite.config), `recorded` (keys,
record and replay), `backends` (OpenAI's SDK or a python target), `embeddings`,
`moderation`, and `suite` (what a run and the gate's process build).
"""
