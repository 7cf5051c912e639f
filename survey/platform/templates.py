"""Templates loaded without their indentation.

The templates are indented for whoever edits them; a browser gets nothing from it. On the demo
survey's page the indentation was a sixth of the HTML (4.2 KB of 26.9 KB) and 240 bytes of its
5.3 KB gzipped: a respondent on a phone downloaded it on every visit, and every page paid for it
again. It is taken out once, when a template is loaded (``\\n`` and the spaces or tabs after it become
``\\n``), so a request costs nothing.

Only the template's own text changes, never what it shows: a line break followed by spaces is white
space like a line break alone wherever white space collapses, which is everywhere in these pages'
text; the text that keeps its white space (``white-space: pre-line``, a ``<textarea>``'s value) is
always a variable's, inserted after loading, and no template holds a ``<pre>``
(tests/test_templates.py checks that). Plain-text templates (mail) are loaded as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jinja2 import Environment, FileSystemLoader

INDENTATION = re.compile(r"\n[ \t]+")


class IndentationFreeLoader(FileSystemLoader):
    """A FileSystemLoader whose ``.html`` templates come without the white space that begins their lines."""

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        if template.endswith(".html"):
            source = INDENTATION.sub("\n", source)
        return source, filename, uptodate
