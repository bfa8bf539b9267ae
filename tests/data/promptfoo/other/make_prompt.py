# A promptfoo prompt function. casegate import must never run it (the test checks for RAN).
from pathlib import Path

Path(__file__).with_name("RAN").write_text("this prompt function was executed\n")


def build(context):
    return "Talk like a pirate: " + context["vars"]["words"]
