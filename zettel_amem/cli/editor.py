"""Writing in the user's own editor: `zk add` with no text and `zk edit ID`.

The text goes to a temporary `.md` file, `$VISUAL` (else `$EDITOR`, else the first of
sensible-editor/nano/vi found) opens it, and the saved file is read back. The file is kept when the
editor fails or the text is refused, so no words typed there are lost; the error names it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..core.errors import ZkError

_FALLBACKS = ("sensible-editor", "nano", "vi")


def editor_command() -> list[str]:
    """The editor as an argument list: $VISUAL, $EDITOR (may carry options: "code --wait"), a fallback."""
    for variable in ("VISUAL", "EDITOR"):
        value = os.environ.get(variable, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError as exc:
                raise ZkError(f"cannot read ${variable} ('{value}'): {exc}") from None
    for name in _FALLBACKS:
        if shutil.which(name):
            return [name]
    raise ZkError("no editor found: set $EDITOR (e.g. export EDITOR=nano), or pass the note as text")


def edit_text(initial: str, name_hint: str = "note") -> tuple[str, Path]:
    """Open `initial` in the editor; return (the saved text, the file). The caller removes the file once
    the text is safe (`discard`); on every error here the file stays and the message names it."""
    command = editor_command()
    fd, raw_path = tempfile.mkstemp(prefix=f"zk-{name_hint}-", suffix=".md")
    path = Path(raw_path)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(initial)
    try:
        # stdin/stdout stay the terminal's: the editor runs in the foreground and owns the screen.
        code = subprocess.call([*command, str(path)])
    except FileNotFoundError:
        discard(path)
        raise ZkError(f"editor '{command[0]}' not found (check $VISUAL / $EDITOR)") from None
    except PermissionError:
        discard(path)
        raise ZkError(f"editor '{command[0]}' cannot be run (permission denied)") from None
    if code != 0:
        raise ZkError(f"editor '{command[0]}' exited with status {code}; nothing saved (your text is in {path})")
    try:
        return path.read_bytes().decode("utf-8-sig"), path
    except UnicodeDecodeError as exc:
        raise ZkError(f"the edited file is not valid UTF-8 (byte {exc.start}); your text is in {path}") from None
    except OSError as exc:
        raise ZkError(f"cannot read the edited file {path}: {exc.strerror or exc}") from None


def discard(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def same_text(a: str, b: str) -> bool:
    """Unchanged, ignoring trailing whitespace and line-ending style (editors add a final newline)."""
    def norm(text: str) -> str:
        return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").split("\n")).strip()

    return norm(a) == norm(b)
