"""One page of a vault as text: front matter (YAML whose values are JSON), the note's text, then zk's
generated part after the `<!-- zk:links -->` line. Writing and reading are exact inverses for any text
a note can hold (tested with generated texts).

A line of the note's own text that reads like a zk marker (`<!-- zk:links -->`, `<!-- zk:anything -->`)
is written with one more backslash after `<!--` and read back with one less, so only zk's own marker
line ends the text and a note that quotes one survives. Text a user types below the generated part
(the end of the page, in Obsidian) is read too: it is theirs, not zk's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

LINKS_LINE = "<!-- zk:links -->"
_MARKER = re.compile(r"<!--(\\*) zk:[^\n]*-->[ \t\r]*")
# Lines zk writes after the links marker; anything else there was typed by someone.
_GENERATED = ("Links: ", "Linked from: ", "Session: ")
NOTE_FIELDS = ("id", "at", "created", "keywords", "tags", "user_tags", "context", "links", "session", "kind",
               "speaker", "seq", "source", "status", "hash")


def _escape_line(line: str) -> str:
    match = _MARKER.fullmatch(line)
    return line if match is None else line[:4] + "\\" + line[4:]


def _unescape_line(line: str) -> str:
    match = _MARKER.fullmatch(line)
    return line if match is None or not match[1] else line[:4] + line[5:]


def escape_markers(text: str) -> str:
    if "<!--" not in text:
        return text
    return "\n".join(_escape_line(line) for line in text.split("\n"))


def unescape_markers(text: str) -> str:
    if "<!--" not in text:
        return text
    return "\n".join(_unescape_line(line) for line in text.split("\n"))


def front(fields: dict) -> str:
    lines = ["---"] + [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()
                       if value is not None] + ["---"]
    return "\n".join(lines) + "\n"


def note_page(fields: dict, content: str, tail: list[str]) -> str:
    """A note's page: its fields, its text (markers escaped), then zk's generated lines."""
    return front(fields) + escape_markers(content) + "\n\n" + "\n\n".join([LINKS_LINE, *tail]) + "\n"


@dataclass
class Page:
    fields: dict = field(default_factory=dict)
    text: str = ""  # the note's text as the page holds it (markers unescaped, without blank lines around it)
    typed_below: str = ""  # text someone typed after zk's generated lines
    has_front: bool = False
    has_marker: bool = False

    @property
    def unknown_keys(self) -> list[str]:
        """Front-matter keys zk does not write (properties the user added in Obsidian)."""
        return [k for k in self.fields if k not in NOTE_FIELDS]

    def full_text(self) -> str:
        """The note's text with whatever was typed below the generated part."""
        return f"{self.text.rstrip()}\n\n{self.typed_below}" if self.typed_below else self.text


def _value(raw: str):
    raw = raw.strip()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else raw


def _front_fields(block: str) -> dict:
    """Front matter as zk writes it (`key: JSON`), or as Obsidian re-saves it (block lists, bare words)."""
    fields: dict = {}
    current = None
    for line in block.split("\n"):
        if current and line.lstrip().startswith("- "):
            if not isinstance(fields.get(current), list):
                fields[current] = []
            fields[current].append(_value(line.lstrip()[2:]))
            continue
        key, sep, raw = line.partition(":")
        if not sep or line[:1].isspace() or not key.strip():
            continue
        current = key.strip()
        fields[current] = _value(raw)  # None: "key:" alone, or followed by block items
    return fields


_YAML_LINE = re.compile(r"\s*$|\s*#|\s+\S|[^\s:#][^:]*:(\s|$)")


def _is_front_matter(block: str) -> bool:
    """Whether the lines between two `---` are YAML keys (not a horizontal rule around prose)."""
    return all(_YAML_LINE.match(line) for line in block.split("\n"))


def parse_page(text: str) -> Page:
    """Read one page; see the module docstring."""
    text = text.removeprefix("\ufeff")
    if text.startswith("---\r\n"):  # saved with Windows line ends: all of it
        text = text.replace("\r\n", "\n")
    page = Page()
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---\n", 3)
        if end < 0 and text.endswith("\n---"):
            end = len(text) - 4
        if end >= 0 and _is_front_matter(text[4:end]):
            page.fields, page.has_front = _front_fields(text[4:end]), True
            body = text[end + 5:]
    cut = _marker_at(body)
    if cut is None:
        page.text = unescape_markers(body).strip("\r\n")
        return page
    page.has_marker = True
    # Blank lines around the text are the page's, not the note's (Obsidian adds one after the front
    # matter); spaces and tabs are the note's (an indented first line stays indented).
    page.text = unescape_markers(body[:cut]).strip("\r\n")
    rest = body[cut:].split("\n", 1)[1] if "\n" in body[cut:] else ""
    typed = [line for line in rest.split("\n") if line.strip() and not line.startswith(_GENERATED)]
    page.typed_below = "\n".join(typed).strip()
    return page


def _marker_at(body: str) -> int | None:
    """Where zk's own links line starts (the first unescaped one at the start of a line), or None."""
    start = 0
    while (found := body.find(LINKS_LINE, start)) >= 0:
        line_end = body.find("\n", found)
        line = body[found:line_end if line_end >= 0 else len(body)]
        if (found == 0 or body[found - 1] == "\n") and line.rstrip(" \t\r") == LINKS_LINE:
            return found
        start = found + 1
    return None


def read_page(text: str) -> tuple[dict, str]:
    """(front matter, the note's text) of one page."""
    page = parse_page(text)
    return page.fields, page.text
