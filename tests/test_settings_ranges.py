"""Every numeric setting has a range, declared with it (`ranged(default, low, high)` in core/config.py),
and a value outside it, or of the wrong type, is one line at load time naming the setting, the value,
the range and where it was set (issue 37: a negative link cap was accepted and silently dropped links)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from zettel_amem.core.config import RANGES, Range, Settings, checked
from zettel_amem.core.errors import InvalidInput

NUMERIC = ("int", "float", "int | None", "float | None")


def _write(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _refused(home: Path, text: str) -> str:
    path = _write(home, text)
    with pytest.raises(InvalidInput) as info:
        Settings.load(home)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_every_numeric_setting_declares_a_range_that_holds_its_default():
    numeric = [f for f in fields(Settings) if f.type in NUMERIC]
    assert len(numeric) > 30
    missing = [f.name for f in numeric if not isinstance(f.metadata.get("range"), Range)]
    assert missing == [], f"declare these with ranged(default, low, high): {missing}"
    assert set(RANGES) == {f.name for f in numeric}
    for f in numeric:
        assert f.default is None or f.default in RANGES[f.name], (f.name, f.default, RANGES[f.name])
        assert RANGES[f.name].low < RANGES[f.name].high


def test_a_negative_link_cap_is_one_line_naming_setting_value_range_and_file(zk_home):
    path = _write(zk_home, "[memory]\nmax_links = -1\n")
    with pytest.raises(InvalidInput) as info:
        Settings.load(zk_home)
    assert str(info.value) == f"setting max_links = -1 in {path}: must be between 0 and 50"


@pytest.mark.parametrize("text, expected", [
    ("search_k = 0\n", "setting search_k = 0 in {path}: must be between 1 and 1000"),
    ("[memory]\nmax_tags = 2.5\n", "setting max_tags = 2.5 in {path}: must be a whole number between 0 and 50"),
    ("max_links = 5.0\n", "setting max_links = 5.0 in {path}: must be a whole number between 0 and 50"),
    ('search_k = "8"\n', 'setting search_k = "8" in {path}: must be a whole number between 1 and 1000'),
    ("search_k = true\n", "setting search_k = true in {path}: must be a whole number between 1 and 1000"),
    ("link_min_similarity = 1.5\n", "setting link_min_similarity = 1.5 in {path}: must be between -1 and 1"),
    ("context_min_score = -0.1\n", "setting context_min_score = -0.1 in {path}: must be between 0 and 1"),
    ("answer_attribution_margin = 1.2\n",
     "setting answer_attribution_margin = 1.2 in {path}: must be between 0 and 1"),
    ("search_session_near = nan\n", "setting search_session_near = nan in {path}: must be between 0 and 1"),
    ("search_enrichment_weight = inf\n",
     "setting search_enrichment_weight = inf in {path}: must be between 0 and 10"),
    ("context_budget_tokens = -700\n",
     "setting context_budget_tokens = -700 in {path}: must be between 0 and 1000000"),
    ("[llm]\ntimeout = 0\n", "setting llm.timeout = 0 in {path}: must be between 1 and 3600"),
    ("[llm]\njobs = 0\n", "setting llm.jobs = 0 in {path}: must be between 1 and 64"),
    ('[llm]\nretries = "2"\n', 'setting llm.retries = "2" in {path}: must be a whole number between 0 and 10'),
    # Issue #53 C6: a word a choice setting does not take silently meant its default.
    ('[memory]\njournal_session = "century"\n',
     'setting journal_session = "century" in {path}: must be "week" or "day"'),
    ('journal_session = "Day"\n', 'setting journal_session = "Day" in {path}: must be "week" or "day"'),
    ('journal_session = "주"\n', 'setting journal_session = "주" in {path}: must be "week" or "day"'),
    ('graph_support = "paragraph"\n', 'setting graph_support = "paragraph" in {path}: must be "sentence" or "entry"'),
])
def test_a_bad_value_is_one_line(zk_home, text, expected):
    assert _refused(zk_home, text) == expected.format(path=zk_home / "config.toml")


def test_the_user_config_dir_file_is_named_when_it_is_the_bad_one(zk_home):
    from zettel_amem.core.config import config_dir

    user = config_dir() / "config.toml"
    user.write_text("[memory]\nevolve_max_neighbours = -2\n", encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        Settings.load(zk_home)
    assert str(info.value) == f"setting evolve_max_neighbours = -2 in {user}: must be between 0 and 50"


def test_the_environment_block_size_is_checked_and_named(zk_home, monkeypatch):
    from zettel_amem.core.errors import ZkError

    monkeypatch.setenv("ZK_STORE_BLOCK_SIZE", "1KiB")
    with pytest.raises(ZkError, match=r"^ZK_STORE_BLOCK_SIZE must be a size from 4KiB to 64MiB"):
        Settings.load(zk_home)
    with pytest.raises(InvalidInput, match=r"^setting store_block_size = 1024 in the environment "
                                           r"\(ZK_STORE_BLOCK_SIZE\): must be between 4096 and 67108864$"):
        checked("store_block_size", 1024, "in the environment (ZK_STORE_BLOCK_SIZE)")


def test_a_good_file_loads_with_every_end_of_the_ranges(zk_home):
    _write(zk_home, "max_links = 0\nsearch_k = 1\nlink_min_similarity = -1\ncontext_budget_tokens = 0\n"
                    "[memory]\nmax_tags = 50\ncontext_min_score = 1\nsearch_enrichment_weight = 0\n"
                    "answer_attribution_margin = 1.0\nsearch_session_near = 0.5\nsearch_session_far = 0.25\n"
                    "[llm]\ntimeout = 1\nretries = 0\njobs = 8\n")
    settings = Settings.load(zk_home)
    assert (settings.max_links, settings.search_k, settings.max_tags, settings.context_budget_tokens) == (0, 1, 50, 0)
    assert settings.link_min_similarity == -1.0 and isinstance(settings.link_min_similarity, float)
    assert settings.context_min_score == 1.0 and isinstance(settings.context_min_score, float)
    assert settings.llm_timeout == 1.0 and isinstance(settings.llm_timeout, float)
    assert (settings.llm_retries, settings.llm_jobs, settings.search_session_far) == (0, 8, 0.25)


def test_the_documented_example_config_loads(zk_home):
    """The `[memory]` values docs/usage.md shows (Configuration) are all in range."""
    docs = Path(__file__).resolve().parents[1] / "docs" / "usage.md"
    block = docs.read_text(encoding="utf-8").split("## Configuration", 1)[1].split("```toml\n", 1)[1].split("```")[0]
    numeric = [line for line in block.splitlines() if line.split("=")[0].strip() in RANGES]
    assert len(numeric) >= 10
    _write(zk_home, "[memory]\n" + "\n".join(numeric) + "\n")
    settings = Settings.load(zk_home)
    assert settings.max_links == 5 and settings.link_min_similarity == 0.88


def test_the_cli_says_it_in_one_line_and_exits_non_zero(zk, zk_home):
    path = _write(zk_home, "[memory]\nmax_links = -1\n")
    code, out, err = zk("list")
    assert code == 1 and out == ""
    assert err == f"zk: error: setting max_links = -1 in {path}: must be between 0 and 50\n"


def test_each_choice_setting_takes_its_words_and_doctor_fails_on_another(zk, zk_home):
    """Issue #53 C6: `journal_session = "century"` gave weekly sessions and `zk doctor` called the config valid."""
    from zettel_amem.core.config import CHOICES

    for name, words in CHOICES.items():
        assert getattr(Settings(), name) in words, name  # the default is one of them
        for word in words:
            _write(zk_home, f'[memory]\n{name} = "{word}"\n')
            assert getattr(Settings.load(zk_home), name) == word
    path = _write(zk_home, '[memory]\njournal_session = "daily"\n')
    code, out, err = zk("add", "오늘 일기 daily entry")
    assert code == 1 and err == f'zk: error: setting journal_session = "daily" in {path}: must be "week" or "day"\n'
    code, out, _ = zk("doctor")
    assert code == 1 and "FAIL config: setting journal_session = \"daily\"" in out, out
