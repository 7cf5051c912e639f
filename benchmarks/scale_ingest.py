"""Ingest through gunicorn against the plain-SQL ceiling, with closing automatically off and on, and
what a reload costs the requests in flight, with and without a preloaded app.

The scale benchmark's ingest part (benchmarks/scale.py) measures the web path once per worker count;
this one measures what the serving settings change, on the same machinery (its survey of ten
randomized questions, its wrk script, its plain-SQL processes):

* **Ingest.** For 2 and 4 workers, in interleaved rounds so that a slow minute of this shared
  machine hits every kind alike: the *plain-SQL ceiling* (as many processes as workers, each a
  psycopg loop sending one INSERT per row, a submission and its ten answers, one transaction per
  submission), gunicorn (``survey.platform.gunicorn_conf``) behind wrk with the survey's closing
  automatically *off*, the same with it *on* (a target margin of 0.001, which no survey of this size
  reaches, so every check the survey is due for is made and none closes it), and the ceiling's
  processes sending the app's own single statement (*our statement*). Reported: submissions per
  second, web ÷ plain, latency, the CPU the gunicorn workers spent per stored submission (from
  /proc), errors, and a recount that every acknowledged submission is stored.
* **Ingest in pairs.** The rounds' ratio for unchanged code spread from 39% to 63% within one run (the
  machine's speed drifts by a fifth within minutes, and an 8 s run of each kind, a server started for
  each, puts minutes between a ratio's two terms). So, for 2 and 4 workers, one gunicorn (closing
  automatically off) is kept running and many short runs are paired: the plain-SQL ceiling and the
  web path one right after the other, each first in every other pair. Reported: each pair's ratio,
  their median and a distribution-free interval for it, with its coverage computed.
* **Reload.** gunicorn with 2 workers under a lighter load (2 wrk connections, each request on a
  new connection, ``Connection: close``, as visitors arrive: a kept-alive connection stays with its
  old worker while it drains, and would not meet the new ones); halfway through, ``kill -HUP``
  replaces both workers. Measured: the slowest request of the run and the errors, with
  ``preload_app`` on (the setting) and off (``PRELOAD_APP=0``), interleaved.

Run ``python benchmarks/scale_ingest.py --postgresql postgresql://postgres@127.0.0.1:5432/test
--markdown benchmarks/scale_ingest.md``. Needs ``wrk`` (``make wrk``). Absolute figures are this
machine's; the ratios measured within the run are the result.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.scale import (  # noqa: E402 - after the path above
    Database,
    ceiling_run,
    free_port,
    server_env,
    stored_submissions,
    wait_healthy,
    wrk_script,
)

TICKS = os.sysconf("SC_CLK_TCK")
#: What the scale benchmark's wrk script prints, and the same with the slowest request added.
WRK_RESULT = ('"p99_ms": %.3f, \'', "latency:percentile(99) / 1000,")
WITH_MAX = ('"p99_ms": %.3f, "max_ms": %.3f, \'', "latency:percentile(99) / 1000, latency.max / 1000,")


def with_slowest(script: Path) -> None:
    """Make the wrk script also print its slowest request (``max_ms``)."""
    text = script.read_text()
    for old, new in zip(WRK_RESULT, WITH_MAX, strict=True):
        assert old in text, "the scale benchmark's wrk script changed: update WRK_RESULT"
        text = text.replace(old, new)
    script.write_text(text)


def _processes() -> dict[int, tuple[int, str, float]]:
    """Every live process: its parent's pid, its name and its CPU seconds (user + system) so far, from /proc."""
    found: dict[int, tuple[int, str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # "pid (name) state ppid ...": after the name, utime and stime are fields 12 and 13
        name, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat.rsplit(")", 1)[1].split()
        found[int(entry.name)] = (int(fields[1]), name, (int(fields[11]) + int(fields[12])) / TICKS)
    return found


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) spent so far by the live descendants of process ``pid`` (gunicorn's
    workers are its children; another server's may be its grandchildren)."""
    processes = _processes()
    children: dict[int, list[int]] = {}
    for child, (parent, _, _) in processes.items():
        children.setdefault(parent, []).append(child)
    total, stack = 0.0, list(children.get(pid, []))
    while stack:
        child = stack.pop()
        total += processes[child][2]
        stack += children.get(child, [])
    return total


def named_cpu(name: str) -> float:
    """CPU seconds (user + system) spent so far by the live processes called ``name`` (PgBouncer, which
    is no child of the server it serves)."""
    return sum(cpu for _, called, cpu in _processes().values() if called == name)


def set_auto_close(database: Database, on: bool) -> None:
    """Closing automatically on (at a margin never reached here) or off, the next check due at once."""
    import psycopg

    with psycopg.connect(database.psycopg_url()) as conn:
        conn.execute(
            "UPDATE surveys SET auto_close = %s, target_margin = 0.001, auto_close_due = 0 WHERE id = %s",
            (on, database.survey_id),
        )


def serve(database: Database, workers: int, log: Path, preload: bool = True) -> tuple[subprocess.Popen, int]:
    port = free_port()
    env = {**server_env(database, port, workers), "PRELOAD_APP": "1" if preload else "0"}
    with log.open("a") as out:
        server = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                *("-c", "python:survey.platform.gunicorn_conf", "survey.platform.wsgi:app"),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wait_healthy(port, server)
    return server, port


def load(port: int, connections: int, seconds: float, script: Path, during=None) -> tuple[dict, float]:
    """wrk for ``seconds`` (whole seconds, every thread stopping after its last answer); ``during``
    is called halfway. Returns wrk's result and the elapsed time."""
    stop_at = math.ceil(time.time()) + int(seconds)
    started = time.time()
    wrk = subprocess.Popen(
        [
            *("wrk", f"-t{connections}", f"-c{connections}", f"-d{int(seconds) + 30}s", "-s", str(script)),
            *(f"http://127.0.0.1:{port}", "--", str(stop_at)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if during is not None:
        time.sleep(max(0.0, started + seconds / 2 - time.time()))
        during()
    time.sleep(max(0.0, stop_at - time.time()) + 2.0)  # every thread has had its last answer
    wrk.send_signal(signal.SIGINT)
    output, _ = wrk.communicate(timeout=60)
    lines = [line for line in output.splitlines() if line.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"wrk printed no result:\n{output}")
    return json.loads(lines[-1].removeprefix("RESULT ")), stop_at - started


def errors_of(result: dict) -> int:
    return result["other"] + result["connect"] + result["read"] + result["write"] + result["timeout"]


def web_run(database: Database, workers: int, connections: int, seconds: float, script: Path, log: Path) -> dict:
    """gunicorn with ``workers`` workers under wrk for ``seconds``; its workers' CPU and a recount."""
    before = stored_submissions(database)
    server, port = serve(database, workers, log)
    try:
        cpu = tree_cpu(server.pid)
        result, elapsed = load(port, connections, seconds, script)
        cpu = tree_cpu(server.pid) - cpu
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    stored = stored_submissions(database) - before
    return {
        "rate": result["created"] / elapsed,
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "cpu_ms": 1000 * cpu / max(1, result["created"]),
        "acknowledged": result["created"],
        "stored": stored,
        "lost": max(0, result["created"] - stored),
        "errors": errors_of(result),
        "error_kinds": {k: result[k] for k in ("other", "connect", "read", "write", "timeout") if result[k]},
    }


def reload_run(database: Database, preload: bool, seconds: float, script: Path, log: Path, hup: bool = True) -> dict:
    """2 workers, 2 wrk connections; ``kill -HUP`` halfway (unless not ``hup``: the same run without
    a reload, for what the machine's load alone does to the slowest request). The slowest request
    and the errors."""
    server, port = serve(database, 2, log, preload)
    try:
        during = (lambda: server.send_signal(signal.SIGHUP)) if hup else None
        result, elapsed = load(port, 2, seconds, script, during=during)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    return {
        "preload": preload,
        "hup": hup,
        "max_ms": result["max_ms"],
        "p99_ms": result["p99_ms"],
        "rate": result["created"] / elapsed,
        "errors": errors_of(result),
    }


def paired_runs(
    database: Database, workers: int, connections: int, seconds: float, pairs: int, script: Path, log: Path
) -> list[dict]:
    """``pairs`` short runs of the plain-SQL ceiling and of one gunicorn kept running (closing automatically
    off), each right after the other, in turn first: a ratio per pair, of two runs a few seconds apart.
    The machine's speed drifts by a fifth within minutes (the rounds above); a pair shares its minute."""
    set_auto_close(database, False)
    server, port = serve(database, workers, log)
    found = []
    try:
        load(port, connections, 2, script)  # not counted: the workers' first requests
        for i in range(pairs):
            rates = {}
            for kind in ("plain", "web") if i % 2 == 0 else ("web", "plain"):
                if kind == "plain":
                    rates[kind] = ceiling_run(database, workers, seconds, "naive")["rate"]
                else:
                    result, elapsed = load(port, connections, seconds, script)
                    rates[kind] = result["created"] / elapsed
                    rates["errors"] = errors_of(result)
            found.append({**rates, "ratio": rates["web"] / rates["plain"]})
            print(json.dumps({"workers": workers, "pair": i + 1, **found[-1]}), flush=True)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    return found


def median_interval(values: list[float], level: float = 0.95) -> tuple[float, float, float, float]:
    """The median of ``values``, a distribution-free interval for the median (the order statistics k and
    n + 1 - k, k the largest whose coverage is ``level`` or more, else 1: the least and the most), and
    that interval's coverage, 1 - 2 P(Binomial(n, 1/2) < k), computed rather than assumed."""
    from scipy.stats import binom

    ordered = sorted(values)
    n = len(ordered)
    k = 1
    while k < n + 1 - k and 1 - 2 * binom.cdf(k, n, 0.5) >= level:
        k += 1
    return statistics.median(ordered), ordered[k - 1], ordered[n - k], float(1 - 2 * binom.cdf(k - 1, n, 0.5))


KINDS = ("plain", "off", "on", "statement")


def run(
    postgresql: str, workdir: Path, seconds: float, rounds: int, connections: int, pairs: int, pair_seconds: float
) -> dict:
    if shutil.which("wrk") is None:
        raise RuntimeError("wrk is not installed (Debian: apt-get install wrk); `make wrk` installs it")
    database = Database("postgresql", postgresql, workdir)
    script = workdir / "post.lua"
    wrk_script(database, script, np.random.default_rng(7))
    with_slowest(script)
    closing = workdir / "post-close.lua"
    plain_headers = '{["Content-Type"] = "application/json"}'
    assert plain_headers in script.read_text(), "the scale benchmark's wrk script changed: update this"
    closing.write_text(
        script.read_text().replace(plain_headers, '{["Content-Type"] = "application/json", ["Connection"] = "close"}')
    )
    log = workdir / "gunicorn.log"
    runs: dict[int, dict[str, list[dict]]] = {}
    reloads: list[dict] = []
    try:
        # not counted: one short run of each kind, so that no measured run meets a cold database
        ceiling_run(database, 2, 5, "naive")
        set_auto_close(database, False)
        web_run(database, 2, connections, 5, script, log)
        ceiling_run(database, 2, 5, "statement")
        for workers in (2, 4):
            runs[workers] = {kind: [] for kind in KINDS}
            for _ in range(rounds):  # interleaved, so that a slow minute of the machine hits every kind
                kinds = runs[workers]
                kinds["plain"].append(ceiling_run(database, workers, seconds, "naive"))
                set_auto_close(database, False)
                kinds["off"].append(web_run(database, workers, connections, seconds, script, log))
                set_auto_close(database, True)
                kinds["on"].append(web_run(database, workers, connections, seconds, script, log))
                kinds["statement"].append(ceiling_run(database, workers, seconds, "statement"))
                print(json.dumps({"workers": workers, **{k: v[-1] for k, v in kinds.items()}}), flush=True)
        paired = {
            workers: paired_runs(database, workers, connections, pair_seconds, pairs, script, log) for workers in (2, 4)
        }
        set_auto_close(database, False)
        for _ in range(rounds):
            for preload, hup in ((True, False), (True, True), (False, True)):
                reloads.append(reload_run(database, preload, seconds, closing, log, hup))
                print(json.dumps(reloads[-1]), flush=True)
        app = database.app()
        from survey.domain.models import Survey
        from survey.domain.responses.tallies import tally_mismatches
        from survey.platform.extensions import db

        with app.app_context():
            mismatches = tally_mismatches(db.session, db.session.get(Survey, database.survey_id))
            db.engine.dispose()
        return {
            "runs": runs,
            "paired": paired,
            "pair_seconds": pair_seconds,
            "reloads": reloads,
            "tally_mismatches": mismatches,
            "connections": connections,
            "seconds": seconds,
        }
    finally:
        database.drop()


def is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def error_kinds(result: dict) -> dict[str, int]:
    """wrk's errors over every web run, by kind (other: a status other than 201)."""
    kinds: dict[str, int] = {}
    for runs in result["runs"].values():
        for kind in ("off", "on"):
            for r in runs[kind]:
                for name, n in r.get("error_kinds", {}).items():
                    kinds[name] = kinds.get(name, 0) + n
    return kinds


def report(result: dict, header: str) -> str:
    lines = [
        "# Ingest through gunicorn against the plain-SQL ceiling",
        "",
        header,
        "",
        "## Targets",
        "",
        "| target | measured | |",
        "|---|---|---|",
    ]

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    medians: dict[int, dict[str, dict[str, float]]] = {}
    for workers, kinds in result["runs"].items():
        medians[workers] = {
            kind: {key: statistics.median(r[key] for r in runs) for key, value in runs[0].items() if is_number(value)}
            for kind, runs in kinds.items()
        }
        plain = medians[workers]["plain"]["rate"]
        for kind, name in (("off", "closing automatically off"), ("on", "closing automatically on")):
            rates = [w["rate"] / p["rate"] for w, p in zip(kinds[kind], kinds["plain"], strict=True)]
            web = medians[workers][kind]["rate"]
            lines.append(
                f"| {workers} workers, {name}: ≥ 60% of the plain-SQL ceiling (median of the rounds' ratios)"
                f" | {statistics.median(rates):.0%} ({web:.0f}/s against {plain:.0f}/s)"
                f" | {verdict(statistics.median(rates) >= 0.6)} |"
            )
        lost = sum(r["lost"] for kind in ("off", "on") for r in kinds[kind])
        errors = sum(r["errors"] for kind in ("off", "on") for r in kinds[kind])
        lines.append(
            f"| {workers} workers: 0 errors and 0 lost | {errors} errors, {lost} lost"
            f" | {verdict(lost == errors == 0)} |"
        )
    for workers, found in result["paired"].items():
        median, low, high, coverage = median_interval([p["ratio"] for p in found])
        lines.append(
            f"| {workers} workers, closing automatically off, {len(found)} pairs of short runs: ≥ 60% of the"
            f" plain-SQL ceiling (median of the pairs' ratios, and an interval for it) | {median:.0%} ({low:.0%} to"
            f" {high:.0%}, coverage {coverage:.1%}; {sum(p['errors'] for p in found)} errors)"
            f" | {verdict(median >= 0.6)} |"
        )
    lines.append(
        "| (errors by kind, all runs) | "
        + (", ".join(f"{k}: {v}" for k, v in error_kinds(result).items()) or "none")
        + " | |"
    )
    lines.append(
        f"| tallies equal a GROUP BY after every run | {'equal' if not result['tally_mismatches'] else 'differ'}"
        f" | {verdict(not result['tally_mismatches'])} |"
    )
    reloads = result["reloads"]
    slowest = {
        kind: statistics.median(r["max_ms"] for r in reloads if (r["preload"], r["hup"]) == kind)
        for kind in ((True, False), (True, True), (False, True))
    }
    lines.append(
        "| a reload (`kill -HUP`) stalls no request for a second, preloaded (median over the rounds of the"
        f" slowest request) | {slowest[True, True]:.0f} ms (no reload: {slowest[True, False]:.0f} ms;"
        f" not preloaded: {slowest[False, True]:.0f} ms) | {verdict(slowest[True, True] < 1000)} |"
    )
    lines += [
        "",
        "## Ingest (PostgreSQL)",
        "",
        f"{result['seconds']:.0f} s per run, {result['connections']} wrk connections, after an uncounted 5 s warm-up"
        " of each kind; runs in the order of the columns, repeated. *Plain SQL*: as many psycopg processes as"
        " workers, one INSERT per row, one transaction per submission. *Off* / *on*: gunicorn"
        " (`survey.platform.gunicorn_conf`) with the survey's closing automatically off / on (at a margin it never"
        " reaches, so every check it is due for is made). *Our statement*: the plain processes sending the app's"
        " one statement. *CPU/sub*: CPU seconds of the gunicorn workers (from /proc) per acknowledged submission.",
        "",
        "| workers | round | plain SQL /s | off /s | off ÷ plain | on /s | on ÷ plain | our statement /s"
        " | CPU/sub off | CPU/sub on | p50 off | p99 off | p50 on | p99 on | errors | acknowledged | stored |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for workers, kinds in result["runs"].items():
        rows = zip(kinds["plain"], kinds["off"], kinds["on"], kinds["statement"], strict=True)
        for i, (plain, off, on, stmt) in enumerate(rows, 1):
            lines.append(
                f"| {workers} | {i} | {plain['rate']:.0f} | {off['rate']:.0f} | {off['rate'] / plain['rate']:.0%}"
                f" | {on['rate']:.0f} | {on['rate'] / plain['rate']:.0%} | {stmt['rate']:.0f}"
                f" | {off['cpu_ms']:.2f} ms | {on['cpu_ms']:.2f} ms | {off['p50_ms']:.1f} ms | {off['p99_ms']:.1f} ms"
                f" | {on['p50_ms']:.1f} ms | {on['p99_ms']:.1f} ms | {off['errors'] + on['errors']}"
                f" | {off['acknowledged'] + on['acknowledged']:,} | {off['stored'] + on['stored']:,} |"
            )
        m = medians[workers]
        lines.append(
            f"| {workers} | median | {m['plain']['rate']:.0f} | {m['off']['rate']:.0f}"
            f" | {m['off']['rate'] / m['plain']['rate']:.0%} | {m['on']['rate']:.0f}"
            f" | {m['on']['rate'] / m['plain']['rate']:.0%} | {m['statement']['rate']:.0f}"
            f" | {m['off']['cpu_ms']:.2f} ms | {m['on']['cpu_ms']:.2f} ms | {m['off']['p50_ms']:.1f} ms"
            f" | {m['off']['p99_ms']:.1f} ms | {m['on']['p50_ms']:.1f} ms | {m['on']['p99_ms']:.1f} ms | | | |"
        )
    lines += [
        "",
        "## Ingest in pairs (PostgreSQL)",
        "",
        f"For each worker count, one gunicorn (closing automatically off) kept running, and {len(result['paired'][2])}"
        f" pairs of {result['pair_seconds']:.0f} s runs: the plain-SQL ceiling and the web path, one right after the"
        " other, each first in every other pair. A pair's two runs share the machine's minute, whose speed the"
        " rounds above show drifting; the interval is the median's, distribution-free (order statistics).",
        "",
        "| workers | pair | plain SQL /s | web /s | web ÷ plain | errors |",
        "|---|---|---|---|---|---|",
    ]
    for workers, found in result["paired"].items():
        for i, p in enumerate(found, 1):
            lines.append(f"| {workers} | {i} | {p['plain']:.0f} | {p['web']:.0f} | {p['ratio']:.0%} | {p['errors']} |")
        median, low, high, coverage = median_interval([p["ratio"] for p in found])
        lines.append(
            f"| {workers} | median (interval, coverage {coverage:.1%}) | | | {median:.0%} ({low:.0%} to {high:.0%}) | |"
        )
    lines += [
        "",
        "## Reload",
        "",
        f"2 workers, 2 wrk connections each request on a new connection, {result['seconds']:.0f} s;"
        " `kill -HUP` to the master halfway, which"
        " replaces both workers. *Preloaded*: the setting (`preload_app`); *not*: `PRELOAD_APP=0`, each new"
        " worker importing the app. The run without a reload shows what the machine's load alone does to the"
        " slowest request. Interleaved.",
        "",
        "| round | preloaded | reload | slowest request | p99 | submissions/s | errors |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(reloads):
        lines.append(
            f"| {i // 3 + 1} | {'yes' if r['preload'] else 'no'} | {'HUP' if r['hup'] else 'none'}"
            f" | {r['max_ms']:.0f} ms | {r['p99_ms']:.1f} ms | {r['rate']:.0f} | {r['errors']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgresql", default=os.environ.get("TEST_DATABASE_URL"), required=False)
    parser.add_argument("--markdown", type=Path, help="also write the report to this file")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8, help="wrk connections (one per thread)")
    parser.add_argument("--pairs", type=int, default=20, help="pairs of short runs per worker count")
    parser.add_argument("--pair-seconds", type=float, default=4.0)
    args = parser.parse_args()
    if not args.postgresql:
        parser.error("--postgresql (or TEST_DATABASE_URL) is needed")
    started = time.time()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        result = run(
            args.postgresql, Path(tmp), args.seconds, args.rounds, args.connections, args.pairs, args.pair_seconds
        )
    import psycopg
    import sqlalchemy

    header = (
        f"`python benchmarks/scale_ingest.py --seconds {args.seconds:g} --rounds {args.rounds} --pairs {args.pairs}"
        f" --pair-seconds {args.pair_seconds:g}` on"
        f" {time.strftime('%Y-%m-%d')}, this {os.cpu_count()}-core machine (load average {load_before:.1f} before"
        f" the run: the other work on it then; Python"
        f" {platform.python_version()}, SQLAlchemy {sqlalchemy.__version__}, psycopg {psycopg.__version__};"
        f" {(time.time() - started) / 60:.1f} min). The method is in the module docstring."
    )
    text = report(result, header)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
