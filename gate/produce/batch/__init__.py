"""`mode: batch`: the suite through the OpenAI Batch API or the Anthropic Message Batches API.

A record or live run whose system says `mode: batch` answers its planned requests
with one submitted batch instead of one call each (gate.produce.batch.run, called from
gate.pipeline.run). What was submitted is kept in `.casegate/batches/ID.json` beside the
config (gate.produce.batch.state), so a restart resumes the batch instead of paying twice
(`casegate batch resume ID`, gate.cli.batch). Each provider's wire flow is one
module (gate.produce.batch.openai, gate.produce.batch.anthropic) behind
gate.produce.batch.api's protocol.
"""
