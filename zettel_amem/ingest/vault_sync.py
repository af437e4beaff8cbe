"""Reading a vault back: `zk import DIR`, and the first half of `zk sync DIR` (the second is vault.py's export).

Every Markdown file of the vault is read (only regular files inside it, with a size cap: folder.py), and
a page whose bytes are what zk last wrote there (the marker's hash) is skipped unread. Of the others:

- a note's page whose text differs from its note becomes a new version of that note, like `zk edit`
  (reason "vault edit (PATH)", re-annotated and re-linked). If the note's text changed in zk too since
  zk last wrote the page, it is a conflict: the vault's text still becomes the newest version, and zk's
  stays in the history as the one before (`zk revert ID` brings it back); one line says so. Two pages of
  one note edited (a page of the user's and its `notes/` page) are a conflict too: each text becomes a
  version, the page saved last the newest, and a line says which version holds the other (`_Versions`);
- a note's page whose front matter was removed (one click in Obsidian) is still that note's page: the
  note the marker says zk wrote there, or the one its name `notes/<id or prefix>.md` names. Its text is
  an edit of that note (or nothing new), and export writes the page back with its front matter;
- a page with a zk id that this notebook does not hold is restored with its id and fields (a vault into
  a fresh home) - unless this home wrote the vault and deleted the note since: then it is not brought
  back, and a page edited since is reported and kept;
- a page whose id another page of the vault holds (a copy: Obsidian's "Make a copy", a sync conflict)
  gets a new id, and so does a page of a note stored in another notebook (`zk -n other import DIR`);
- any other Markdown page outside `episodes/` and `entities/` is a new note (its text; its file name as
  a heading when the text has none). Its file stays as the user wrote it, and the marker remembers it,
  so a later edit of it is an edit of that note;
- a note's page that was deleted in the vault is reported, its note kept (`zk sync --prune` deletes).

Each page is checked field by field by the JSONL restore's own check (`export.record_to_note`); a bad
page is skipped with a line naming it, and the rest is imported.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from ..core.errors import ZkError
from ..core.models import PENDING, Note, journal_period, session_id_for
from ..memory import Memory, content_hash, validate_content
from .export import move_to_notebook, record_to_note
from .folder import Refused, SafeFolder, read_inside, walk_files
from .turns import maybe_datetime
from .vault import VAULT_TYPE, Entry, Marker, digest, is_ours
from .vault_page import Page, parse_page

_NOTE_ID = re.compile(r"[0-9a-f]{32}")
_NOTE_PREFIX = re.compile(r"[0-9a-f]{8,32}")  # a note page's file name (`notes/<id8>.md`)
_UNTITLED = re.compile(r"(Untitled|제목 없음|무제)( \d+)?", re.IGNORECASE)
_NOT_NOTES = ("episodes/", "entities/")  # zk's generated pages; a file the user puts there is left alone
# Page fields -> the JSONL record's names (the record check then names the page's field).
_RENAMED = {"session": "session_id", "hash": "content_hash"}
_RECORD_FIELDS = ("id", "at", "created", "keywords", "tags", "user_tags", "context", "links", "session", "kind",
                  "speaker", "seq", "source", "status", "hash")


@dataclass
class TakeIn:
    """What reading a vault did; `changes` has one entry (and one line) per page that did something."""

    format: str = VAULT_TYPE
    added: int = 0
    edited: int = 0
    conflicts: int = 0
    unchanged: int = 0
    skipped_duplicates: int = 0  # pages of notes stored as they are (and repeats of new pages)
    failed: list[dict] = field(default_factory=list)
    changes: list[dict] = field(default_factory=list)  # {"path", "id", "what", "message"}
    deleted: list[dict] = field(default_factory=list)  # {"path", "id"}: pages deleted in the vault
    notebook: str = "main"
    session_ids: list[str] = field(default_factory=list)  # restored chats: their episodes are rebuilt
    edited_sessions: list[str] = field(default_factory=list)  # sessions whose summary is now stale

    def fail(self, message: str) -> None:
        self.failed.append({"line": None, "record": None, "message": message})

    def change(self, path: str, note_id: str | None, what: str, message: str) -> None:
        self.changes.append({"path": path, "id": note_id, "what": what, "message": f"{path}: {message}"})

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class _Read:
    path: str
    data: bytes
    page: Page
    entry: Entry | None
    mtime: float


def _zk_id(page: Page) -> str | None:
    """The zk note id of a page, None for a page without one (a user's own page: a new note)."""
    value = page.fields.get("id")
    return value if isinstance(value, str) and _NOTE_ID.fullmatch(value) else None


def _same(a: str, b: str) -> bool:
    return a == b or a.strip() == b.strip()


def _record(page: Page, notebook: str) -> dict:
    record = {_RENAMED.get(k, k): page.fields[k] for k in _RECORD_FIELDS if page.fields.get(k) is not None}
    return {**record, "type": "note", "content": page.full_text(), "notebook": notebook}


@dataclass
class _Version:
    read: _Read
    text: str
    number: int  # the version this page's text becomes
    conflict: bool  # the note changed in zk too since zk last wrote (or took in) the page


@dataclass
class _Versions:
    """What one note becomes from its pages edited in the vault, the page saved first first. One page: a new
    version (a conflict when zk changed the note too: zk's text stays the version before). Two pages of one
    note (a page of the user's and its `notes/` page) edited before a sync are a conflict: each text is a
    version, the page saved last the newest, and the line says how to bring back the other."""

    note: Note
    was: int  # the note's version before these
    versions: list[_Version] = field(default_factory=list)
    pages: list[_Read] = field(default_factory=list)  # every page taken in (one whose text another gave too)

    @classmethod
    def of(cls, note: Note, group: list[tuple[_Read, Note, str, bool]], report: TakeIn) -> _Versions:
        out = cls(note, note.version)
        saved = sorted(group, key=lambda e: (e[0].mtime, not (e[0].entry is not None and e[0].entry.yours)))
        for read, stored, text, both in saved:
            try:
                text = validate_content(text)
            except ZkError as exc:
                report.fail(f"{read.path}: {exc}; skipped")
                continue
            out.pages.append(read)
            if text == note.content or any(v.text == text for v in out.versions):
                continue  # this text is a version already
            conflict = both or note.content != stored.content  # edited in zk while this ran
            out.versions.append(_Version(read, text, out.was + len(out.versions) + 1, conflict))
        return out

    def batch(self) -> list[tuple[Note, str, str]]:
        """(note, text, reason) for `Memory.revise`, one per version, in order."""
        edits, before = [], None
        for version in self.versions:
            reason = f"vault edit ({version.read.path})"
            if before is not None:
                reason += f"; conflict: {before.read.path} changed too (v{before.number})"
            elif version.conflict:
                reason += f"; conflict: zk's text is v{self.was}"
            edits.append((self.note, version.text, reason))
            before = version
        return edits

    def tell(self, report: TakeIn) -> None:
        """One line per page that gave a version: the newest is "edited" (or a conflict with zk), each
        earlier one a conflict saying which version holds its text."""
        if not self.versions:
            return
        short, last = self.note.short_id, self.versions[-1]
        for version in self.versions[:-1]:
            report.conflicts += 1
            report.change(version.read.path, self.note.id, "conflict", f"changed in the vault, and so was "
                          f"{last.read.path} (both pages of note {short}): this page's text is version "
                          f"{version.number}, {last.read.path}'s (saved later) is version {last.number}, the "
                          f"newest (`zk revert {short} --to {version.number}` brings this one back)")
        if any(v.conflict for v in self.versions):
            report.conflicts += 1
            report.change(last.read.path, self.note.id, "conflict", f"changed in the vault and in zk: the vault's "
                          f"text is now version {last.number} of note {short}, zk's is version {self.was} "
                          f"(`zk revert {short} --to {self.was}` brings it back)")
        else:
            report.edited += 1
            report.change(last.read.path, self.note.id, "edited", f"note {short} is now version {last.number}")


class _TakeIn:
    def __init__(self, memory: Memory, folder: Path, guard: Callable[[], AbstractContextManager]):
        self.memory, self.folder, self.guard = memory, folder, guard
        self.marker = Marker.load(folder)
        self.ours = is_ours(memory, self.marker)
        self.files = self.marker.files if self.marker else {}
        self.report = TakeIn(notebook=memory.notebook)
        self.fresh: list[Note] = []  # to add: restored, renumbered and new notes
        self.edits: list[tuple[_Read, Note, str, bool]] = []  # (page, stored note, its new text, a conflict?)
        self.moved: dict[str, str] = {}  # id in another notebook -> its new id here
        self.seen: set[str] = set()  # every Markdown file of the vault, read or not
        self.claimed: dict[str, str] = {}  # note id -> the page that keeps it (its own zk page first)
        self.owning: list[tuple[_Read, Note, str, str]] = []  # notes born from pages: (page, note, what, line)

    # -- reading ------------------------------------------------------------------------------------------
    def read(self) -> list[_Read]:
        pages = []
        for path in walk_files(self.folder, (".md", ".markdown")):
            rel = path.relative_to(self.folder).as_posix()
            self.seen.add(rel)
            if rel.startswith(_NOT_NOTES):
                continue
            entry = self.files.get(rel)
            try:
                data = read_inside(self.folder, path)
                mtime = path.lstat().st_mtime
            except (Refused, OSError) as exc:
                self.report.fail(str(exc) if isinstance(exc, Refused) else f"{rel}: cannot read it ({exc})")
                continue
            if entry is not None and self.ours and entry.wrote(data):
                self.report.unchanged += 1  # as this home wrote it: nothing to read (restored elsewhere: read)
                if entry.note and not entry.yours:
                    self.claimed[entry.note] = rel
                continue
            try:
                page = parse_page(data.decode("utf-8"))
            except UnicodeDecodeError as exc:
                self.report.fail(f"{rel}: not UTF-8 text (byte {exc.start}); skipped")
                continue
            pages.append(_Read(rel, data, page, entry, mtime))
        return pages

    def missing(self, pages: list[_Read]) -> None:
        """Pages zk wrote (or took in) that are gone. A note's page renamed or moved in the vault (its id on
        a page zk does not know) is followed there; one deleted is reported; a page of the user's is
        forgotten (its note has its own page)."""
        untracked = {i: r for r in pages if r.entry is None and (i := _zk_id(r.page))}
        for path, entry in sorted(self.files.items()):
            if path in self.seen or not entry.note:
                continue
            if entry.yours:
                del self.files[path]
            elif entry.note in untracked and not entry.legacy:
                read = untracked.pop(entry.note)
                read.entry = self.files[read.path] = self.files.pop(path)
                self.report.change(read.path, entry.note, "renamed", f"the page of note {entry.note[:8]} (was "
                                   f"{path}); zk writes it here from now on")
            elif self.ours and self.memory.store.get(entry.note) is not None:
                self.report.deleted.append({"path": path, "id": entry.note})
                self.report.change(path, entry.note, "deleted", f"deleted in the vault; note {entry.note[:8]} "
                                   "kept (`zk sync DIR --prune` deletes it)")

    # -- sorting pages out --------------------------------------------------------------------------------
    def sort(self, pages: list[_Read]) -> None:
        claimed = self.claimed
        owners = {e.note: p for p, e in self.files.items() if e.note and not e.yours}
        ordered = sorted(pages, key=lambda r: (owners.get(_zk_id(r.page)) != r.path, r.path))
        checked = {}
        for read in ordered:
            if (read.entry is not None and read.entry.yours) or _zk_id(read.page) is None:
                continue
            note = self.check(read)
            if note is not None:
                checked[read.path] = note
        stored = self.memory.store.get_many([n.id for n in checked.values()])
        later = []  # after every page with an id: they may be pages of a note restored or claimed by one
        for read in ordered:
            if (read.entry is not None and read.entry.yours) or _zk_id(read.page) is None:
                later.append(read)
            elif read.path in checked:
                note = checked[read.path]
                if note.id in claimed:
                    self.renumber(read, note, f"a copy of {claimed[note.id]} (same id {note.id[:8]})", "copy")
                else:
                    claimed[note.id] = read.path
                    self.note_page(read, note, stored.get(note.id))
        for read in later:
            if read.entry is not None and read.entry.yours:
                self.user_page(read)
            elif (note := self.bare_note(read)) is not None:
                self.bare_page(read, note)
            else:
                self.new_page(read)

    def check(self, read: _Read) -> Note | None:
        """The page as a note, every field checked as a JSONL record is; None (and a line) if it is bad."""
        try:
            note, dropped = record_to_note(_record(read.page, self.memory.notebook))
        except ValueError as exc:
            message = str(exc)
            for page_name, record_name in _RENAMED.items():
                message = message.replace(f"'{record_name}'", f"'{page_name}'")
            self.report.fail(f"{read.path}: {message[:160]}; skipped")
            return None
        if dropped:
            self.report.fail(f"{read.path}: dropped {len(dropped)} link(s) that are not note ids")
        return note

    def note_page(self, read: _Read, note: Note, stored: Note | None) -> None:
        if stored is not None and stored.notebook != self.memory.notebook:
            self.renumber(read, note, f"note {note.id[:8]} is in notebook '{stored.notebook}'", "other notebook")
        elif stored is None and self.ours and read.entry is not None and read.entry.note == note.id:
            self.report.change(read.path, note.id, "kept", "its note was deleted in zk, but the page was changed "
                               "in the vault; kept, not imported (remove its `id:` line to import it as a new note)")
        elif stored is None:
            self.fresh.append(note)  # a vault restored into this notebook: the same id
        elif _same(note.content, stored.content):
            self.report.skipped_duplicates += 1
            self.took_in(read, stored.content)
        else:
            self.edit(read, stored, note.content)

    def edit(self, read: _Read, stored: Note, text: str) -> None:
        """Changed on both sides (or by a vault that never recorded what zk wrote) is a conflict."""
        both = read.entry is None or read.entry.text != digest(stored.content)
        self.edits.append((read, stored, text, both))

    def renumber(self, read: _Read, note: Note, why: str, what: str) -> None:
        """A page becomes a note of its own (a new id); its fields come along, its annotation is redone."""
        old = note.id
        note.id, note.status, note.history, note.version = uuid.uuid4().hex, PENDING, [], 1
        note.content_hash = content_hash(note.content, note.speaker, note.at,
                                         f"{self.memory.notebook}\x1fvault:{old}:{read.path}")
        if what == "other notebook":
            self.moved[old] = note.id
            move_to_notebook(note, self.memory.notebook, self.memory.settings.journal_session)
        self.own(read, note, what, f"{why}; imported as a new note {note.id[:8]}")

    def new_page(self, read: _Read) -> None:
        """A page the user wrote: a new note, like `zk add` (its journal week)."""
        text = read.page.full_text()
        title = Path(read.path).stem
        if not _UNTITLED.fullmatch(title) and not text.lstrip().startswith("#") and title not in text:
            text = f"# {title}\n\n{text.strip()}"
        fields = read.page.fields
        when = next((d for k in ("date", "created", "at") if (d := maybe_datetime(fields.get(k)))), None)
        when = when or datetime.fromtimestamp(read.mtime)
        try:
            note = self.memory.new_note(validate_content(text), when.replace(microsecond=0).isoformat())
        except ZkError as exc:
            self.report.fail(f"{read.path}: {exc}; skipped")
            return
        period = journal_period(note.at, self.memory.settings.journal_session)
        note.session_id, note.source = session_id_for(self.memory.notebook, period.key), period.title
        note.content_hash = content_hash(note.content, None, "", f"{self.memory.notebook}\x1fvault:{read.path}")
        self.own(read, note, "added", f"a new note {note.id[:8]} (its page: notes/{note.id[:8]}.md; this file "
                 "stays as you wrote it)")

    def own(self, read: _Read, note: Note, what: str, message: str) -> None:
        """A note born from a page the user wrote, remembered as theirs (`settle` drops repeats)."""
        self.owning.append((read, note, what, message))

    def settle(self) -> None:
        """The notes born from pages, less those an earlier import of the same page already made."""
        known = self.memory.store.existing_hashes([note.content_hash for _, note, _, _ in self.owning])
        for read, note, what, message in self.owning:
            if note.content_hash in known:
                self.report.skipped_duplicates += 1
                continue
            self.fresh.append(note)
            self.files[read.path] = Entry(digest(read.data), note=note.id, text=digest(note.content), yours=True)
            self.report.change(read.path, note.id, what, message)

    def user_page(self, read: _Read) -> None:
        """A page of the user's, taken in before as a note: its edit is an edit of that note. In a home that
        did not write the vault, its note comes back from its own page (`fresh`): as it was, or with this
        page's later edit."""
        entry = read.entry
        stored = self.memory.store.get(entry.note) if entry and entry.note else None
        restored = next((n for n in self.fresh if entry and n.id == entry.note), None)
        if stored is None and restored is not None:
            if entry.wrote(read.data):
                self.report.skipped_duplicates += 1  # unchanged since its note's page was written
            else:
                self.edit(read, restored, read.page.full_text())
            return
        if stored is None or stored.notebook != self.memory.notebook:
            self.report.change(read.path, entry.note if entry else None, "kept",
                               "its note was deleted in zk; not imported again")
            return
        text = read.page.full_text()
        if _same(text, stored.content):
            self.took_in(read, stored.content)
        else:
            self.edit(read, stored, text)

    def bare_note(self, read: _Read) -> Note | None:
        """The note of a page whose front matter is gone (one click in Obsidian): the note zk wrote there, else
        the one its name names (`notes/<id or prefix>.md`) when no other page holds it. None: a new page."""
        entry = read.entry
        if read.page.has_front:
            return None
        note_id = entry.note if entry is not None and entry.note else None
        name = PurePosixPath(read.path)
        if note_id is None and str(name.parent) == "notes" and _NOTE_PREFIX.fullmatch(name.stem):
            try:
                note_id = self.memory.resolve(name.stem).id
            except ZkError:  # no such note, or several
                return None
            if self.marker is not None and self.marker.note_paths().get(note_id, read.path) != read.path:
                return None  # the note has its own page elsewhere: this one is not it
        if note_id is None or note_id in self.claimed:
            return None
        note = self.memory.store.get(note_id)
        return note if note is not None and note.notebook == self.memory.notebook else None

    def bare_page(self, read: _Read, note: Note) -> None:
        """A note's page without its front matter: an edit of that note (or nothing new); export writes
        the page again, front matter and all."""
        self.claimed[note.id] = read.path
        if read.entry is None and self.ours:
            read.entry = self.files[read.path] = Entry(note=note.id, text=digest(note.content))
        elif read.entry is not None and not read.entry.note:
            read.entry.note = note.id
        text = read.page.full_text()
        if _same(text, note.content):
            self.report.skipped_duplicates += 1
            self.took_in(read, note.content)
        else:
            self.edit(read, note, text)

    def took_in(self, read: _Read, text: str) -> None:
        """Both sides now hold this text: remember it, and let export rewrite a page that holds nothing else."""
        entry = read.entry
        if entry is None or not self.ours:
            return
        entry.text = digest(text)
        if entry.yours or not read.page.unknown_keys:
            entry.sha, entry.next, entry.legacy = digest(read.data), None, False

    # -- applying -----------------------------------------------------------------------------------------
    def add(self, on_progress: Callable[[int, int | None], None] | None) -> None:
        for note in self.fresh:  # links between notes that moved notebooks move with them
            note.links = [self.moved.get(i, i) for i in note.links]
        for start in range(0, len(self.fresh), 128):  # one embedding batch and one commit per 128 notes
            batch = self.fresh[start:start + 128]
            self.memory.add_notes(batch)
            self.report.added += len(batch)
            if on_progress:
                on_progress(self.report.added, len(self.fresh))
        self.report.session_ids = list(dict.fromkeys(n.session_id for n in self.fresh
                                                     if n.session_id and n.kind == "turn"))

    def revise(self) -> None:
        """The edited pages as new versions of their notes, inside `guard` (no worker writes in between)."""
        if not self.edits:
            return
        by_note: dict[str, list[tuple[_Read, Note, str, bool]]] = {}
        for edit in self.edits:
            by_note.setdefault(edit[1].id, []).append(edit)
        with self.guard():
            current = self.memory.store.get_many(list(by_note), with_vector=True)
            notes = [_Versions.of(note, group, self.report) for note_id, group in by_note.items()
                     if (note := current.get(note_id)) is not None]  # None: deleted meanwhile
            self.memory.revise([edit for versions in notes for edit in versions.batch()])
        for versions in notes:
            for read in versions.pages:
                self.took_in(read, versions.note.content)
            versions.tell(self.report)
        self.report.edited_sessions = list(dict.fromkeys(v.note.session_id for v in notes
                                                         if v.versions and v.note.session_id))

    def save(self) -> None:
        """Remember what was taken in (only in a vault this home wrote: another home's is left as it is)."""
        if self.marker is not None and self.ours:
            with SafeFolder(self.folder) as safe:
                self.marker.save(safe)


def take_in(memory: Memory, folder: Path, guard: Callable[[], AbstractContextManager] = nullcontext,
            on_progress: Callable[[int, int | None], None] | None = None) -> TakeIn:
    """Read a vault's edits, new pages and deletions into the memory's notebook; see the module docstring.
    `guard` is held while edits are written (the CLI's step lock)."""
    folder = folder.expanduser()
    run = _TakeIn(memory, folder, guard)
    pages = run.read()
    run.missing(pages)
    run.sort(pages)
    run.settle()
    try:
        run.add(on_progress)
        run.revise()
    finally:
        try:
            run.save()
        except (OSError, Refused) as exc:
            run.report.fail(f"{folder}: cannot update its marker ({exc}); the next import reads the same pages")
    if run.report.added:
        memory.store.maintain()
    return run.report

