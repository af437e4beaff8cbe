"""What reaches the terminal: control characters and escape sequences in stored text are shown escaped,
never sent raw; `--json` stays exact. `test_5_...` is case 5 of the break-it report (issue #16)."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings

from tests.sample import TEXT_WITH_ESCAPES
from zettel_amem.memory import Memory


def test_5_terminal_escapes_are_shown_not_sent(zk, zk_home, embedder):
    memory = Memory(zk_home, embedder=embedder)
    hostile = "knee \x1b]0;pwned\x07 report \x9b2J done"
    note = memory.new_note("placeholder", "2026-03-01")
    note.content = hostile  # as an older zk or a crafted store could hold it
    note.context = "ctx \x1b[31mred"
    memory.add_notes([note])
    for args in (["list"], ["show", note.id[:8]], ["search", "knee report"]):
        code, out, err = zk(*args)
        assert code == 0, err
        assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out, args
        assert "\\x1b" in out, args
    code, out, _ = zk("show", note.id[:8], "--json")
    assert json.loads(out)["content"] == hostile  # --json stays exact


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT_WITH_ESCAPES)
def test_text_with_terminal_escapes_never_reaches_the_terminal_raw(text, zk, zk_home, embedder):
    """Stored as it is (an older zk or a crafted store), shown with its control characters escaped;
    `zk add` of the same text is stored exactly or refused in one line."""
    memory = Memory(zk_home, embedder=embedder)
    note = memory.new_note("placeholder", "2026-03-01")
    note.content = text if text.strip() else text + "x"
    memory.add_notes([note])
    for args in (["list"], ["show", note.id[:12]], ["search", "placeholder " + note.content[:20]]):
        out = zk(*args, check=True).stdout
        assert not any(ch in out for ch in "\x1b\x07\x08\x9b\x7f\x85"), (args, out)
    assert zk("show", note.id[:12], "--json", check=True).json()["content"] == note.content  # --json stays exact
    memory.store.delete([note.id])


def test_18_note_text_is_printed_as_typed_in_every_human_output(tmp_path):
    """Issue #28 item 18: Rich emoji codes and markup in a note are printed literally (real subprocesses)."""
    from tests import harness

    env = harness.zk_env(tmp_path / "home")
    typed = "Press :x: to close, ratio 1:smile:2, [bold]not bold[/bold] and [link=http://x]y[/link]"
    added = json.loads(harness.run("add", typed, "--json", env=env, check=True).stdout)
    for args in (["list"], ["show", added["id"][:8]], ["search", "close ratio"], ["on", "today"]):
        out = harness.run(*args, env=env, check=True).stdout
        flat = " ".join(out.replace("│", " ").split())  # `search` prints a table that may wrap the text
        assert all(piece in flat for piece in ("Press :x: to", "1:smile:2", "[bold]not", "[/bold]")), (args, out)
        assert "❌" not in out and "😄" not in out, args


def test_windows_line_ends_are_stored_as_lf_and_never_shown_as_escapes(zk, zk_home, embedder, tmp_path, monkeypatch):
    """Issue #53 C2: a note written on Windows showed a literal `\\r` at every line end in `zk show`. Typed text
    (`zk add`, stdin, `zk edit`) is stored with LF; a note already stored with CR or CRLF (an older zk, a
    restored backup) keeps its bytes in --json and in a backup round trip, and is shown with plain line breaks."""
    piped = zk("add", "-", "--json", stdin="line one\r\nline two\r\n줄 셋\r\n".encode(), check=True).json()["id"]
    typed = zk("add", "무릎 상태\r\nknee is better", "--json", check=True).json()["id"]
    assert zk("show", piped, "--json", check=True).json()["content"] == "line one\nline two\n줄 셋"
    assert zk("show", typed, "--json", check=True).json()["content"] == "무릎 상태\nknee is better"
    editor = tmp_path / "crlf.sh"
    editor.write_text("#!/bin/sh\nprintf '고친 줄\\r\\nsecond line\\r\\n' > \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(editor))
    zk("edit", typed[:8], check=True)
    assert zk("show", typed, "--json", check=True).json()["content"] == "고친 줄\nsecond line"

    memory = Memory(zk_home, embedder=embedder)
    old = memory.new_note("placeholder", "2026-03-01")
    old.content = "윈도우 메모 first\r\nwindows second\r\nold mac\rthird"  # as an older zk stored it
    memory.add_notes([old])
    for args in (["show", old.id[:12]], ["list"], ["search", "윈도우 메모 windows second"]):
        out = zk(*args, check=True).stdout
        assert "\r" not in out and "\\r" not in out, (args, out)
        assert "windows second" in out, (args, out)
    assert zk("show", old.id[:12], "--json", check=True).json()["content"] == old.content
    backup = tmp_path / "backup.jsonl"
    zk("export", "-o", str(backup), check=True)
    zk("--home", str(tmp_path / "restored"), "import", str(backup), check=True)
    restored = {n.id: n.content for n in Memory(tmp_path / "restored", embedder=embedder).store.notes()}
    assert restored[old.id] == old.content  # the round trip stays byte-exact for what is stored
