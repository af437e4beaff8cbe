"""Templates: prompt templates (`NAME.txt`) and note templates (`NAME.md`, `zk add --template NAME`).

All are shipped in the repository's top-level `templates/` folder, installed as the package
`zettel_amem.templates`, and overridable by a file of the same name in `<home>/templates/` or the user
config dir's `templates/` (`config.templates_override_dirs`).

Prompt templates use `$name` placeholders (string.Template) so JSON braces in examples need no escaping.
The static instructions for both note tasks live in one system prompt (`notes_system.txt`) that
every note-task call starts with, so llama.cpp serves it from its prefix cache after the first call.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from string import Template

from .errors import NotFound, ZkError
from .text import is_cjk

_KO_WEEKDAYS = "월화수목금토일"


def shipped_dir() -> Path:
    """The shipped templates folder. In a source checkout (`zettel_amem/` next to `templates/`) it is
    the checkout's own folder, so running a tree from its root never reads another install's templates;
    otherwise the installed package `zettel_amem.templates` (wheel or editable install)."""
    here = Path(__file__).resolve().parents[1]  # the package folder (this module is in core/)
    checkout = here.parent / "templates"
    if (here.parent / "pyproject.toml").exists() and checkout.is_dir():
        return checkout
    from importlib import resources

    try:
        return Path(str(resources.files("zettel_amem.templates")))
    except ModuleNotFoundError:
        raise ZkError("the shipped templates are missing (zettel_amem.templates); reinstall zettel-amem") from None


class Prompts:
    def __init__(self, override_dirs: list[Path] | None = None):
        self.override_dirs = override_dirs or []
        self._cache: dict[str, str] = {}

    def _find(self, filename: str) -> Path | None:
        for folder in [*self.override_dirs, shipped_dir()]:
            if (folder / filename).is_file():
                return folder / filename
        return None

    def raw(self, name: str) -> str:
        if name not in self._cache:
            path = self._find(f"{name}.txt")
            if path is None:
                raise ZkError(f"prompt template '{name}' is missing")
            self._cache[name] = path.read_text(encoding="utf-8")
        return self._cache[name]

    def render(self, name: str, **values: object) -> str:
        try:
            return Template(self.raw(name)).substitute({k: str(v) for k, v in values.items()}).strip()
        except (KeyError, ValueError) as exc:
            raise ZkError(f"prompt template '{name}' has an unknown placeholder: {exc}") from None

    # -- note templates -----------------------------------------------------------------------------
    def note_templates(self) -> list[str]:
        """Names of every note template (shipped and overrides)."""
        names = {p.stem for folder in [*self.override_dirs, shipped_dir()] if folder.is_dir()
                 for p in folder.glob("*.md")}
        return sorted(names)

    def note_template(self, name: str, when: datetime) -> str:
        """A note template filled in for `when`: $date (2026-03-29), $time (09:15), $weekday (Sunday),
        $weekday_ko (일요일), $year, $month, $day. Unknown `$words` stay as written (a note may hold "$5")."""
        clean = name.strip().removesuffix(".md")
        path = self._find(f"{clean}.md") if clean and "/" not in clean and "\\" not in clean else None
        if path is None:
            known = ", ".join(self.note_templates()) or "none"
            raise NotFound(f"no note template '{name}' (available: {known})")
        values = {"date": when.date().isoformat(), "time": when.strftime("%H:%M"),
                  "weekday": when.strftime("%A"), "weekday_ko": _KO_WEEKDAYS[when.weekday()] + "요일",
                  "year": f"{when.year:04d}", "month": f"{when.month:02d}", "day": f"{when.day:02d}"}
        return Template(path.read_text(encoding="utf-8")).safe_substitute(values)


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
