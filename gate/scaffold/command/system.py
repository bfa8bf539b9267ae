"""The system under test, run by casegate once per case as `python3 system.py`.

casegate writes one JSON object to standard input:

    {"input": <the case's input: mapping>, "system": <the config's system: block>}

(the prompt file's text is in system["prompt"]), and takes everything printed to
standard output as the output (one final newline is dropped). Exit with a non-zero
status to make the case an error; the last line of standard error is the reason.
casegate runs the command in this folder and stops it after `timeout_s` (60 s).
Any language will do: point `command:` in casegate.yml at your own program.
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    request = json.load(sys.stdin)
    question = request["input"]["question"]
    # A stub, so that `casegate record` works at once: replace it with a call to your
    # model, pipeline or service, then bump `version:` in casegate.yml and record again.
    print(f"(stub) you asked: {question}")


if __name__ == "__main__":
    main()
