"""A question's subject words in the journal's other language, by the bundled model (#26).

A Korean/English journal answers an English question from a Korean note ("What is my dog's name?" ->
"…강아지를 입양했다. 이름은 보리") only if "dog" can meet "강아지". One short grammar-bound call turns the
question's few subject terms into the other language: the output is a JSON list of exactly as many
strings, each in the target script only (Hangul, or Latin letters), so the 0.5B model can neither drift
into Chinese nor echo the prompt. On any failure the answer goes on without translations.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .llm import LLM, LLMError
from .questions import korean_stem

_SCRIPT = {"Korean": "^[\uac00-\ud7a3 ]{1,24}$", "English": "^[A-Za-z][A-Za-z .'-]{0,29}$"}
MAX_TOKENS = 80
_STOP = {"the", "a", "an", "of", "to", "my", "i", "is", "and", "or", "in", "on", "for", "do", "did"}


def translation_schema(count: int, language: str) -> dict[str, Any]:
    word = {"type": "string", "pattern": _SCRIPT[language]}
    return {"title": "translate", "type": "object",
            "properties": {"words": {"type": "array", "items": word, "minItems": count, "maxItems": count}},
            "required": ["words"]}


def usable(translation: str, language: str) -> list[str]:
    """The words of one translation worth matching: Korean stems of two syllables or more, English
    words of three letters or more (a lone "개" would match "개인")."""
    words = re.findall(r"[\uac00-\ud7a3]+|[A-Za-z][A-Za-z'-]*", translation)
    if language == "Korean":
        return [w for w in (korean_stem(w) for w in words) if len(w) >= 2]
    return [w.lower() for w in words if len(w) >= 3 and w.lower() not in _STOP]


def translate_terms(llm: LLM, terms: list[str], language: str) -> dict[str, list[str]]:
    """term -> its words in `language` ("Korean" or "English"); {} when the model fails."""
    if not terms or language not in _SCRIPT:
        return {}
    system = f"You translate words into {language}. Give the usual {language} word for each, in order."
    user = f"Words: {json.dumps(terms, ensure_ascii=False)}\nThe same words in {language}:"
    try:
        data, _usage = llm.complete_json(system, user, translation_schema(len(terms), language), MAX_TOKENS)
    except LLMError:
        return {}
    words = data.get("words") if isinstance(data.get("words"), list) else []
    out = {}
    for term, translation in zip(terms, words):
        kept = [w for w in usable(str(translation), language) if w != term]
        if kept:
            out[term] = kept
    return out
