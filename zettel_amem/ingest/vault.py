"""A notebook as a folder of Markdown (an Obsidian vault) that people edit: `zk export --format markdown DIR`
writes it, `zk import DIR` reads edits back (vault_sync.py), `zk sync DIR` does both.

Layout: `notes/<id8>.md` (one per note; see vault_page.py), `episodes/<id9>.md` (one per episode, linking to
its session's notes), `entities/<name>.md` (type, other names, relations, the notes of the episodes that
name it), and `.zk-vault.json`, the marker: the vault's id, its notebook, and for every file zk wrote the
hash of the bytes it wrote (and, for a note's page, which note and a digest of its text then).

Export never overwrites what it did not write as it is: a file whose bytes differ from the hash zk
recorded was changed in the vault and is kept, with one line saying so; a path zk never wrote (a file
the user added) is never written (an entity that wants `Zed.md` gets `Zed (2).md`). It writes the marker
first (listing what it is about to write), then each file atomically, then the marker again, so an
interrupted export is finished by the next one; an export with nothing to change writes nothing.
No file is written or read through a link (folder.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from ..core.errors import ZkError
from ..core.models import Entity, Episode, Note, Relation
from ..core.text import clip, one_line
from ..memory import Memory
from ..storage.database import SCHEMA_VERSION
from .folder import Refused, SafeFolder, name_key, portable_name
from .vault_page import LINKS_LINE, front, note_page, parse_page, read_page

MARKER = ".zk-vault.json"
VAULT_TYPE = "zk-vault"
ZK_FOLDERS = ("notes", "episodes", "entities")
REGISTRY = "vaults.json"  # in the home: the vaults this home wrote, by id, with their notebook
SYNC_WAIT_S = 300.0  # how long a second `zk sync` of one vault waits for the first before giving up

__all__ = ["LINKS_LINE", "MARKER", "VAULT_TYPE", "Entry", "Marker", "export_vault", "is_vault", "read_page",
           "vault_lock"]


def digest(data: bytes | str) -> str:
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    return hashlib.sha256(raw).hexdigest()[:32]


@dataclass
class Entry:
    """What the marker knows about one file."""

    sha: str | None = None  # digest of the bytes zk last wrote there (None: nothing confirmed yet)
    next: str | None = None  # digest of what an export in progress is about to write there
    note: str | None = None  # the note whose page it is
    text: str | None = None  # digest of that note's text when zk last wrote the page (or took it in)
    yours: bool = False  # a page the user wrote, taken in as `note`: zk reads it, never writes it
    legacy: bool = False  # listed by a zk before hashes were kept: its bytes are not known

    def wrote(self, data: bytes) -> bool:
        """Whether these bytes are what zk wrote (or was writing) there."""
        return digest(data) in {self.sha, self.next} - {None}

    def to_json(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v}


class Marker:
    """`.zk-vault.json`, checked field by field: a damaged one is one clear error."""

    def __init__(self, vault_id: str, notebook: str, files: dict[str, Entry] | None = None):
        self.vault_id, self.notebook = vault_id, notebook
        self.files: dict[str, Entry] = files or {}
        self.notes = 0  # notes in the notebook at the last export
        self.raw: bytes = b""  # as read: an export that changes nothing does not rewrite it

    @classmethod
    def new(cls, notebook: str) -> Marker:
        return cls(secrets.token_hex(8), notebook)

    @classmethod
    def load(cls, folder: Path) -> Marker | None:
        with SafeFolder(folder) as safe:
            try:
                raw = safe.read(MARKER)
            except Refused as exc:
                raise ZkError(f"{folder / MARKER}: {exc}") from None
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            marker = cls._from_json(data)
            marker.notes = data["notes"] if isinstance(data.get("notes"), int) else 0
        except (ValueError, TypeError, AttributeError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else exc
            raise ZkError(f"{folder / MARKER} is not a zk vault marker ({why}); move it away to start afresh") \
                from None
        marker.raw = raw
        return marker

    @classmethod
    def _from_json(cls, data) -> Marker:
        if not isinstance(data, dict) or data.get("type") != VAULT_TYPE:
            raise ValueError("no 'type': 'zk-vault'")
        notebook = data.get("notebook", "main")
        if not isinstance(notebook, str):
            raise ValueError("'notebook' is not a name")
        files = data.get("files", {})
        if isinstance(files, list):  # an older zk: the files it wrote, without hashes
            if not all(isinstance(f, str) for f in files):
                raise ValueError("'files' is not a list of paths")
            return cls(data.get("vault") or secrets.token_hex(8), notebook, {f: Entry(legacy=True) for f in files})
        if not isinstance(files, dict) or not isinstance(data.get("vault"), str):
            raise ValueError("'files' or 'vault' is missing")
        entries = {}
        for path, entry in files.items():
            if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str | None) for k in
                                                      ("sha", "next", "note", "text")):
                raise ValueError(f"the entry of {path[:60]!r} is not one zk writes")
            entries[path] = Entry(**{k: entry.get(k) for k in ("sha", "next", "note", "text")},
                                  yours=bool(entry.get("yours")), legacy=bool(entry.get("legacy")))
        return cls(data["vault"], notebook, entries)

    def to_bytes(self) -> bytes:
        data = {"type": VAULT_TYPE, "schema_version": SCHEMA_VERSION, "vault": self.vault_id,
                "notebook": self.notebook, "notes": self.notes,
                "files": {p: e.to_json() for p, e in sorted(self.files.items())}}
        return (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8")

    def save(self, safe: SafeFolder) -> None:
        """Write it (atomically, synced) if it changed."""
        data = self.to_bytes()
        if data != self.raw:
            safe.write(MARKER, data)
            safe.sync(MARKER)
            self.raw = data

    def note_paths(self) -> dict[str, str]:
        """note id -> the path of its zk page."""
        return {e.note: p for p, e in self.files.items() if e.note and not e.yours}


def is_vault(folder: Path) -> bool:
    return (folder / MARKER).is_file() or (folder / MARKER).is_symlink()


@contextmanager
def vault_lock(home: Path, folder: Path, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Held across a whole `zk sync` (read the vault, add notes, write pages, write the marker), and around
    `zk import DIR` and `zk export --format markdown DIR`: two syncs at once read the same new pages and
    each added them. One lock per vault folder, kept in the home: no file is added to the vault (where it
    could be read as a page, or not be writable at all). A second run waits up to SYNC_WAIT_S (calling
    `on_wait` first), then gives up in one line. A home that cannot hold a lock file cannot be written
    either, so there is nothing to guard: the run goes on and fails where it writes, as it did."""
    from filelock import FileLock, Timeout

    lock = FileLock(str(home / f".vault-{digest(str(folder.expanduser().resolve()))[:16]}.lock"))
    held = False
    try:
        home.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            if on_wait is not None:
                on_wait()
            lock.acquire(timeout=SYNC_WAIT_S)
        held = True
    except Timeout:  # a TimeoutError, so an OSError: caught first
        raise ZkError(f"another zk sync of this vault is running ({folder}); try again when it has finished") \
            from None
    except OSError:
        pass
    try:
        yield
    finally:
        if held:
            lock.release()


# -- which vaults this home wrote -----------------------------------------------------------------------
def _registry(memory: Memory) -> dict:
    try:
        data = json.loads((memory.home / REGISTRY).read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, RecursionError):
        return {}


def is_ours(memory: Memory, marker: Marker | None) -> bool:
    """Whether this home wrote the vault for this notebook (its notes missing here were deleted here)."""
    entry = _registry(memory).get(marker.vault_id) if marker else None
    return isinstance(entry, dict) and entry.get("notebook") == memory.notebook


def remember(memory: Memory, marker: Marker, folder: Path) -> None:
    registry = _registry(memory)
    if registry.get(marker.vault_id, {}).get("notebook") == memory.notebook:
        return
    registry[marker.vault_id] = {"notebook": memory.notebook, "folder": str(folder)}
    memory.home.mkdir(parents=True, exist_ok=True)
    temp = memory.home / f".{REGISTRY}.{os.getpid()}"
    temp.write_text(json.dumps(registry, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    temp.replace(memory.home / REGISTRY)


# -- export ---------------------------------------------------------------------------------------------
def _title(text: str, chars: int = 48) -> str:
    """Link text: the first line's words, without characters that end a wikilink."""
    first = next((line.strip(" #") for line in text.splitlines() if line.strip(" #")), text)
    return clip(one_line(first), chars).replace("|", "/").replace("]]", "] ]").replace("[[", "[ [")


@dataclass
class _File:
    data: bytes
    note: str | None = None
    text: str | None = None


class _Plan:
    """What one export writes: relative path -> file; names chosen around files zk did not write."""

    def __init__(self, marker: Marker, safe: SafeFolder, notes: list[Note]):
        self.files: dict[str, _File] = {}
        zk_paths = {p for p, e in marker.files.items() if not e.yours}
        self.taken = {folder: {name_key(n.removesuffix(".md")) for n in safe.names(folder) if n.endswith(".md")
                               and f"{folder}/{n}" not in zk_paths} for folder in ZK_FOLDERS}
        known = marker.note_paths()
        self.note_path = {n.id: known[n.id] for n in notes if n.id in known}  # where it is (renamed, moved)
        self.note_stem = {i: Path(p).stem for i, p in self.note_path.items()}
        for path in self.note_path.values():
            if path.startswith("notes/") and path.count("/") == 1:
                self.taken["notes"].add(name_key(Path(path).stem))
        shared: dict[str, int] = {}
        for note in notes:
            shared[note.id[:8]] = shared.get(note.id[:8], 0) + 1
        for note in notes:  # 8 characters unless two notes share them
            if note.id not in self.note_stem:
                wanted = note.id[:8] if shared[note.id[:8]] == 1 else note.id
                self.note_stem[note.id] = self.free("notes", wanted)
                self.note_path[note.id] = f"notes/{self.note_stem[note.id]}.md"
        self.titles = {n.id: _title(n.content) for n in notes}

    def free(self, folder: str, wanted: str, fallback: str = "entity") -> str:
        return portable_name(wanted, self.taken[folder], fallback)

    def note_link(self, note_id: str) -> str | None:
        stem = self.note_stem.get(note_id)
        return f"[[{stem}|{self.titles[note_id]}]]" if stem else None

    def add(self, path: str, text: str, note: Note | None = None) -> None:
        self.files[path] = _File(text.encode("utf-8"), note.id if note else None,
                                 digest(note.content) if note else None)


def _note_pages(plan: _Plan, notes: list[Note]) -> None:
    backlinks: dict[str, list[str]] = {}
    for note in notes:
        for target in note.links:
            backlinks.setdefault(target, []).append(note.id)
    for note in notes:
        fields = {"id": note.id, "at": note.at, "created": note.created, "keywords": note.keywords,
                  "tags": note.tags, "user_tags": note.user_tags, "context": note.context, "links": note.links,
                  "session": note.session_id, "kind": note.kind, "speaker": note.speaker,
                  "seq": note.seq if note.session_id else None, "source": note.source, "status": note.status,
                  "hash": note.content_hash}
        out = [link for i in note.links if (link := plan.note_link(i))]
        back = [link for i in backlinks.get(note.id, []) if (link := plan.note_link(i))]
        tail = []
        if out:
            tail.append("Links: " + " · ".join(out))
        if back:
            tail.append("Linked from: " + " · ".join(back))
        if note.session_id:
            tail.append(f"Session: {one_line(note.source or note.session_id)}")
        plan.add(plan.note_path[note.id], note_page(fields, note.content, tail), note)


def _episode_pages(plan: _Plan, notes: list[Note], episodes: list[Episode]) -> dict[str, str]:
    """Episodes: their summary and the notes of their session. Returns episode id -> file stem."""
    by_session: dict[str, list[Note]] = {}
    for note in notes:
        if note.session_id:
            by_session.setdefault(note.session_id, []).append(note)
    stems = {}
    for episode in episodes:
        stem = stems[episode.id] = plan.free("episodes", episode.id[:9], "episode")
        turns = sorted(by_session.get(episode.session_id, []), key=lambda n: (n.seq, n.at))
        summary = (episode.summary or "(not summarised yet)").replace("[[", "[ [")  # model text: no stray links
        body = [f"# {one_line(episode.title or episode.id)}", "", summary, "",
                "## Notes", ""] + [f"- {n.at[:16].replace('T', ' ')} {plan.note_link(n.id)}" for n in turns]
        fields = {"id": episode.id, "kind": "episode", "session": episode.session_id, "start": episode.start,
                  "end": episode.end, "status": episode.status, "abstract": episode.abstract}
        plan.add(f"episodes/{stem}.md", front(fields) + "\n".join(body) + "\n")
    return stems


def _entity_pages(plan: _Plan, notes: list[Note], episodes: list[Episode], episode_stem: dict[str, str],
                  entities: list[Entity], relations: list[Relation]) -> int:
    """Entities (canonical ones; a merged name is listed as another name of the one it joined)."""
    canonical = {e.id: e for e in entities}
    by_session: dict[str, list[Note]] = {}
    for note in notes:
        if note.session_id:
            by_session.setdefault(note.session_id, []).append(note)

    def root(entity: Entity) -> Entity:
        seen = set()
        while entity.merged_into and entity.merged_into in canonical and entity.id not in seen:
            seen.add(entity.id)
            entity = canonical[entity.merged_into]
        return entity

    stem = {e.id: plan.free("entities", e.name) for e in entities if not e.merged_into}
    episode_by_id = {e.id: e for e in episodes}
    for entity in (e for e in entities if not e.merged_into):
        group = [e for e in entities if root(e).id == entity.id]
        mentioned = list(dict.fromkeys(i for e in group for i in e.episodes))
        lines = [f"# {one_line(entity.name)}", "", f"Type: {entity.type}"]
        others = [e.name for e in group if e.id != entity.id]
        if others:
            lines.append("Also: " + ", ".join(others))
        facts = []
        for rel in relations:
            subject, obj = canonical.get(rel.subject), canonical.get(rel.object)
            if subject is None or obj is None or entity.id not in (root(subject).id, root(obj).id):
                continue
            when = rel.valid_from[:10] + (f" – {rel.invalid_from[:10]}" if rel.invalid_from else "")
            facts.append(f"- [[{stem[root(subject).id]}]] {rel.predicate} [[{stem[root(obj).id]}]] ({when})")
        if facts:
            lines += ["", "## Relations", "", *facts]
        lines += ["", "## Episodes", ""] + [f"- [[{episode_stem[i]}|{_title(episode_by_id[i].abstract or i)}]]"
                                             for i in mentioned if i in episode_stem]
        linked = [n for i in mentioned if i in episode_by_id
                  for n in sorted(by_session.get(episode_by_id[i].session_id, []), key=lambda n: n.at)]
        lines += ["", "## Notes", ""] + [f"- {plan.note_link(n.id)}" for n in linked]
        fields = {"id": entity.id, "kind": "entity", "type": entity.type, "aliases": others or None}
        plan.add(f"entities/{stem[entity.id]}.md", front(fields) + "\n".join(lines) + "\n")
    return len(stem)


def open_vault(folder: Path, notebook: str) -> Marker:
    """The folder's marker (a new one for a new or empty folder); refuses anything else in one line."""
    folder = folder.expanduser()
    if folder.is_symlink() and not folder.exists():
        raise ZkError(f"{folder} is a link to nothing")
    if folder.exists() and not folder.is_dir():
        raise ZkError(f"{folder} is a file, not a folder")
    marker = Marker.load(folder) if folder.is_dir() else None
    if marker is None:
        if folder.is_dir() and any(folder.iterdir()):
            hint = " (it holds zk pages: was it copied without its hidden files? `zk import` reads it back)" \
                if looks_like_vault(folder) else ""
            raise ZkError(f"{folder} is not empty and is not a zk vault (no {MARKER}){hint}; export into a new "
                          "or empty folder")
        return Marker.new(notebook)
    if marker.notebook != notebook:
        raise ZkError(f"{folder} is the vault of notebook '{marker.notebook}'; export notebook '{notebook}' "
                      "into another folder")
    for name in ZK_FOLDERS:
        if (folder / name).is_symlink() or ((folder / name).exists() and not (folder / name).is_dir()):
            raise ZkError(f"{folder / name} is a link or a file, not a folder; zk does not write through links")
    return marker


def looks_like_vault(folder: Path) -> bool:
    """A zk vault whose marker is missing (copied without hidden files): `notes/` holds pages with a zk id."""
    notes = folder / "notes"
    if not notes.is_dir() or notes.is_symlink():
        return False
    for path in sorted(notes.glob("*.md"))[:20]:
        try:
            if path.is_symlink() or not path.is_file():
                continue
            with path.open("rb") as fh:
                head = fh.read(4096).decode("utf-8", "replace")
        except OSError:
            continue
        fields = parse_page(head).fields
        if isinstance(fields.get("id"), str) and len(fields["id"]) == 32:
            return True
    return False


# -- deciding and writing ---------------------------------------------------------------------------------
@dataclass
class _Outcome:
    write: list[str]
    remove: list[str]
    kept: list[str]
    unchanged: int = 0
    written: int = 0
    removed: int = 0


def _absorbed(data: bytes, note: Note | None) -> bool:
    """A changed note page that holds nothing but the note's current text and zk's own fields: rewriting
    it loses no word (an edit already taken in, or only zk's fields changed)."""
    if note is None:
        return False
    try:
        page = parse_page(data.decode("utf-8"))
    except UnicodeDecodeError:
        return False
    return page.fields.get("id") == note.id and page.text.strip() == note.content.strip() and \
        not page.unknown_keys and not page.typed_below


def _may_replace(path: str, entry: Entry | None, current: bytes, notes: dict[str, Note]) -> bool:
    """Whether zk may overwrite (or delete) what is at `path` now without losing what someone wrote."""
    if entry is None or entry.yours:
        return False
    if entry.wrote(current):
        return True
    if entry.legacy and not path.startswith("notes/"):
        return True  # an older zk's generated page: it was overwritten on every export then too
    if not (entry.note or path.startswith("notes/")):
        return False
    note_id = entry.note or read_page(current.decode("utf-8", "replace"))[0].get("id")
    return _absorbed(current, notes.get(note_id) if isinstance(note_id, str) else None)


def _decide(safe: SafeFolder, marker: Marker, plan: _Plan, notes: dict[str, Note]) -> _Outcome:
    out = _Outcome([], [], [])
    for path, file in sorted(plan.files.items()):
        entry = marker.files.get(path)
        try:
            current = safe.read(path)
        except Refused as exc:
            out.kept.append(str(exc))
            continue
        if current == file.data:
            out.unchanged += 1
            marker.files[path] = Entry(digest(file.data), note=file.note, text=file.text)
        elif current is None or _may_replace(path, entry, current, notes):
            out.write.append(path)
        else:
            why = "changed in the vault since zk wrote it" if entry else "a file zk did not write"
            out.kept.append(f"{path}: {why}; kept as it is, zk's update not written"
                            + (" (`zk sync` takes its text in)" if path.startswith("notes/") else
                               " (delete it to get zk's page back)"))
    for path, entry in sorted(marker.files.items()):
        if path in plan.files or entry.yours:
            continue
        try:
            current = safe.read(path)
        except Refused as exc:
            out.kept.append(str(exc))
            continue
        if current is None:
            del marker.files[path]
        elif _may_replace(path, entry, current, notes):
            out.remove.append(path)
        else:
            out.kept.append(f"{path}: gone from zk, but changed in the vault since zk wrote it; kept as it is")
    return out


def _write(safe: SafeFolder, marker: Marker, plan: _Plan, out: _Outcome,
           on_progress: Callable[[int, int], None] | None) -> None:
    """The marker first (what is about to be written, so an interrupted export is resumed, not refused),
    then each file atomically, then the marker as it now is. Nothing at all when nothing changed."""
    if out.write or out.remove:
        for folder in ZK_FOLDERS:
            safe.clean_temp(folder)
        for path in out.write:
            entry = marker.files.setdefault(path, Entry())
            entry.next = digest(plan.files[path].data)
        marker.save(safe)
    for index, path in enumerate(out.write, 1):
        file = plan.files[path]
        safe.write(path, file.data)  # as is: no newline translation of the note's text
        marker.files[path] = Entry(digest(file.data), note=file.note, text=file.text)
        out.written += 1
        if on_progress:
            on_progress(index, len(out.write))
    for path in out.remove:
        out.removed += safe.remove(path)
        marker.files.pop(path, None)
    marker.save(safe)


def export_vault(memory: Memory, folder: Path, episodes: list[Episode], entities: list[Entity],
                 relations: list[Relation], on_progress: Callable[[int, int], None] | None = None) -> dict:
    """Write the memory's notebook into `folder` as a vault; see the module docstring. Returns counts and
    `kept`: one line per file left as it is."""
    folder = folder.expanduser()
    marker = open_vault(folder, memory.notebook)
    notes = memory.store.notes(memory.notebook)
    notes.sort(key=lambda n: (n.at, n.created, n.seq, n.id))
    try:
        with SafeFolder(folder) as safe:
            plan = _Plan(marker, safe, notes)
            _note_pages(plan, notes)
            episode_stem = _episode_pages(plan, notes, episodes)
            entity_count = _entity_pages(plan, notes, episodes, episode_stem, entities, relations)
            out = _decide(safe, marker, plan, {n.id: n for n in notes})
            marker.notes = len(notes)
            _write(safe, marker, plan, out, on_progress)
    except Refused as exc:
        raise ZkError(f"{folder}: {exc}") from None
    except OSError as exc:
        raise ZkError(f"cannot write the vault {folder}: {exc.strerror or exc} ({exc.filename or ''}); "
                      "the next export finishes it") from None
    remember(memory, marker, folder)
    return {"folder": str(folder), "notes": len(notes), "episodes": len(episodes), "entities": entity_count,
            "written": out.written, "unchanged": out.unchanged, "removed": out.removed, "kept": out.kept}
