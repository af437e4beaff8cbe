"""The link call's token budget holds the longest reply its grammar allows (amem/link.py). A flat 160
tokens cut a long Korean entry's reply inside its update, and the note stayed pending on every retry
(the call is deterministic): seen on bench/diary_long.py's build. Counted with the bundled model's own
tokenizer (vocabulary only: no weights are run)."""

from __future__ import annotations

import json

import pytest

from zettel_amem.amem.construct import MAX_TAG_CHARS
from zettel_amem.amem.link import LATER_CHARS, link_max_tokens
from zettel_amem.core.config import Settings

pytestmark = pytest.mark.embedder  # loads a model file (its vocabulary), like the embedder tests


def longest_reply(settings: Settings, text: str) -> str:
    """The longest object link_schema allows: every list full, every string at its cap, in `text`'s script."""
    ids = [f"{i:08x}" for i in range(min(settings.max_new_links, settings.max_links))]
    context = (text * 100)[:min(LATER_CHARS, settings.max_context_chars)]
    tag = (text * 10)[:MAX_TAG_CHARS]
    updates = [{"id": "0000000a", "later": context, "tags": [tag, tag]}
               for _ in range(settings.evolve_max_neighbours)]
    return json.dumps({"links": ids, "replaces": ["0000000b"], "updates": updates}, ensure_ascii=False)


@pytest.fixture(scope="module")
def tokenizer():
    from llama_cpp import Llama

    from zettel_amem.backends.llm.bundled import qwen_path

    return Llama(model_path=str(qwen_path()), vocab_only=True, verbose=False)


@pytest.mark.parametrize("neighbours", [1, 2, 3])
@pytest.mark.parametrize("text", ["한국어로 쓴 일기의 맥락 문장", "An evolved context in English words ",
                                  "東京で書いた日記の文脈"])
def test_the_longest_reply_fits(tokenizer, neighbours, text):
    settings = Settings()
    settings.evolve_max_neighbours = neighbours
    reply = longest_reply(settings, text)
    tokens = len(tokenizer.tokenize(reply.encode(), add_bos=False))
    assert tokens <= link_max_tokens(settings), (tokens, link_max_tokens(settings), reply)


def test_the_old_flat_budget_did_not_fit(tokenizer):
    tokens = len(tokenizer.tokenize(longest_reply(Settings(), "한국어로 쓴 일기의 맥락 문장").encode(), add_bos=False))
    assert tokens > 160
