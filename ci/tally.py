"""The closing line of a CI run: every pytest count in the stages' logs, added up, alone on the last line.

``bash dev.sh test`` under ``CI=true`` runs several stages (the whole suite
twice, the minimum-versions job, the wheel and sdist checks), each ending on
pytest's own closing line. This prints one line in the same form,
``N passed, N failed, N skipped in Ns``, so the run's last line counts every
stage. A stage that failed outside pytest (a pip install, a check in a shell
script) counts as one failure more, so the line never reads clean when the
run exit status is not.

    python ci/tally.py --seconds 900 --failed "minimum" out/ci/plain.log out/ci/minimum.log
"""
from __future__ import annotations

import argparse
import re
import sys

CLOSING = re.compile(r"^=*\s*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)"
                     r"(?:, )?)+) in [\d.]+s")
COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed)")


def counts(text: str) -> dict:
    """The sum of pytest's closing lines in a log (a stage may run pytest more than once)."""
    total: dict = {}
    for line in text.splitlines():
        found = CLOSING.match(line.strip())
        if found:
            for number, kind in COUNT.findall(found.group(1)):
                kind = "error" if kind.startswith("error") else kind
                total[kind] = total.get(kind, 0) + int(number)
    return total


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="*")
    parser.add_argument("--seconds", type=float, default=0.0)
    parser.add_argument("--failed", default="", help="the stages that failed, space-separated")
    args = parser.parse_args(argv)
    total: dict = {}
    for path in args.logs:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for kind, number in counts(f.read()).items():
                    total[kind] = total.get(kind, 0) + number
        except OSError:
            pass
    failed_stages = args.failed.split()
    stage_failures = 0
    for stage in failed_stages:
        log = next((p for p in args.logs if p.endswith(f"/{stage}.log")), None)
        try:
            with open(log or "", encoding="utf-8", errors="replace") as f:
                own = counts(f.read())
        except OSError:
            own = {}
        if not own.get("failed") and not own.get("error"):
            stage_failures += 1          # the stage failed, but not in a test pytest counted
    failed = total.get("failed", 0) + total.get("error", 0) + stage_failures
    parts = [f"{total.get('passed', 0)} passed", f"{failed} failed"]
    parts += [f"{total[k]} {k}" for k in ("skipped", "xfailed", "xpassed") if total.get(k)]
    print(", ".join(parts) + f" in {args.seconds:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
