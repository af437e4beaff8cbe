"""Shell completion: `zk completion SHELL`, `zk --install-completion`, and note ids completed from the store
(through the same environment protocol the installed scripts use)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests import harness
from zettel_amem.memory import Memory


def zk(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return harness.run(*args, env=harness.zk_env() | (env or {}), timeout=120)


def complete_bash(words: str, home, **env) -> list[str]:
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    done = zk(env={"ZK_HOME": str(home), "COMP_WORDS": words, "COMP_CWORD": str(cword),
                   "_ZK_COMPLETE": "complete_bash", **env})
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout.split()


@pytest.fixture
def journal(zk_home, embedder):
    memory = Memory(zk_home, embedder=embedder)
    notes = [memory.add(text, at) for text, at in [("첫 메모 #테스트", "2026-03-01"), ("second note", "2026-03-02")]]
    work = Memory(zk_home, embedder=embedder, notebook="work")
    return notes, work.add("a work note", "2026-03-03")


def test_note_ids_complete_from_the_store(zk_home, journal):
    (first, second), work_note = journal
    assert sorted(complete_bash("zk show ", zk_home)) == sorted([first.id[:8], second.id[:8]])
    for command in ("edit", "rm", "history", "revert", "links", "expand"):
        assert complete_bash(f"zk {command} {first.id[:3]}", zk_home) == [first.id[:8]]
    assert complete_bash(f"zk -n work show {work_note.id[:2]}", zk_home) == [work_note.id[:8]]  # its notebook
    assert work_note.id[:8] not in complete_bash(f"zk show {work_note.id[:2]}", zk_home)  # not from "main"
    assert complete_bash("zk show zz", zk_home) == []
    assert "tags" in complete_bash("zk ta", zk_home) and "completion" in complete_bash("zk comp", zk_home)


def test_completion_never_fails_loudly_without_a_store(tmp_path):
    assert complete_bash("zk show ", tmp_path / "nothing-here") == []


def test_completion_scripts_for_each_shell():
    bash = zk("completion", "bash")
    assert bash.returncode == 0 and "_ZK_COMPLETE=complete_bash" in bash.stdout and "complete " in bash.stdout
    zsh = zk("completion", "zsh")
    assert zsh.returncode == 0 and "#compdef zk" in zsh.stdout
    fish = zk("completion", "fish")
    assert fish.returncode == 0 and "complete --command zk" in fish.stdout
    bad = zk("completion", "tcsh")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "unknown shell" in bad.stderr


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_install_completion_for_bash(tmp_path):
    # "; exit $?" keeps bash as the parent process (a lone command is exec'd), so the shell is detectable.
    done = subprocess.run(["bash", "-c", " ".join(harness.zk_command("--install-completion")) + "; exit $?"],
                          capture_output=True, text=True, timeout=120,
                          env=harness.zk_env(HOME=str(tmp_path), SHELL="/bin/bash"))
    assert done.returncode == 0, done.stderr
    script = tmp_path / ".bash_completions" / "zk.sh"
    assert "_ZK_COMPLETE=complete_bash" in script.read_text()
    assert f"source '{script}'" in (tmp_path / ".bashrc").read_text()
