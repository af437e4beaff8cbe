"""Files inside a folder someone else may have filled (a synced vault, a cloned repo, a zip): read only
regular files that lie inside it, with a size cap, and write without ever following a link.

Reading: a file link is resolved and refused if its target leaves the folder; FIFOs, devices and
sockets are refused (opened non-blocking, so a FIFO cannot hang the reader); a file over the cap is
refused before it is read. Folder links are never followed (`os.walk` default), so a loop cannot trap
a walk. Each refusal is a `Refused` whose message names the file, for one line in the report.

Writing (`SafeFolder`): every folder on the way is opened with O_NOFOLLOW relative to the one above it,
each file is written to a fresh hidden temp file (O_EXCL, O_NOFOLLOW) and renamed over its place, so
an interrupted write leaves the old file or the new one, never half of one, and a planted link at the
page or its temp name is replaced, never written through.

Names (`portable_name`): NFC, no bidi controls or characters Windows, macOS or Obsidian cannot hold in a
name, no Windows device names (CON, nul, COM1 …), clipped by UTF-8 bytes rather than characters.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path

MAX_FILE_BYTES = 16 * 1024 * 1024  # a note holds at most 100,000 characters; a file this big is no page
NAME_BYTES = 180  # of NAME_MAX's 255: room for " (12)", ".md" and a sync tool's own suffixes
TEMP_SUFFIX = ".zk-tmp"
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]\x00-\x1f\x7f]')
# Bidi controls (RLO shows `exe.md` as `dm.exe`), and other invisible format characters that make two
# names look alike.
_INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
_RESERVED = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])", re.IGNORECASE)


class Refused(Exception):
    """A file that is not read or written, with the reason as one line."""


# -- reading ------------------------------------------------------------------------------------------
def walk_files(root: Path, suffixes: tuple[str, ...]) -> Iterator[Path]:
    """Files under `root` whose names end in `suffixes`, sorted; hidden folders (.git, .obsidian, .trash)
    and hidden files (zk's own temp files among them) are left out; folder links are not followed."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        found += [Path(dirpath, n) for n in filenames if n.lower().endswith(suffixes) and not n.startswith(".")]
    return iter(sorted(found, key=lambda p: p.relative_to(root).as_posix()))


def read_inside(root: Path, path: Path, cap: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of `path`, a regular file inside `root` (a link to one is followed only if it stays inside
    `root`); raises Refused naming the file otherwise, OSError if it cannot be read."""
    name = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
    if path.is_symlink():
        target = Path(os.path.realpath(path))
        if not target.is_relative_to(Path(os.path.realpath(root))):
            raise Refused(f"{name}: a link to a file outside the folder; skipped")
        path = target
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Refused(f"{name}: cannot read it ({exc.strerror or exc}); skipped") from None
    try:
        return _read_regular(fd, name, cap)
    finally:
        os.close(fd)


def _read_regular(fd: int, name: str, cap: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"{name}: not a regular file (a FIFO, device or socket); skipped")
    if info.st_size > cap:
        raise Refused(f"{name}: larger than {cap // (1024 * 1024)} MiB; skipped")
    os.set_blocking(fd, True)
    chunks, size = [], 0
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:  # it grew while being read
            raise Refused(f"{name}: larger than {cap // (1024 * 1024)} MiB; skipped")
    return b"".join(chunks)


# -- writing ------------------------------------------------------------------------------------------
class SafeFolder:
    """Reads and writes of relative paths inside one folder that never pass through a link."""

    def __init__(self, root: Path):
        self.root = root
        self._fds: dict[tuple[str, ...], int] = {}

    def __enter__(self) -> SafeFolder:
        return self

    def __exit__(self, *exc) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()

    def _dir(self, parts: tuple[str, ...], create: bool) -> int | None:
        if parts in self._fds:
            return self._fds[parts]
        if not parts:
            if create:
                self.root.mkdir(parents=True, exist_ok=True)
            try:
                fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:
                return None
        else:
            parent = self._dir(parts[:-1], create)
            if parent is None:
                return None
            if create:
                try:
                    os.mkdir(parts[-1], dir_fd=parent)
                except FileExistsError:
                    pass
            try:
                fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
            except FileNotFoundError:
                return None
            except OSError:  # ELOOP / ENOTDIR: a link or a file where a folder goes
                raise Refused(f"{'/'.join(parts)}: a link or a file, not a folder; zk does not write "
                              "through links") from None
        self._fds[parts] = fd
        return fd

    def _split(self, relative: str) -> tuple[tuple[str, ...], str]:
        parts = tuple(relative.split("/"))
        return parts[:-1], parts[-1]

    def read(self, relative: str, cap: int = MAX_FILE_BYTES) -> bytes | None:
        """The file's bytes; None if there is none; Refused if it is a link or not a regular file."""
        folder, name = self._split(relative)
        parent = self._dir(folder, create=False)
        if parent is None:
            return None
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise Refused(f"{relative}: {'a link' if exc.errno == errno.ELOOP else exc.strerror or exc}; zk does not "
                          "read or write through links") from None
        try:
            return _read_regular(fd, relative, cap)
        finally:
            os.close(fd)

    def write(self, relative: str, data: bytes) -> None:
        """Write atomically: a fresh temp file beside it, then a rename over it (a link there is replaced)."""
        folder, name = self._split(relative)
        parent = self._dir(folder, create=True)
        temp = f".{name[:100]}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666, dir_fd=parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(temp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=parent)
            except OSError:
                pass
            raise

    def sync(self, relative: str) -> None:
        """fsync one written file (the marker: the one file a power cut must not lose)."""
        folder, name = self._split(relative)
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self._dir(folder, create=False))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def remove(self, relative: str) -> bool:
        """Delete a regular file (never a link or a folder); whether it was deleted."""
        folder, name = self._split(relative)
        parent = self._dir(folder, create=False)
        if parent is None:
            return False
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if not stat.S_ISREG(info.st_mode):
            return False
        os.unlink(name, dir_fd=parent)
        return True

    def names(self, folder: str) -> list[str]:
        """Entries of a sub-folder (none if it is missing)."""
        fd = self._dir(tuple(folder.split("/")) if folder else (), create=False)
        return [] if fd is None else os.listdir(fd)

    def clean_temp(self, folder: str) -> None:
        """Temp files an interrupted write left behind."""
        for name in self.names(folder):
            if name.startswith(".") and name.endswith(TEMP_SUFFIX):
                self.remove(f"{folder}/{name}" if folder else name)


# -- names --------------------------------------------------------------------------------------------
def clip_bytes(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, never mid-character nor before a combining mark."""
    if len(text.encode("utf-8")) <= limit:
        return text
    out, size = [], 0
    for ch in text:
        size += len(ch.encode("utf-8"))
        if size > limit:
            break
        out.append(ch)
    while out and unicodedata.combining(text[len(out)]):  # the cut fell before an accent: take its base too
        out.pop()
    return "".join(out)


def portable_name(name: str, taken: set[str], fallback: str = "entity") -> str:
    """A file name (without .md) that every system and Obsidian can hold, unique (ignoring case and
    Unicode form) among `taken`, which it joins."""
    base = _INVISIBLE.sub("", unicodedata.normalize("NFC", name))
    base = _UNSAFE.sub(" ", base)
    base = re.sub(r"\s+", " ", base).strip(" .")
    base = clip_bytes(base, NAME_BYTES).rstrip(" .") or fallback
    first, dot, rest = base.partition(".")
    if _RESERVED.fullmatch(first.rstrip(" ")):  # `CON`, `nul.txt`: device names on Windows, whatever follows
        base = f"{first.rstrip(' ')}_{dot}{rest}"
    candidate, n = base, 2
    while name_key(candidate) in taken:
        candidate, n = f"{base} ({n})", n + 1
    taken.add(name_key(candidate))
    return candidate


def name_key(name: str) -> str:
    """What two file names that one file system (macOS, Windows) takes as one file share."""
    return unicodedata.normalize("NFC", name).casefold()
