# A promptfoo python assertion. casegate import must never run it: if it did, the marker
# file below would appear beside it, and the test that imports this config checks it does not.
from pathlib import Path

Path(__file__).with_name("RAN").write_text("this assertion was executed\n")


def get_assert(output, context):
    return "high" in output
