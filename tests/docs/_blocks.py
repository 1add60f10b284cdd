"""The fenced code blocks of the documentation (``docs/**/*.md`` and ``README.md``).

Each block's language says what CI does with it:

- ``python``: run as a program against a real broker (``AEROMQ_ENDPOINTS`` is its address);
- ``shell``: run with bash against the same broker, ``aeromq`` being this checkout's command;
- ``bash``: not run (a server that runs until stopped, an install), but every ``aeromq ...``
  command in it is parsed by that command's real parser, so a renamed option fails;
- ``toml``: a broker configuration file, loaded by ``BrokerConfig``;
- ``text``: output, a diagram or a usage line: nothing to run.

A block of any other language (or of none) is an error, so nothing escapes this sorting. An
HTML comment on the line just above a block, ``<!-- requires: pyspark, pyarrow -->``, names the
optional modules it needs: where one is missing the block is skipped, with the reason.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LANGUAGES = frozenset({"python", "shell", "bash", "toml", "text"})
_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[^\s`]*)[^\n]*$")
_REQUIRES = re.compile(r"^\s*<!--\s*requires:\s*(?P<modules>[\w., ]+?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    language: str
    code: str
    requires: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def documents() -> list[Path]:
    return [*sorted((REPO / "docs").rglob("*.md")), REPO / "README.md"]


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if match is None:
            index += 1
            continue
        indent, start = len(match["indent"]), index
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index][indent:])
            index += 1
        above = _REQUIRES.match(lines[start - 1]) if start else None
        requires = tuple(m.strip() for m in above["modules"].split(",")) if above else ()
        found.append(Block(path, start + 1, match["lang"], "\n".join(body) + "\n", requires))
        index += 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in documents() for block in blocks(path)]


def commands(code: str) -> list[list[str]]:
    """The ``aeromq`` command lines of a shell block, as argument lists after ``aeromq``
    (comments, ``VAR=value`` prefixes, pipes and ``&&``/``;`` lists handled as a shell would)."""
    found = []
    for line in code.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token and set(token) <= set("|&;()<>"):
                while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
                    words.pop(0)
                if words[:1] == ["aeromq"]:
                    found.append(words[1:])
                words = []
            else:
                words.append(token)
    return found
