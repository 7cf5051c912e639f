"""What the respondent's page costs to send: bytes on a first and a repeat visit, and the CPU that
compressing it adds to making it.

The demo survey's page (every kind of question, so the stylesheet and all four scripts) is requested
through the app's own request path (Flask's test client: no network, no server in the figure) with
``Accept-Encoding`` empty, ``gzip`` and ``gzip, deflate, br, zstd`` (what Chromium sends), in
interleaved blocks so that all three meet the same machine load. Reported per kind: the page's
bytes, the CPU per request (process time, median over the blocks) and its ratio to the uncompressed
request's; and the bytes of a first visit (the page and every file it names, headers included) and
of a repeat visit (the page alone: its files are cached ``immutable`` under hashed names).

A fourth arm, uncompressed too, is a second app on the same database that keeps no question's HTML
(``RESPONDENT_FRAGMENTS_BYTES=0``, survey.web.respond.fragments): the CPU the kept questions save, as
the median of the per-block ratios.

Run ``python benchmarks/respondent_page.py --markdown benchmarks/respondent_page.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from survey import create_app
from survey.domain.surveys.demo import create_demo
from survey.platform.extensions import db
from survey.platform.schema import upgrade_database

KINDS = {
    "none": {"Accept-Encoding": ""},
    "gzip": {"Accept-Encoding": "gzip"},
    "br": {"Accept-Encoding": "gzip, deflate, br, zstd"},
}

#: The arm whose app keeps no question's HTML.
UNKEPT = "unkept"


def wire(response) -> int:
    """Bytes on the wire: status line, headers, body as sent."""
    head = f"HTTP/1.1 {response.status}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in response.headers.items())
    return len(head.encode()) + 2 + len(response.get_data())


def measure(blocks: int, per_block: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        config = {"SQLALCHEMY_DATABASE_URI": f"sqlite:///{tmp}/page.sqlite", "SECRET_KEY": "bench"}
        app = create_app(config)
        unkept = create_app({**config, "RESPONDENT_FRAGMENTS_BYTES": 0})
        with app.app_context():
            upgrade_database()
            slug = create_demo(db.session, respondents=5).slug
            db.session.commit()
        client = app.test_client()
        arms = {kind: (client, headers) for kind, headers in KINDS.items()}
        arms[UNKEPT] = (unkept.test_client(), KINDS["none"])
        path = f"/s/{slug}"
        cpu: dict[str, list[float]] = {kind: [] for kind in arms}
        page_bytes: dict[str, int] = {}
        for arm_client, headers in arms.values():  # warm up: templates compiled, caches filled
            for _ in range(5):
                arm_client.get(path, headers=headers)
        for _ in range(blocks):
            for kind, (arm_client, headers) in arms.items():
                start = time.process_time()
                for _ in range(per_block):
                    response = arm_client.get(path, headers=headers)
                cpu[kind].append((time.process_time() - start) / per_block)
                page_bytes[kind] = len(response.get_data())
        assert page_bytes[UNKEPT] == page_bytes["none"]
        visits = {}
        for kind, headers in KINDS.items():
            page = client.get(path, headers=headers)
            html = client.get(path).get_data(as_text=True)
            # what the page loads (src, href), and what its scripts load when first used (data-src:
            # "Try it", the language switch after an answer), not part of a first visit
            files = re.findall(r'(?<![-\w])(?:src|href)="(/static/[^"]+)"', html)
            later = re.findall(r'data-src="(/static/[^"]+)"', html)
            first = wire(page) + sum(wire(client.get(url, headers=headers)) for url in files)
            on_use = sum(wire(client.get(url, headers=headers)) for url in later)
            visits[kind] = {"first": first, "repeat": wire(page), "files": len(files), "later": on_use}
        for each in (app, unkept):
            with each.app_context():
                db.engine.dispose()
    return {"cpu": cpu, "bytes": page_bytes, "visits": visits}


def report(result: dict, header: str) -> str:
    cpu = {kind: statistics.median(values) for kind, values in result["cpu"].items()}
    ratios = {
        kind: statistics.median(c / n for c, n in zip(result["cpu"][kind], result["cpu"]["none"], strict=True))
        for kind in result["cpu"]
    }
    lines = [
        "# The respondent's page: bytes sent and what compressing costs",
        "",
        header,
        "",
        "| Accept-Encoding | page bytes | CPU per request | ÷ uncompressed | first visit (page + files, headers"
        " included) | requests | repeat visit | loaded when used |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for kind, headers in KINDS.items():
        visit = result["visits"][kind]
        lines.append(
            f"| `{headers['Accept-Encoding'] or '(none)'}` | {result['bytes'][kind]:,} | {cpu[kind] * 1000:.2f} ms"
            f" | {ratios[kind]:.2f} | {visit['first']:,} B | {1 + visit['files']} | {visit['repeat']:,} B, 1 request"
            f" | {visit['later']:,} B |"
        )
    lines += [
        "",
        "*Repeat visit*: the files are sent `Cache-Control: public, max-age=31536000, immutable` under names"
        " that carry their content's hash, so a browser that has them asks for the page alone"
        " (tests/test_assets.py checks it in Chromium). Without an encoding the files are still minified."
        " *Loaded when used*: the scripts the page names in `data-src` and loads at their first use"
        ' ("Try it" when a question\'s panel is opened, the language switch after an answer), not part of'
        " the first visit.",
        "",
        "## The questions kept",
        "",
        "The same page uncompressed, from an app that makes every question's HTML on every request"
        " (`RESPONDENT_FRAGMENTS_BYTES=0`) and from one that keeps it keyed on its content"
        " (survey.web.respond.fragments), interleaved in the blocks above.",
        "",
        "| questions | CPU per request | ÷ made every time |",
        "|---|---|---|",
        f"| made every time | {cpu[UNKEPT] * 1000:.2f} ms | 1.00 |",
        f"| kept | {cpu['none'] * 1000:.2f} ms | {1 / ratios[UNKEPT]:.2f} |",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--markdown", type=Path)
    parser.add_argument("--blocks", type=int, default=15)
    parser.add_argument("--per-block", type=int, default=20)
    args = parser.parse_args()
    result = measure(args.blocks, args.per_block)
    header = (
        f"`python benchmarks/respondent_page.py` on {time.strftime('%Y-%m-%d')}, this {os.cpu_count()}-core"
        f" machine shared with other work (Python {platform.python_version()}); {args.blocks} interleaved blocks"
        f" of {args.per_block} requests per kind, medians. The ratio is the result; absolute times are this"
        " machine's under its load."
    )
    text = report(result, header)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)


if __name__ == "__main__":
    main()
