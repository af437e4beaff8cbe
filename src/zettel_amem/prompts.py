"""Prompt templates: shipped in `zettel_amem/templates/`, overridable in `<home>/templates/` or the
user config dir's `templates/` (`config.templates_override_dirs`).

Templates use `$name` placeholders (string.Template) so JSON braces in examples need no escaping.
The static instructions for both note tasks live in one system prompt (`notes_system.txt`) that
every note-task call starts with, so llama.cpp serves it from its prefix cache after the first call.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from string import Template

from .config import ZkError
from .text import is_cjk


class Prompts:
    def __init__(self, override_dirs: list[Path] | None = None):
        self.override_dirs = override_dirs or []
        self._cache: dict[str, str] = {}

    def raw(self, name: str) -> str:
        if name not in self._cache:
            path = next((d / f"{name}.txt" for d in self.override_dirs if (d / f"{name}.txt").exists()), None)
            if path is not None:
                self._cache[name] = path.read_text(encoding="utf-8")
            else:
                try:
                    self._cache[name] = resources.files("zettel_amem.templates").joinpath(
                        f"{name}.txt").read_text(encoding="utf-8")
                except FileNotFoundError:
                    raise ZkError(f"prompt template '{name}' is missing") from None
        return self._cache[name]

    def render(self, name: str, **values: object) -> str:
        try:
            return Template(self.raw(name)).substitute({k: str(v) for k, v in values.items()}).strip()
        except (KeyError, ValueError) as exc:
            raise ZkError(f"prompt template '{name}' has an unknown placeholder: {exc}") from None


def language_of(text: str) -> str:
    """Name the note's language for the prompt, so small models do not drift into English."""
    letters = [ch for ch in text if ch.isalpha()]
    if not letters:
        return "English"
    hangul = sum(1 for ch in letters if "\uac00" <= ch <= "\ud7a3" or "\u3130" <= ch <= "\u318f")
    if hangul / len(letters) >= 0.3:
        return "Korean"
    cjk = sum(1 for ch in letters if is_cjk(ch))
    if cjk / len(letters) >= 0.3:
        return "the note's own language"
    return "English" if all(ch.isascii() for ch in letters) else "the note's own language"
