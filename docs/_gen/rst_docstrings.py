"""A griffe extension for the API reference: aeromq's docstrings are written in reST (Sphinx
roles, ``::`` literal blocks, double back-quotes); mkdocstrings renders Markdown. Each docstring
is converted as it is loaded (:func:`rst_to_markdown`), so the source stays as it is."""

from __future__ import annotations

import re
import textwrap

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|const):`(~?)([^`]+)`")
_DOUBLE = re.compile(r"``([^`]+)``")


def _role(match: re.Match[str]) -> str:
    tilde, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if tilde else target}`"


def rst_to_markdown(text: str) -> str:
    """Sphinx roles become code (``:class:`~a.B``` -> `` `B` ``), double back-quotes single
    ones, and a ``::`` literal block a fenced Python block."""
    lines = text.splitlines()
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = _DOUBLE.sub(r"`\1`", _ROLE.sub(_role, lines[index]))
        if line.rstrip().endswith("::"):
            head = line.rstrip()[:-2].rstrip()
            if head:
                out.append(head + ":")
            index += 1
            block: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index][:1] == " "):
                block.append(lines[index])
                index += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["", "```python", *textwrap.dedent("\n".join(block)).strip("\n").split("\n")]
            out += ["```", ""]
            continue
        out.append(line)
        index += 1
    return "\n".join(out)


class RstDocstrings(griffe.Extension):
    """Convert every docstring with :func:`rst_to_markdown` as griffe loads it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: object) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
