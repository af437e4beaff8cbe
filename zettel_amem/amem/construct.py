"""Note construction (A-MEM §3.1): the LLM adds keywords, tags and a one-sentence context.

One call per note, output constrained by a JSON schema, every cap enforced again in code because
a grammar bounds length but not sense (duplicates, blanks, a context that is cut mid-word), and every field
checked against the note's own words (grounded.py): what does not hold is not stored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backends.llm import LLM
from ..core.config import Settings
from ..core.models import Note, Usage
from ..core.passages import nearness
from ..core.prompts import Prompts, language_of
from ..core.relative_dates import dated_phrases
from ..core.text import clip, clip_phrase, one_line
from .grounded import check_construction, extractive_context

# Model-facing limits: tighter than the stored caps, to keep completion tokens (the dear ones) low.
MAX_KEYWORD_CHARS = 24
MAX_TAG_CHARS = 20
MODEL_CONTEXT_CHARS = 100  # what the model may write; the stored cap (max_context_chars) is larger
PROMPT_CONTENT_CHARS = 600  # a long note is annotated from its beginning; the note itself is kept whole
# Room for the longest object the grammar allows: 4 keywords, 3 tags and a 100-character context are ~260
# characters, and Hangul costs Qwen about a token a character, so 120 tokens cut long Korean entries'
# objects mid-string ("model output was not complete JSON"). Only tokens generated are paid for.
ANNOTATE_MAX_TOKENS = 320


@dataclass
class Annotation:
    keywords: list[str]
    tags: list[str]
    context: str
    refused: dict[str, int] = field(default_factory=dict)  # what the grounded contract did not keep, by field


# Characters a JSON string may hold, minus scripts the note is not written in: a small Qwen drifts into
# Chinese on Korean input, and a 135M model copies the Korean example into English notes. The grammar
# makes both impossible instead of filtering afterwards.
_NOT_CJK = '"\\\\\u3040-\u30ff\u3400-\u9fff'
_NOT_HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3"
_CHAR = {"Korean": f"[^{_NOT_CJK}]", "English": f"[^{_NOT_CJK}{_NOT_HANGUL}]",
         "Korean or English, as each turn is written": f"[^{_NOT_CJK}]"}
_FIRST = {"Korean": "[가-힣]", "English": "[A-Za-z0-9]"}


def text_schema(max_chars: int, language: str, sentence: bool = False) -> dict[str, Any]:
    """A string of at most `max_chars` in the note's script; a sentence must *start* in that script."""
    char = _CHAR.get(language, '[^"\\\\]')  # other languages: any character the JSON string allows
    first = _FIRST.get(language) if sentence else None
    if first is None:
        return {"type": "string", "pattern": f"^{char}{{1,{max_chars}}}$"}
    return {"type": "string", "pattern": f"^{first}{char}{{0,{max_chars - 1}}}$"}


def annotate_schema(settings: Settings, language: str = "English") -> dict[str, Any]:
    return {
        "title": "annotate",
        "type": "object",
        "properties": {
            "keywords": {"type": "array", "items": text_schema(MAX_KEYWORD_CHARS, language),
                         "maxItems": min(4, settings.max_keywords)},
            "tags": {"type": "array", "items": text_schema(MAX_TAG_CHARS, language),
                     "maxItems": min(3, settings.max_tags)},
            "context": text_schema(min(MODEL_CONTEXT_CHARS, settings.max_context_chars), language, sentence=True),
        },
        "required": ["keywords", "tags", "context"],
    }


def clean_terms(values: Any, max_items: int, max_chars: int) -> list[str]:
    """Strip, drop blanks and case-insensitive repeats, clip, cap the count."""
    out: list[str] = []
    seen: set[str] = set()
    for value in values if isinstance(values, list) else []:
        if not isinstance(value, str):
            continue
        term = clip(one_line(value).strip(" #,.;:"), max_chars, ellipsis="")
        if term and term.lower() not in seen:
            seen.add(term.lower())
            out.append(term)
        if len(out) >= max_items:
            break
    return out


def clean_context(value: Any, max_chars: int) -> str:
    return clip_phrase(one_line(value), max_chars) if isinstance(value, str) else ""


def clean_annotation(data: dict[str, Any], settings: Settings) -> Annotation:
    return Annotation(
        keywords=clean_terms(data.get("keywords"), settings.max_keywords, MAX_KEYWORD_CHARS),
        tags=clean_terms(data.get("tags"), settings.max_tags, MAX_TAG_CHARS),
        context=clean_context(data.get("context"), settings.max_context_chars),
    )


def annotate(llm: LLM, prompts: Prompts, note: Note, settings: Settings) -> tuple[Annotation, Usage]:
    language = language_of(note.content)
    user = prompts.render("annotate", at=note.at.replace("T", " ")[:16], language=language,
                          content=clip(note.content, PROMPT_CONTENT_CHARS))
    data, usage = llm.complete_json(prompts.raw("notes_system").strip(), user,
                                    annotate_schema(settings, language), max_tokens=ANNOTATE_MAX_TOKENS)
    return with_dates(grounded(clean_annotation(data, settings), note, settings), note, settings), usage


def grounded(annotation: Annotation, note: Note, settings: Settings) -> Annotation:
    """The annotation's fields that are true of the note (grounded.py); an extractive context in place of a
    model's context that is not."""
    cap = min(MODEL_CONTEXT_CHARS, settings.max_context_chars)
    # A context that ran into the grammar's cap ends mid-phrase ("…우리 동네에 같"): cut back to a phrase.
    context = clip_phrase(annotation.context, cap, cut_short=len(annotation.context) >= cap - 1)
    checked = check_construction(note.content, note.at, context, annotation.keywords, annotation.tags, cap)
    return Annotation(checked.keywords, checked.tags, checked.context, checked.counts())


def nearest_its_own(annotation: Annotation, note: Note, settings: Settings, embed: Callable[[list[str]], Any],
                    nearest_other: Callable[[list[float], set[str]], float]) -> Annotation:
    """The annotation, its context replaced by the note's extractive one (with its dates) when another note is
    nearer (cosine: raw words or one passage) the context than the note is: a context in the note's own words
    can still read as another entry (a page's line on a wedding, beside the entry about that wedding), and
    search ranks it there (#60: 1 of 52 on the third diary). One embedding call, one store query."""
    if not annotation.context or note.raw_vector is None:
        return annotation
    vector = embed([annotation.context])[0].tolist()
    if nearness(vector, note) >= nearest_other(vector, {note.id}):
        return annotation
    cap = min(MODEL_CONTEXT_CHARS, settings.max_context_chars)
    refused = {**annotation.refused, "context": 1}
    return with_dates(Annotation(annotation.keywords, annotation.tags, extractive_context(note.content, cap), refused),
                      note, settings)


def with_dates(annotation: Annotation, note: Note, settings: Settings) -> Annotation:
    """Relative dates in the note, resolved from its time, end the context ("[yesterday = 7 May 2023]"),
    so a temporal question finds and answers from them. Done in code: the model's arithmetic is unreliable."""
    dated = dated_phrases(note.content, note.at)
    if dated:
        room = settings.max_context_chars - len(dated) - 3
        context = clip_phrase(annotation.context, room) if room > 20 else ""
        annotation.context = clip(f"{context} [{dated}]".strip(), settings.max_context_chars)
    return annotation
