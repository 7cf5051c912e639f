"""A long fuzz run: the properties of tests/test_fuzz.py with many times their examples.

Runs ``pytest tests/test_fuzz.py`` under the Hypothesis profile ``fuzz`` (tests/hypothesis_profiles.py: twenty
times the examples of the suite's derandomized ``ci`` profile, drawn at random; about 21,000 generated
cases on SQLite, and 8,400 more on PostgreSQL when ``TEST_DATABASE_URL`` is set), and reports how
many cases ran per property and backend and the pytest outcome. Exits with pytest's status.

Run with ``make bench``; the committed ``fuzz.md`` beside this file is its last output.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    env = {**os.environ, "HYPOTHESIS_PROFILE": "fuzz"}
    command = [sys.executable, "-m", "pytest", "tests/test_fuzz.py", "-q", "-p", "no:cacheprovider", "-rfE"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    output = done.stdout + done.stderr
    cases = re.search(r"^(\d+) generated cases: (.*)$", output, re.MULTILINE)
    outcome = re.findall(r"^=*\s*(\d+ \w+.*?) in [\d.]+s", output, re.MULTILINE)
    failures = [line for line in output.splitlines() if line.startswith(("FAILED", "ERROR"))]
    backends = "SQLite and PostgreSQL" if os.environ.get("TEST_DATABASE_URL") else "SQLite only"
    lines = [
        "# Long fuzz run",
        "",
        f"`python benchmarks/fuzz.py` ({dt.date.today().isoformat()}; Python "
        f"{platform.python_version()}; {backends}; {seconds / 60:.1f} min): the properties of "
        "`tests/test_fuzz.py` under the Hypothesis profile `fuzz`: twenty times their examples, drawn at random.",
        "",
        "Every case: never a 5xx; a 4xx carries a readable message and leaves the row count of every table (and "
        "the used invitation codes, and for the builder the survey's spec) unchanged; a case built to be valid is "
        "stored as sent, one built to be invalid is refused.",
        "",
        "| | |",
        "|---|---|",
        f"| cases run | {int(cases.group(1)):,} |" if cases else "| cases run | unknown |",
    ]
    if cases:
        for item in cases.group(2).split(", "):
            name, count = item.rsplit(" ", 1)
            lines.append(f"| {name} | {int(count):,} |")
    result = outcome[-1] if outcome else "no summary"
    lines += [
        f"| pytest | {result} |",
        "",
    ]
    if failures:
        lines += ["Failures:", "", *[f"- `{line}`" for line in failures], ""]
    text = "\n".join(lines)
    print(text)
    if done.returncode != 0:
        print(output[-5000:], file=sys.stderr)
    if args.markdown:
        args.markdown.write_text(text)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
