"""Text helpers shared by every layer: character-safe cuts, token estimates, trivial-message checks.

Python strings index by code point, so slicing never splits a UTF-8 sequence; the helpers here
also avoid leaving a dangling combining mark or a half emoji sequence at the cut.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

ELLIPSIS = "…"

# Words that carry no memory worth an LLM call (English and Korean chat fillers).
_TRIVIAL = {
    "ok", "okay", "k", "kk", "yes", "no", "yep", "nope", "yeah", "sure", "thanks", "thank you", "thx",
    "ty", "lol", "haha", "hmm", "hm", "hi", "hello", "hey", "bye", "cool", "nice", "great", "got it",
    "good", "fine", "right", "alright", "oh", "ah", "wow",
    "ㅇㅋ", "ㅇㅇ", "응", "네", "넵", "예", "아니", "아니요", "고마워", "고마워요", "감사", "감사합니다",
    "ㄱㅅ", "ㅋㅋ", "ㅋㅋㅋ", "ㅎㅎ", "ㅎㅎㅎ", "ㅠㅠ", "ㅜㅜ", "안녕", "안녕하세요", "좋아", "좋아요", "알겠어",
    "알겠습니다", "그래", "오케이", "굿", "헐", "와", "하하", "히히", "호호", "헤헤", "hehe", "hihi",
}
_PUNCT_OR_SPACE = re.compile(r"[\s\W_]+", re.UNICODE)
_REPEATED = re.compile(r"(\D)\1+|(\D{2})\2{2,}")  # "ㅋㅋ", "zzz"; "hahaha", "하하하" (not "mama", "coco")
_WS = re.compile(r"\s+")
_CR_BEFORE_LF = re.compile(r"\r+\n")
# Words that say a value changed ("moved", "switched", "이제", "바꿨다"), or that it was taken up again ("다시"):
# "now" answers follow a later note with one of them (journal_answer.py).
CHANGE_CUE = re.compile(r"바뀌|바꿨|옮겼|옮기|이사|대신|그만|끊|다시|이제|\b(moved|migrated|replaced|switched|"
                        r"instead|stopped|quit|again|no longer|from \S+ to)\b", re.I)
# What says, at write time, that a sentence states a new value (supersede.py): the change words without
# "다시" / "again" (those mostly repeat what stays the same: "went to the gym again"), and more or less of
# something ("늘렸다", "up from"), a time that starts a new state ("10월부터", "from next term"; an hour
# with 부터 is a range: "9시부터").
# "이제" alone is "now" ("이제 막", "이제 다 안다"), as English "now" is no cue; "이제는", "이제부터" set a new state
# against the old one (#60: on the long diary three of eight typed links stood on a bare "이제").
VALUE_CHANGE_CUE = re.compile(r"바뀌|바꿨|옮겼|옮기|이사|대신|그만|끊|이제는|이제부터|늘렸|줄였|올렸|내렸|"
                              r"(이번|다음|지난|올해|내년|\d+\s?월)\s?(주|달|학기|해)?부터|"
                              r"\b(moved|migrated|replaced|switched|instead|stopped|quit|no longer|from \S+ to|"
                              r"(from|starting) (next|this) \w+|down from|up from)\b", re.I)


def clip(text: str, max_chars: int, ellipsis: str = ELLIPSIS) -> str:
    """Cut `text` to at most `max_chars` characters (ellipsis included), never mid-character."""
    if max_chars <= 0:
        return ""
    if len(text) <= max_chars:
        return text
    keep = max_chars - len(ellipsis)
    if keep <= 0:
        return text[:max_chars]
    # Move the cut back while the next character still belongs to the previous one (a combining
    # mark, a zero-width joiner or a variation selector), so no base loses its accent or emoji part.
    while keep > 0 and (_joins_previous(text[keep]) or text[keep - 1] == "\u200d"):
        keep -= 1
    return text[:keep].rstrip() + ellipsis


# Where a phrase ends inside a sentence: a comma, semicolon, colon or dash, or a Korean word ending a clause
# ("늦어서", "샀는데", "좋지만", "먹고") before the next word.
_SENTENCE_END = re.compile(r"[.!?。？！][\"'’”)]*(?=\s)")
# a comma or colon between digits is inside a number ("1,100,000", "3:30"), not the end of a phrase
_PHRASE_END = re.compile(r"(?<!\d)[,;:，]|[,;:，](?!\d)|\s[-–—]|[가-힣](?:서|는데|지만|면서|니까|고)(?=\s)")


def clip_phrase(text: str, max_chars: int, cut_short: bool = False) -> str:
    """Cut `text` to at most `max_chars` at the end of its last whole sentence, else of its last phrase, else
    of its last whole word (with an ellipsis), never mid-word: a description cut at "나랑 같" or "the race
    i" says something its note does not. A cut keeping under 40 % of the room falls back to the next kind.
    `cut_short`: `text` itself ran into a cap (a grammar's), so it ends mid-phrase unless a sentence ends it."""
    if len(text) <= max_chars and not (cut_short and not re.search(r"[.!?。？！][\"'’”)]*\s*$", text)):
        return text
    room = text[: max_chars + 1] + " " if len(text) > max_chars else text
    least = max(1, int(0.4 * max_chars))
    ends = [m.end() for m in _SENTENCE_END.finditer(room) if least <= m.end() <= max_chars]
    if ends:
        return room[: ends[-1]].rstrip()
    keep = min(max_chars, len(text)) - len(ELLIPSIS)
    phrases = [m.end() for m in _PHRASE_END.finditer(room) if least <= m.end() <= keep]
    spaces = [m.start() for m in re.finditer(r"\s", room) if least <= m.start() <= keep]
    cut = phrases[-1] if phrases else spaces[-1] if spaces else None
    if cut is None:
        return clip(text, max_chars)
    return room[:cut].rstrip(" ,;:，-–—") + ELLIPSIS


def phrases(text: str) -> list[str]:
    """`text` cut after each sentence end and each phrase end (`clip_phrase`'s), the pieces as written."""
    cuts = sorted({m.end() for pattern in (_SENTENCE_END, _PHRASE_END) for m in pattern.finditer(text)})
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if text[a:b].strip()]


def _joins_previous(ch: str) -> bool:
    # Combining marks, joiners, variation selectors, and the vowel/final jamo of decomposed (NFD)
    # Hangul, which belong to the syllable their initial consonant starts.
    return (bool(unicodedata.combining(ch)) or ch in "\u200d\ufe0e\ufe0f"
            or "\u1160" <= ch <= "\u11ff" or "\ud7b0" <= ch <= "\ud7ff")


def nfc(text: str) -> str:
    """Composed form for matching and identity: decomposed Hangul (from some macOS sources) and
    precomposed text must find and deduplicate each other. Stored content itself stays as written."""
    return unicodedata.normalize("NFC", text)


def clip_end(text: str, max_chars: int) -> str:
    """Keep the newest (last) `max_chars` characters, never starting on a combining mark."""
    if len(text) <= max_chars:
        return text
    cut = text[-max_chars:] if max_chars > 0 else ""
    while cut and _joins_previous(cut[0]):
        cut = cut[1:]
    return cut


def one_line(text: str, max_chars: int | None = None) -> str:
    """Collapse whitespace for previews, then clip."""
    flat = _WS.sub(" ", text).strip()
    return clip(flat, max_chars) if max_chars else flat


def is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0xAC00 <= code <= 0xD7A3  # Hangul syllables
        or 0x1100 <= code <= 0x11FF  # Hangul jamo
        or 0x3130 <= code <= 0x318F  # Hangul compatibility jamo
        or 0x4E00 <= code <= 0x9FFF  # CJK ideographs
        or 0x3040 <= code <= 0x30FF  # kana
    )


def estimate_tokens(text: str) -> int:
    """Cheap token estimate for budgets: ~1 token per CJK/Hangul character, ~4 chars per token otherwise.

    Budgets only need to be roughly right and must not load a tokenizer on the search path.
    """
    cjk = sum(1 for ch in text if is_cjk(ch))
    return cjk + (len(text) - cjk + 3) // 4


def is_trivial(text: str) -> bool:
    """True for acknowledgements, greetings and emoji-only messages that hold nothing to remember."""
    stripped = text.strip().lower()
    if not stripped:
        return True
    words = _PUNCT_OR_SPACE.sub(" ", stripped).strip()
    if not words:  # only punctuation / emoji
        return True
    if words in _TRIVIAL:
        return True
    # Repeated filler like "ㅋㅋㅋㅋ", "hahaha", "하하하", or bare jamo ("ㅠ"). Not short words:
    # "지수", "감기", "DB" or "mama" are names and topics.
    compact = words.replace(" ", "")
    if len(compact) <= 12 and (_REPEATED.fullmatch(compact) or all("\u3131" <= ch <= "\u318e" for ch in compact)):
        return True
    return False


def has_control_chars(text: str) -> bool:
    """Control characters other than tab/newline/CR (NUL included) that a note should not contain."""
    return any(unicodedata.category(ch) == "Cc" and ch not in "\t\n\r" for ch in text)


def visible(text: str) -> str:
    """Control characters (ESC, BEL, C1 controls such as CSI; not newline or tab) shown as `\\x1b`,
    so text from a note or a log can never drive the terminal (set its title, move the cursor, …).
    A Windows (CRLF) or old Mac (CR) line end is shown as the line break it is, never as `\\r`."""
    if not any(unicodedata.category(ch) == "Cc" and ch not in "\t\n" for ch in text):
        return text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return "".join(ch.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(ch) == "Cc" and ch not in "\t\n" else ch for ch in text)


def unix_line_ends(text: str) -> str:
    """Typed or pasted text with Windows line ends (CRLF, or CR CR LF from a twice-converted file) as the
    LF every other note has. A lone CR is kept: it is rare, and what it meant is not known."""
    return _CR_BEFORE_LF.sub("\n", text)


# Characters that show nothing on their own though they are not whitespace: the Hangul fillers (U+3164
# is the well-known "blank" among Korean users), the Braille blank, the combining grapheme joiner, the
# Khmer inherent vowels and the variation selectors. Format characters (category Cf: zero-width spaces
# and joiners, bidi marks, embeddings, overrides and isolates, U+FEFF, the soft hyphen) are found by category.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f")
_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))


def _shows_nothing(ch: str) -> bool:
    if ch.isspace() or ch in _INVISIBLE or unicodedata.category(ch) == "Cf":
        return True
    return any(low <= ord(ch) <= high for low, high in _SELECTORS)


def is_blank(text: str) -> bool:
    """Nothing visible: only whitespace (NBSP and EM SPACE included), format characters and blank fillers.
    Such a note is empty; text with anything visible keeps these characters exactly as written."""
    return all(_shows_nothing(ch) for ch in text)


def has_lone_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


# -- names: the keys entity deduplication compares ------------------------------------------------------
_NAME_DROP = re.compile(r"[\s\W_]+", re.UNICODE)
_INITIALS = ["g", "kk", "n", "d", "tt", "r", "m", "b", "pp", "s", "ss", "", "j", "jj", "ch", "k", "t", "p", "h"]
_MEDIALS = ["a", "ae", "ya", "yae", "eo", "e", "yeo", "ye", "o", "wa", "wae", "oe", "yo", "u", "wo", "we", "wi",
            "yu", "eu", "ui", "i"]
_FINALS = ["", "k", "k", "k", "n", "n", "n", "t", "l", "k", "m", "l", "l", "l", "p", "l", "m", "p", "p", "t", "t",
           "ng", "t", "t", "k", "t", "p", "t"]


def name_key(name: str) -> str:
    """A name with case, width, spacing and punctuation removed: "온 비서" and "온비서" share a key."""
    return _NAME_DROP.sub("", unicodedata.normalize("NFKC", name).lower())


def romanise(text: str) -> str:
    """Hangul syllables in Revised Romanization (per syllable, no sound-change rules): 온비서 -> onbiseo.

    Good enough to match a Korean name with its usual Latin spelling, which is all dedup asks of it."""
    out = []
    for ch in text:
        code = ord(ch) - 0xAC00
        if 0 <= code < 11172:
            out.append(_INITIALS[code // 588] + _MEDIALS[(code % 588) // 28] + _FINALS[code % 28])
        else:
            out.append(ch)
    return "".join(out)


# Titles and honorifics around a name: "준호 씨" is Junho, "Dr. Han" is 한 원장님's Han.
_TITLES = re.compile(r"^(?:mr|mrs|ms|miss|dr|prof)\.?\s+|\s*(?:씨|님|선생님|원장님|사장님|팀장님|교수님)$", re.I)
# Sounds that romanisations of Korean names spell either way: Kim / 김 (gim), Chanho / 찬호 (chanho, janho).
_SOUNDS = (("eo", "u"), ("oo", "u"), ("ou", "u"), ("wu", "u"), ("ee", "i"), ("ae", "e"), ("ch", "j"), ("sh", "s"),
           ("k", "g"), ("t", "d"), ("p", "b"), ("l", "r"), ("c", "g"))


def sound_key(name: str) -> str:
    """A name's key as it sounds: title and honorific dropped, Hangul romanised, and the letters that
    romanisations spell either way made one ("김민수 씨" and "Kim Minsu" -> "gimminsu")."""
    key = romanise(name_key(_TITLES.sub("", name.strip())))
    key = re.sub(r"(?<=[b-df-hj-np-tv-z])eu(?![aeiouy])", "", key)  # a loanword's added vowel: 데니스 = Denis
    for old, new in _SOUNDS:
        key = key.replace(old, new)
    return key


# A user tag: "#" at a word start, then letters/digits (any script, Hangul included) with inner "-", "_"
# or "/"; not all digits (#1 is a number, not a tag), not inside a word or URL ("a#b", "page#top").
# Markdown headings ("# Title", "## 감사한 일") have a space after the "#" and are no tags.
_HASHTAG = re.compile(r"(?<![\w#/&])#(\w(?:[\w/-]*\w)?)")


def hashtags(text: str) -> list[str]:
    """The `#tag` words of a note, in order, without "#", case-insensitive repeats dropped (first spelling
    kept, NFC). These are the user's own tags, kept apart from the model's."""
    out: list[str] = []
    seen: set[str] = set()
    for match in _HASHTAG.finditer(nfc(text)):
        tag = match.group(1)
        if tag.replace("_", "").isdigit() or tag.casefold() in seen:
            continue
        seen.add(tag.casefold())
        out.append(tag)
    return out


def tag_key(tag: str) -> str:
    """How user tags compare: "#Running", "running" and "RUNNING" are one tag."""
    return nfc(tag.strip().lstrip("#")).casefold()


# -- keyword terms: what the full-text index stores and what a query is matched on ---------------------
WORD = re.compile(r"[0-9a-z]+|[\uac00-\ud7a3]+|[\u4e00-\u9fff\u3040-\u30ff]", re.IGNORECASE)
KEYWORD_STOP_WORDS = {
    "the", "a", "an", "and", "or", "of", "to", "in", "on", "at", "is", "was", "what", "how", "did", "do", "my",
    "i", "me", "with", "for", "it", "this", "that", "about", "happened", "are", "be"}


def keyword_terms(text: str, romanised: bool = False) -> list[str]:
    """Lower-cased words minus stop words; Hangul runs also as character bigrams, so "무릎" meets "무릎이"
    (and, with `romanised`, in Latin letters, so "온비서" meets "Onbiseo"). The store indexes these terms
    (space-joined, whitespace-tokenized) and a query is matched on the same terms."""
    return list(_keyword_terms(text, romanised))


@lru_cache(maxsize=16384)  # a search ranks the same passages again (`zk ask` searches twice; the server, often)
def _keyword_terms(text: str, romanised: bool) -> tuple[str, ...]:
    out: list[str] = []
    for match in WORD.finditer(nfc(text).lower()):
        word = match.group()
        if word in KEYWORD_STOP_WORDS:
            continue
        out.append(word)
        if "\uac00" <= word[0] <= "\ud7a3":
            if len(word) > 2:
                out.extend(word[i:i + 2] for i in range(len(word) - 1))
            if romanised:
                out.append(romanise(word))
    return tuple(out)


def name_candidates(text: str) -> list[str]:
    """Strings in a query that could be someone's name as a chat stores it (`Note.speaker`): each word as
    written, lower-cased and capitalised ("jon" finds "Jon"), pairs of words ("Mi Rae"), and a Hangul
    word without its particle ("지민이가" -> "지민이", "지민"). Stop words never name anyone ("Me")."""
    words = [w for w in re.findall(r"[^\W_]+", nfc(text)) if w.lower() not in KEYWORD_STOP_WORDS]
    out: dict[str, None] = {}
    for word in words:
        out.update(dict.fromkeys([word, word.lower(), word[:1].upper() + word[1:].lower()]))
        if "\uac00" <= word[0] <= "\ud7a3":
            out.update(dict.fromkeys(word[:end] for end in range(2, len(word))))
    out.update(dict.fromkeys(f"{a} {b}" for a, b in zip(words, words[1:])))
    return list(out)


# After a Hangul name: an optional "이" (지민이), title (씨, 님) and particle (가, 는, 의, 한테, ...).
_HANGUL_NAME_TAIL = (r"이?(?:씨|님)?(?:가|는|은|을|를|의|에게|한테|께서|께|와|과|랑|하고|도|만|야|아)?"
                     r"(?![\uac00-\ud7a3])")


def name_pattern(name: str) -> str:
    """A regex for `name` as a word of a question: "Jon" and "Jon's", "지민" and "지민이가", "지민씨는"."""
    tail = _HANGUL_NAME_TAIL if name and "\uac00" <= name[-1] <= "\ud7a3" else r"(?:['’]s)?(?!\w)"
    return rf"(?<!\w){re.escape(nfc(name))}{tail}"


_SENTENCE_BREAK = re.compile(r"(?<=[.!?。？])\s+|\n+")


def sentences(text: str) -> list[str]:
    """`text` cut after each sentence's end mark (. ! ? 。 ？) and at line breaks; empty pieces dropped."""
    return [s for s in _SENTENCE_BREAK.split(text) if s.strip()]


def statements(text: str) -> str:
    """`text` without its questions (sentences ending in "?"). In a chat, "What got you into running?"
    says nothing about the one who asks it."""
    return " ".join(s for s in sentences(text) if not s.rstrip(" \"'’”)").endswith(("?", "？")))
