# A promptfoo var script. casegate import must never run it (the test checks for RAN).
from pathlib import Path

Path(__file__).with_name("RAN").write_text("this var script was executed\n")


def build(context):
    return "Talk like a pirate: " + context["vars"]["words"]
