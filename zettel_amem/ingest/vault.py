"""A notebook as a folder of Markdown (an Obsidian vault): `zk export --format markdown DIR`, and back with
`zk import DIR`.

Layout: `notes/<id8>.md` (one per note), `episodes/<id9>.md` (one per episode, linking to its session's
notes), `entities/<name>.md` (one per entity: type, other names, relations, and the notes of the
episodes that name it), and `.zk-vault.json`, the marker that says the folder is a zk vault and which
files zk wrote there. File names are short ids, so an edited note keeps its file; links are wikilinks
with the note's first words as their text (`[[3f9a12bc|Knee hurts …]]`), which Obsidian resolves by
file name anywhere in the vault.

Front matter is YAML whose values are JSON (`keywords: ["knee", "run"]`, `context: "…"`), valid YAML
that reads back exactly; block lists (`- item`), as Obsidian writes them after an edit, read too. The
note's text is the body up to the `<!-- zk:links -->` line that starts the generated links.

Re-exporting updates the files in place (unchanged files are not rewritten) and removes the files of
notes deleted since; files the user added are never touched. A non-empty folder without the marker
is refused. Importing a vault restores the notes with their ids, text, fields and links (vectors are
recomputed); version history is not in the vault (`zk export` JSONL keeps it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from ..database import SCHEMA_VERSION
from ..errors import ZkError
from ..memory import Memory, content_hash
from ..models import READY, Entity, Episode, Note, Relation
from ..text import clip, hashtags, one_line

MARKER = ".zk-vault.json"
VAULT_TYPE = "zk-vault"
LINKS_LINE = "<!-- zk:links -->"
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f]')
# Front-matter fields of a note page, in order; values are JSON.
_NOTE_FIELDS = ("id", "at", "created", "keywords", "tags", "user_tags", "context", "links", "session", "kind",
                "speaker", "seq", "source", "status", "hash")


def is_vault(folder: Path) -> bool:
    return (folder / MARKER).is_file()


def _title(text: str, chars: int = 48) -> str:
    """Link text: the first line's words, without characters that end a wikilink."""
    first = next((line.strip(" #") for line in text.splitlines() if line.strip(" #")), text)
    return clip(one_line(first), chars).replace("|", "/").replace("]]", "] ]").replace("[[", "[ [")


def _front(fields: dict) -> str:
    lines = ["---"] + [f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()
                       if value is not None] + ["---"]
    return "\n".join(lines) + "\n"


def _file_name(name: str, taken: set[str]) -> str:
    base = _UNSAFE.sub(" ", name).strip(" .") or "entity"
    base = clip(base, 80, ellipsis="")
    candidate, n = base, 2
    while candidate.casefold() in taken:
        candidate, n = f"{base} ({n})", n + 1
    taken.add(candidate.casefold())
    return candidate


class _Vault:
    """What one export writes: relative path -> file text."""

    def __init__(self, notes: list[Note]):
        self.files: dict[str, str] = {}
        self.note_stem: dict[str, str] = {}
        stems = {}
        for note in notes:  # 8 characters unless two notes share them
            stems.setdefault(note.id[:8], []).append(note.id)
        for short, ids in stems.items():
            for note_id in ids:
                self.note_stem[note_id] = short if len(ids) == 1 else note_id
        self.titles = {n.id: _title(n.content) for n in notes}

    def note_link(self, note_id: str) -> str | None:
        stem = self.note_stem.get(note_id)
        return f"[[{stem}|{self.titles[note_id]}]]" if stem else None


def export_vault(memory: Memory, folder: Path, episodes: list[Episode], entities: list[Entity],
                 relations: list[Relation], on_progress: Callable[[int, int], None] | None = None) -> dict:
    """Write the memory's notebook into `folder` as a vault; see the module docstring. Returns counts."""
    folder = folder.expanduser()
    if folder.exists() and not folder.is_dir():
        raise ZkError(f"{folder} is a file, not a folder")
    if folder.is_dir() and any(folder.iterdir()) and not is_vault(folder):
        raise ZkError(f"{folder} is not empty and is not a zk vault (no {MARKER}); export into a new or empty folder")
    previous: list[str] = []
    if is_vault(folder):
        try:
            marker = json.loads((folder / MARKER).read_text(encoding="utf-8"))
            previous = list(marker.get("files", []))
        except (OSError, ValueError) as exc:
            raise ZkError(f"cannot read {folder / MARKER}: {exc}") from None
    notes = memory.store.notes(memory.notebook)
    notes.sort(key=lambda n: (n.at, n.created, n.seq, n.id))
    vault = _Vault(notes)
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
        out = [link for i in note.links if (link := vault.note_link(i))]
        back = [link for i in backlinks.get(note.id, []) if (link := vault.note_link(i))]
        tail = [LINKS_LINE]
        if out:
            tail.append("Links: " + " · ".join(out))
        if back:
            tail.append("Linked from: " + " · ".join(back))
        if note.session_id:
            tail.append(f"Session: {note.source or note.session_id}")
        vault.files[f"notes/{vault.note_stem[note.id]}.md"] = _front(fields) + note.content + "\n\n" + \
            "\n\n".join(tail) + "\n"
    # Episodes: their summary and the notes of their session.
    by_session: dict[str, list[Note]] = {}
    for note in notes:
        if note.session_id:
            by_session.setdefault(note.session_id, []).append(note)
    episode_stem = {}
    for episode in episodes:
        stem = episode.id[:9]
        episode_stem[episode.id] = stem
        turns = sorted(by_session.get(episode.session_id, []), key=lambda n: (n.seq, n.at))
        summary = (episode.summary or "(not summarised yet)").replace("[[", "[ [")  # model text: no stray links
        body = [f"# {episode.title or episode.id}", "", summary, "",
                "## Notes", ""] + [f"- {n.at[:16].replace('T', ' ')} {vault.note_link(n.id)}" for n in turns]
        fields = {"id": episode.id, "kind": "episode", "session": episode.session_id, "start": episode.start,
                  "end": episode.end, "status": episode.status, "abstract": episode.abstract}
        vault.files[f"episodes/{stem}.md"] = _front(fields) + "\n".join(body) + "\n"
    # Entities (canonical ones; a merged name is listed as another name of the one it joined).
    canonical = {e.id: e for e in entities}

    def root(entity: Entity) -> Entity:
        seen = set()
        while entity.merged_into and entity.merged_into in canonical and entity.id not in seen:
            seen.add(entity.id)
            entity = canonical[entity.merged_into]
        return entity

    taken: set[str] = set()
    entity_stem = {e.id: _file_name(e.name, taken) for e in entities if not e.merged_into}
    episode_by_id = {e.id: e for e in episodes}
    for entity in entities:
        if entity.merged_into:
            continue
        group = [e for e in entities if root(e).id == entity.id]
        mentioned = list(dict.fromkeys(i for e in group for i in e.episodes))
        lines = [f"# {entity.name}", "", f"Type: {entity.type}"]
        others = [e.name for e in group if e.id != entity.id]
        if others:
            lines.append("Also: " + ", ".join(others))
        facts = []
        for rel in relations:
            subject, obj = canonical.get(rel.subject), canonical.get(rel.object)
            if subject is None or obj is None or entity.id not in (root(subject).id, root(obj).id):
                continue
            when = rel.valid_from[:10] + (f" – {rel.invalid_from[:10]}" if rel.invalid_from else "")
            facts.append(f"- [[{entity_stem[root(subject).id]}]] {rel.predicate} [[{entity_stem[root(obj).id]}]]"
                         f" ({when})")
        if facts:
            lines += ["", "## Relations", "", *facts]
        lines += ["", "## Episodes", ""] + [f"- [[{episode_stem[i]}|{_title(episode_by_id[i].abstract or i)}]]"
                                             for i in mentioned if i in episode_stem]
        linked_notes = [n for i in mentioned if i in episode_by_id
                        for n in sorted(by_session.get(episode_by_id[i].session_id, []), key=lambda n: n.at)]
        lines += ["", "## Notes", ""] + [f"- {vault.note_link(n.id)}" for n in linked_notes]
        fields = {"id": entity.id, "kind": "entity", "type": entity.type, "aliases": others or None}
        vault.files[f"entities/{entity_stem[entity.id]}.md"] = _front(fields) + "\n".join(lines) + "\n"
    # Write: only what changed; then remove what an earlier export wrote and this one did not.
    written = unchanged = 0
    for index, (relative, text) in enumerate(sorted(vault.files.items()), 1):
        path = folder / relative
        if path.is_file() and path.read_bytes() == text.encode("utf-8"):
            unchanged += 1
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(text.encode("utf-8"))  # as is: no newline translation of the note's text
            tmp.replace(path)
            written += 1
        if on_progress:
            on_progress(index, len(vault.files))
    removed = 0
    for relative in set(previous) - set(vault.files):
        target = folder / relative
        if target.is_file() and target.resolve().is_relative_to(folder.resolve()):
            target.unlink()
            removed += 1
    marker = {"type": VAULT_TYPE, "schema_version": SCHEMA_VERSION, "notebook": memory.notebook,
              "notes": len(notes), "files": sorted(vault.files)}
    (folder / MARKER).write_text(json.dumps(marker, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return {"folder": str(folder), "notes": len(notes), "episodes": len(episodes),
            "entities": len(entity_stem), "written": written, "unchanged": unchanged, "removed": removed}


# -- import ---------------------------------------------------------------------------------------------
def _value(raw: str):
    raw = raw.strip()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" else raw


def read_page(text: str) -> tuple[dict, str]:
    """(front matter, body before the generated links) of one vault page."""
    text = text.lstrip("\ufeff")
    if text.startswith("---\r\n"):  # saved with Windows line ends: all of it
        text = text.replace("\r\n", "\n")
    if not text.startswith("---\n"):
        return {}, text
    end = text.find("\n---\n", 3)
    if end < 0:
        return {}, text
    fields: dict = {}
    current = None
    for line in text[4:end].split("\n"):
        if current and line.lstrip().startswith("- "):
            fields.setdefault(current, [])
            if isinstance(fields[current], list):
                fields[current].append(_value(line.lstrip()[2:]))
            continue
        key, sep, raw = line.partition(":")
        if not sep or line[:1].isspace():
            continue
        current = key.strip()
        fields[current] = _value(raw)
        if fields[current] is None:
            fields[current] = []  # "key:" then block items (or an empty value)
    body = text[end + 5:]
    cut = body.find("\n" + LINKS_LINE)
    return fields, (body[:cut] if cut >= 0 else body).strip()


def _strings(value) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if v is not None and str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()] if value else []


def restore_vault(memory: Memory, folder: Path, on_progress: Callable[[int, int | None], None] | None = None
                  ) -> dict:
    """Notes of a vault back into the memory's notebook, with their ids, text, fields and links. Notes whose
    id is already stored are left as they are. Pages that are not notes (episodes, entities) are skipped:
    the worker rebuilds them from the restored sessions."""
    pages = sorted((folder / "notes").glob("*.md")) if (folder / "notes").is_dir() else []
    notes: list[Note] = []
    failed: list[dict] = []
    for path in pages:
        try:
            fields, body = read_page(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            failed.append({"line": None, "record": None, "message": f"{path.name}: cannot read it ({exc})"})
            continue
        note_id = str(fields.get("id") or "")
        if not re.fullmatch(r"[0-9a-f]{32}", note_id) or not body:
            failed.append({"line": None, "record": None, "message": f"{path.name}: no zk id or no text; skipped"})
            continue
        try:
            at = str(fields.get("at") or "")
            note = memory.new_note(body, at or None)
        except ZkError as exc:
            failed.append({"line": None, "record": None, "message": f"{path.name}: {exc}; skipped"})
            continue
        note.id = note_id
        note.created = str(fields.get("created") or note.created)
        note.keywords, note.tags = _strings(fields.get("keywords")), _strings(fields.get("tags"))
        note.user_tags = _strings(fields.get("user_tags")) if "user_tags" in fields else hashtags(body)
        note.context = str(fields.get("context") or "")
        note.links = [i for i in _strings(fields.get("links")) if re.fullmatch(r"[0-9a-f]{32}", i)]
        note.session_id = fields.get("session") or None
        note.kind = str(fields.get("kind") or "note")
        note.speaker = fields.get("speaker") or None
        note.seq = int(fields.get("seq") or 0)
        note.source = fields.get("source") or None
        note.status = READY if fields.get("status") == READY else "pending"
        note.content_hash = str(fields.get("hash") or content_hash(note.content, note.speaker, note.at, note.source))
        notes.append(note)
    existing = set(memory.store.get_many([n.id for n in notes]))
    fresh = [n for n in notes if n.id not in existing]
    for start in range(0, len(fresh), 128):  # one embedding batch and one commit per 128 notes
        memory.add_notes(fresh[start:start + 128])
        if on_progress:
            on_progress(min(start + 128, len(fresh)), len(fresh))
    sessions = list(dict.fromkeys(n.session_id for n in fresh if n.session_id and n.kind == "turn"))
    return {"format": VAULT_TYPE, "added": len(fresh), "skipped_duplicates": len(notes) - len(fresh),
            "failed": failed, "session_ids": sessions}
