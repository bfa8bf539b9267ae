"""`casegate add`: grow the suite from what production saw.

A source (a failing result, a request log, an OpenTelemetry export, a LangSmith or
Langfuse export) is read as untrusted data into `Exchange` records (exchange.py); one
is picked, or a whole export is clustered and ranked (rank.py); its input is mapped onto
the suite's input shape (shape.py), compared with the suite's cases (nearby.py) and
written as a draft case for a person to confirm (draft.py). command.py is the CLI.
"""
