"""Settings and prompt overrides: home > user config dir > shipped defaults."""

from __future__ import annotations

import os
from pathlib import Path

from zettel_amem.core.config import Settings, config_dir
from zettel_amem.memory import Memory


def test_config_dir_applies_and_the_home_wins(zk_home: Path) -> None:
    user = config_dir()
    assert user == Path(os.environ["ZK_CONFIG_DIR"])
    user.mkdir(parents=True, exist_ok=True)
    (user / "config.toml").write_text("[memory]\nmax_tags = 3\nmax_links = 4\n", encoding="utf-8")
    assert (Settings.load(zk_home).max_tags, Settings.load(zk_home).max_links) == (3, 4)
    zk_home.mkdir(parents=True, exist_ok=True)
    (zk_home / "config.toml").write_text("[memory]\nmax_tags = 2\n", encoding="utf-8")
    settings = Settings.load(zk_home)
    assert (settings.max_tags, settings.max_links) == (2, 4)


def test_prompt_overrides_from_home_then_config_dir(zk_home: Path, fake_llm, embedder) -> None:
    memory = Memory(zk_home, llm=fake_llm, embedder=embedder)
    shipped = memory.prompts.raw("answer_system")
    (config_dir() / "templates").mkdir(parents=True, exist_ok=True)
    (config_dir() / "templates" / "answer_system.txt").write_text("Answer in one word.", encoding="utf-8")
    (config_dir() / "templates" / "answer.txt").write_text("Q: $question\n$notes", encoding="utf-8")
    (zk_home / "templates").mkdir(parents=True, exist_ok=True)
    (zk_home / "templates" / "answer.txt").write_text("Question: $question\nNotes:\n$notes", encoding="utf-8")
    memory = Memory(zk_home, llm=fake_llm, embedder=embedder)
    assert memory.prompts.raw("answer_system") == "Answer in one word." != shipped
    assert memory.prompts.render("answer", question="knee?", notes="- a", today="", memory="") == \
        "Question: knee?\nNotes:\n- a"
