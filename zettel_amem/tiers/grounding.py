"""Grounding: what the entity graph may store. Pure functions, no model, no store.

A small model's extraction is checked before anything is written (issue #31: most of what the 0.5B
model proposed was clauses, unsupported relations and false invalidations):
- an entity name is a short noun phrase (at most 4 words, 12 Hangul syllables; no verb or clause
  ending; Korean particles stripped) found in the source notes, and its type is one of a closed list;
- a relation's predicate maps to a small closed vocabulary (the model's wording, English or Korean, is
  mapped; anything else is dropped), and one sentence of the source holds both of its ends;
- only a *functional* predicate (one object at a time: a project's database, a person's home) lets a
  newer fact end an older one.
- a person, place or technology must be written as a name (`named_like`): capitalised where capitals are
  not forced in English, with an honorific or a person's particle in Korean ("소라 님"), a place suffix or
  a particle of place ("잠실에서"); kinship words name people;
- a right pair with a wrong predicate (the 0.5B model copies its prompt's example) gets the one predicate
  its end types and a specific cue word of the sentence allow (`rule_predicate`), and the writer's own
  facts come from first-person sentences by the same rule (`writer_relations`: "본가 다녀옴" -> 나 visited
  본가).
Whatever fails is dropped and counted (`Dropped`), so `zk stats --json` and the benchmark can show it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.text import name_key, romanise

ENTITY_TYPES = ("person", "project", "place", "organisation", "technology", "event", "other")  # closed
MAX_WORDS = 4
MAX_SYLLABLES = 12
CHECKS_FILE = "graph-checks.json"


@dataclass(frozen=True)
class Predicate:
    name: str  # the stored form ("uses database")
    ko: str  # how the Korean side says it
    functional: bool = False  # one object at a time: a newer object ends the older one
    symmetric: bool = False
    synonyms: tuple[str, ...] = ()  # model wordings that mean this predicate, subject first
    inverse: tuple[str, ...] = ()  # model wordings that mean it with the ends swapped


# The closed vocabulary. Functional ones are the facts that change over time in a personal journal.
VOCABULARY: dict[str, Predicate] = {p.name: p for p in [
    Predicate("uses database", "데이터베이스로 사용", True, synonyms=(
        "uses db", "database", "db", "데이터베이스", "db로 사용", "데이터베이스 사용", "db 사용",
        "uses database system", "has database", "database is", "db는", "migrated database to", "db를 사용")),
    Predicate("hosted on", "호스팅", True, synonyms=(
        "hosted at", "hosted by", "runs on", "deployed on", "deployed to", "hosting", "호스팅", "서버", "배포",
        "server", "server on", "hosted in", "올림")),
    Predicate("has pm", "PM", True, synonyms=("pm", "pm is", "project manager", "has project manager",
                                              "managed by", "led by", "pm은", "pm 담당", "프로젝트 매니저"),
              inverse=("pm of", "is pm of", "is pm", "project manager of", "manages", "leads", "pm을 맡음")),
    Predicate("works at", "근무", True, synonyms=("works for", "employed at", "employed by", "job at", "근무",
                                                "다님", "employee of", "works in")),
    Predicate("lives in", "거주", True, synonyms=("moved to", "moving to", "lives at", "resides in", "거주", "살다",
                                                "사는 곳", "이사", "이사함", "moves to", "home in")),
    Predicate("reports to", "팀장", True, synonyms=("team lead is", "manager is", "boss is", "팀장", "팀장은",
                                                  "has team lead", "has manager"),
              inverse=("team lead of", "manager of", "boss of")),
    Predicate("works on", "담당", synonyms=("working on", "develops", "builds", "담당", "맡음", "맡다", "개발",
                                          "works on project", "member of", "backend of", "contributes to")),
    Predicate("uses", "사용", synonyms=("using", "use", "used", "사용", "씀", "uses tool", "uses technology")),
    Predicate("owns", "소유", synonyms=("has", "bought", "adopted", "샀다", "구입", "입양", "소유", "owner of")),
    Predicate("reads", "읽음", synonyms=("reading", "read", "finished", "finished reading", "started reading", "읽음",
                                       "읽다", "읽기 시작", "읽는 중", "다 읽음")),
    Predicate("written by", "저자", synonyms=("by", "author", "author is", "저자", "작가"),
              inverse=("wrote", "author of", "writer of")),
    Predicate("recommended", "추천", synonyms=("recommends", "suggested", "suggests", "추천", "제안", "proposed",
                                             "추천함", "제안함")),
    Predicate("gave", "선물", synonyms=("gifted", "gave gift", "선물", "줬다", "선물함", "gave to")),
    Predicate("family of", "가족", symmetric=True, synonyms=(
        "family", "mother of", "father of", "parent of", "sibling of", "child of", "가족", "엄마", "아빠", "동생")),
    Predicate("friend of", "친구", symmetric=True, synonyms=("friend", "friends with", "친구")),
    Predicate("colleague of", "동료", symmetric=True, synonyms=("colleague", "coworker", "동료", "teammate",
                                                              "works with", "같은 팀")),
    Predicate("teaches", "가르침", synonyms=("tutor of", "teacher of", "가르침", "가르치다", "tutors")),
    Predicate("learns", "배움", synonyms=("learning", "studies", "studying", "배움", "공부", "배우다",
                                        "learns language")),
    Predicate("visited", "방문", synonyms=("visits", "went to", "visit", "방문", "갔다", "다녀옴", "traveled to",
                                         "travelled to", "flew to", "trip to")),
    Predicate("participates in", "참가", synonyms=("attended", "joined", "signed up for", "registered for", "참가",
                                                 "참여", "took part in", "participated in", "신청", "완주")),
    Predicate("part of", "일부", synonyms=("belongs to", "component of", "feature of", "character in", "의 일부",
                                         "소속", "is part of")),
    Predicate("located in", "위치", synonyms=("is in", "위치", "located at", "in")),
    Predicate("replaced", "대체", synonyms=("replaces", "대체", "instead of", "replaced by"),
              inverse=("replaced by",)),
]}
FUNCTIONAL = frozenset(p.name for p in VOCABULARY.values() if p.functional)

# Which entity types each end of a functional predicate may have (a database is a technology, a home is
# a place): the model's type and the predicate must agree before a fact can end another one.
DOMAINS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "uses database": (("project",), ("technology",)),
    "hosted on": (("project", "technology"), ("technology", "organisation")),
    "has pm": (("project",), ("person",)),
    "works at": (("person",), ("organisation", "place")),
    "lives in": (("person",), ("place",)),
    "reports to": (("person",), ("person",)),
    "works on": (("person",), ("project",)),
    "uses": (("person", "project"), ("technology", "project", "other")),  # never "SQLite uses DB"
    "owns": (("person",), ("technology", "other", "project")),
    "family of": (("person",), ("person",)),
    "friend of": (("person",), ("person",)),
    "colleague of": (("person",), ("person",)),
    "teaches": (("person",), ("person", "other", "technology", "event")),
    "written by": (("other", "project", "event"), ("person",)),
    "visited": (("person",), ("place", "organisation", "event")),
    "located in": (("place", "organisation", "event"), ("place",)),
    "reads": (("person",), ("other",)),
    "participates in": (("person",), ("event",)),
    "learns": (("person",), ("other", "technology")),
}

# The rule's half of "found twice": words one of which the supporting sentence must hold for the
# predicate (stems, lower case; English and Korean). A predicate without cues needs none.
CUES: dict[str, tuple[str, ...]] = {
    "uses database": ("db", "database", "데이터베이스", "migrat", "옮기", "옮겼", "시작", "use", "사용"),
    "hosted on": ("host", "호스팅", "server", "서버", "deploy", "배포", "올렸", "moved", "옮기", "옮겼"),
    "has pm": ("pm", "매니저", "manager"),
    "works at": ("work", "job", "직장", "근무", "연구소", "institute", "회사", "company", "본사", "joined"),
    "lives in": ("이사", "살", "live", "moving", "moved", "계약", "home", "집", "원룸", "투룸"),
    "reports to": ("팀장", "lead", "manager", "boss", "상사"),
    "works on": ("맡", "담당", "백엔드", "backend", "work", "pm", "데모", "demo", "launch", "개발", "develop", "ran"),
    "reads": ("read", "읽", "book", "finished", "책"),
    "written by": (" by ", "작가", "저자", "author", "wrote"),
    "recommended": ("recommend", "추천", "suggest", "제안"),
    "gave": ("gave", "줬", "주었", "선물", "gift", "lent", "빌려"),
    "family of": ("엄마", "아빠", "동생", "mom", "dad", "가족", "sister", "brother", "부모"),
    "teaches": ("과외", "lesson", "선생님", "teach", "sensei", "tutor", "수업"),
    "learns": ("learn", "배우", "공부", "lesson", "과외", "수업", "study"),
    "visited": ("visit", "went", "갔", "다녀", "방문", "flew", "trip", "놀러", "가기로", "walk", "산책"),
    "participates in": ("sign", "참가", "참여", "대회", "joined", "완주", "attend", "race", "class"),
    "replaced": ("replac", "대신", "instead", "바뀌", "바꿨", "moved", "옮기", "옮겼"),
}


# Words of change or use: they confirm a predicate the model chose, but say too little for the rule to
# choose one ("moved X to Elasticsearch" is no hosting).
GENERIC_CUES = frozenset({"moved", "moving", "옮기", "옮겼", "migrat", "시작", "use", "사용", "work", "ran",
                          "joined", "바뀌", "바꿨"})


def cue_agrees(predicate: str, sentence: str, specific: bool = False) -> bool:
    """Whether the sentence holds a cue word of the predicate (or the predicate needs none); `specific`:
    a cue that names the relation, not a word of change or use."""
    cues = CUES.get(predicate)
    if cues and specific:
        cues = tuple(c for c in cues if c not in GENERIC_CUES)
    lower = f" {sentence.lower()} "
    # An English cue starts a word ("book" is no cue in "MacBook"); a Korean one may sit inside a word.
    return not cues or any(re.search(rf"(?<![a-z]){re.escape(cue)}" if cue.isascii() else re.escape(cue), lower)
                           for cue in cues)


def _norm_predicate(text: str) -> str:
    text = re.sub(r"[_\-]+", " ", text.strip().lower())
    return re.sub(r"\s+", " ", text).strip(" .,;:")


_LOOKUP: dict[str, tuple[str, bool]] = {}
for _p in VOCABULARY.values():
    for _form in (_p.name, _p.name.replace(" ", "_"), _p.ko, *_p.synonyms):
        _LOOKUP.setdefault(_norm_predicate(_form), (_p.name, False))
    for _form in _p.inverse:
        _LOOKUP[_norm_predicate(_form)] = (_p.name, True)


def map_predicate(text: str) -> tuple[str, bool] | None:
    """The vocabulary predicate a model's wording means, and whether the ends are swapped; None if it is
    not in the vocabulary (then the relation is dropped)."""
    key = _norm_predicate(text)
    found = _LOOKUP.get(key) or _LOOKUP.get(re.sub(r"^(is|are|was|has been|have) ", "", key))
    return found


def predicate_of(text: str) -> str | None:
    """A predicate's vocabulary name with underscores ("uses_database"), or None: the benchmark's key."""
    found = map_predicate(text)
    return found[0].replace(" ", "_") if found else None


# -- entity names -------------------------------------------------------------------------------------
_PARTICLES = sorted(["은", "는", "이", "가", "을", "를", "의", "에", "에서", "에게", "한테", "께서", "으로", "로", "와",
                     "과", "도", "만", "랑", "이랑", "처럼", "까지", "부터", "에서는", "으로는", "이다", "입니다"],
                    key=len, reverse=True)
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
# Endings of a Korean predicate or clause (-다, -요, past/future markers, connectives): never a name.
_CLAUSE_END = re.compile(r"(다|요|죠|니다|는데|지만|면서|해서|어서|아서|니까|려고|하고|했고|고서|는지|을까|ㄹ까)$")
_TENSE = re.compile(r"[했었았겠됐였]")
_OBJECT_MARK = re.compile(r"[\uac00-\ud7a3](을|를|은|는|에서|에게|께서)$")
_EN_FUNCTION = {"i", "me", "my", "we", "our", "us", "he", "him", "his", "she", "her", "they", "them", "their", "it",
                "its", "is", "are", "was", "were", "am", "be", "been", "will", "would", "should", "can", "could",
                "did", "does", "do", "to", "and", "that", "this", "because", "but", "not", "no", "very", "today",
                "yesterday", "tomorrow"}
# Time words: "내년", "6개월 뒤", "October" are when, not who or what.
_TIME = re.compile(r"(내년|올해|작년|상반기|하반기|어제|오늘|내일|매주|매일|주말|첫날|새해|개월"
                   r"|\d+\s*(월|일|년|주|분|시간)|(^|\s)(뒤|전|후)$|\b(january|february|march|april|may|june|july|august|september|october|november"
                   r"|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday|today|yesterday|tomorrow"
                   r"|years?|months?|weeks?|days?|morning|evening|night)\b|아침|저녁)", re.IGNORECASE)
_PRONOUNS = {"i", "me", "you", "he", "him", "she", "her", "it", "we", "us", "they", "them", "someone", "user",
             "the user", "나", "저", "너", "그", "그녀", "우리", "저희", "그들", "누군가", "오늘", "내가", "제가"}


def strip_particles(name: str, source: str = "") -> str:
    """'온비서는' -> '온비서': a Korean particle after the last word goes when two syllables stay. A bare
    '이' goes only when the source shows the word without it (떡볶이 keeps its 이)."""
    words = name.strip().split(" ")
    if len(words) > 1 and words[0].lower() in ("a", "an"):
        words = words[1:]  # "a MacBook Pro": the article is not part of the name
    last = words[-1]
    if len(words) > 1 and re.fullmatch(r"님(이|은|께서|의|에게|과|와|도|이랑)", last):
        return " ".join([*words[:-1], "님"])  # "소라 님이" -> "소라 님"
    for particle in _PARTICLES:
        rest = last[: -len(particle)]
        if last.endswith(particle) and len(rest) >= 2 and _HANGUL.fullmatch(rest[-1]):
            if particle == "이" and (not source or source.count(rest) <= source.count(last)):
                continue
            words[-1] = rest
            break
    return " ".join(words)


def _asks_or_promises(hangul: str) -> bool:
    """A verb's "-ㄹ까", "-ㄹ게", "-ㄹ래" ending ("팔까", "갈게"): the syllable before it closes with ㄹ."""
    if len(hangul) < 2 or hangul[-1] not in "까게래":
        return False
    code = ord(hangul[-2]) - 0xAC00
    return 0 <= code < 11172 and code % 28 == 8


def is_noun_phrase(name: str, source: str = "") -> bool:
    """A short noun phrase, not a clause: '성수동 투룸', 'PostgreSQL', 'Seoul autumn 10 km race'; never
    '녹차를 마신다', '무릎 괜찮다', 'started reading'. A title quoted in the source (『소년이 온다』,
    "The Overstory") is a name even when it reads as a clause."""
    name = name.strip()
    if not name or name_key(name) in {name_key(p) for p in _PRONOUNS}:
        return False
    if source and any(f"{q}{name}{e}" in source for q, e in ("『』", "「」", '""', "“”", "''")):
        return True
    words = name.split()
    counted = [w for w in words if not re.fullmatch(r"[\d.,]+", w)]  # "10 km race": the number is not a word
    if len(counted) > MAX_WORDS or len(_HANGUL.findall(name)) > MAX_SYLLABLES:
        return False
    letters = re.sub(r"[\d\W_]+", "", name_key(name))
    if not letters or (any(ch.isdigit() for ch in name) and len(letters) <= 2):
        return False  # a bare measure: "3km", "61분"
    if _TIME.search(name):
        return False
    for index, word in enumerate(words):
        hangul = "".join(_HANGUL.findall(word))
        if hangul and (_TENSE.search(hangul) or (index == len(words) - 1 and (
                _CLAUSE_END.search(hangul) or _asks_or_promises(hangul)))):
            return False
        if index < len(words) - 1 and _OBJECT_MARK.search(word):
            return False
        lower = word.lower().strip(".,;:!?\"'")
        if lower in _EN_FUNCTION:
            return False
    first = words[0]  # "started reading", "Finished The Overstory": a verb first is a clause
    return not (first.isascii() and first.lower().endswith("ed") and len(first) > 4 and len(words) > 1)


# -- a name of its type ------------------------------------------------------------------------------
# A person, place or technology is named, not described (#31: "개인 최고 기록" as a person, "sea view" as
# a technology, "DB" as a database passed every other check). What a name looks like in each script:
_KIN = frozenset({"엄마", "아빠", "어머니", "아버지", "부모님", "동생", "언니", "오빠", "형", "누나", "할머니",
                  "할아버지", "남편", "아내", "아들", "딸", "mom", "dad", "mother", "father", "parents", "sister",
                  "brother", "sibling", "wife", "husband", "son", "daughter", "grandma", "grandpa"})
# Korean: a person is named with an honorific or a particle a person takes ("소라 님", "사토 선생님께",
# "동생한테", "김민수랑"); a place with a place suffix or a particle of place ("잠실에서", "본가에").
_HONORIFIC = re.compile(r"^\s?(님|씨|선생님|팀장|교수|사장|대리|과장|부장|한테|에게|께서|께|랑|이랑)")
_PLACE_SUFFIX = re.compile(r"(동|시|구|군|읍|면|리|역|시장|공원|숲|산|강|섬|해변|항|공항|마을|집|카페|식당|병원|치과"
                           r"|보호소|연구소|도서관|학교|대학교|본가)$")
_PLACE_PARTICLE = re.compile(r"^(에서|에|으로|로|까지)")
# A name written with a person's honorific is a person, whatever type the model gave it ("지훈 씨": project).
_HONORIFIC_NAME = re.compile(r"[\uac00-\ud7a3]\s?(씨|님)$")
_NAMED_TYPES = frozenset({"person", "place", "technology", "project"})
# Words for a kind of thing, never a thing's name.
_GENERIC = frozenset(name_key(w) for w in ("프로젝트", "회사", "팀", "앱", "서비스", "서버", "집", "방",
                                           "project", "company", "team", "app", "service", "server", "home",
                                           "house", "place", "room"))
# ... also after a word that only says whose or which one: "우리 방", "my place", "the new house".
_MODIFIER = re.compile(r"^(?:(?:새|우리|내|옛|저희|the|a|my|our|new|old)\s+)+", re.I)
# A place's position, not a place: "책상 앞", "집 근처".
_POSITION = re.compile(r"\s(앞|뒤|옆|안|밖|위|아래|근처|건너편|쪽)$")
_SMALL_WORDS = frozenset({"of", "the", "and", "for", "de", "la", "a", "an", "in", "on", "at", "to"})


def _capitalised_in(name: str, source: str) -> bool:
    """A Latin name is written capitalised where capitals are not forced: 'Busan', 'PostgreSQL', 'Mina'
    in '... lent it to Mina'; not 'Flew' that only starts a sentence, nor 'sea view'."""
    for match in re.finditer(re.escape(name), source, re.IGNORECASE):
        written = match.group(0)
        if not any(ch.isupper() for ch in written):
            continue
        before = source[:match.start()].rstrip(" \"'“(『")
        initial = not before or before[-1] in ".!?:;\n]"
        if not initial or any(ch.isupper() for ch in written[1:]):
            return True
        if _subject_after(written, source[match.end():]):
            return True
    return False


_NOT_A_SUBJECT_NEXT = re.compile(
    r"^\s*($|\d+(\s|[a-z\uac00-\ud7a3])|[.!?,;:]|\w+ing\b|(to|the|a|an|in|on|at|for|with|from|of|by|up|out|off|"
    r"into|it|my|me|her|him|them|some|more|about|through|over|home)\b)", re.IGNORECASE)


def _subject_after(word: str, rest: str) -> bool:
    """A capitalised word that starts a sentence is a name when it reads as the subject ("Rocky is",
    "Mina's farewell"), not a verb ("Flew to Osaka", "Ran 10 km", "Started reading", "Finished it")."""
    if rest.startswith(("'s", "’s")):
        return True
    if " " in word.strip():  # "Seoul Forest" has a capital past the start; "Slowly back" has none
        return False
    return not word.lower().endswith(("ed", "ing")) and not _NOT_A_SUBJECT_NEXT.match(rest)


def _followed_by(name: str, source: str, pattern: re.Pattern) -> bool:
    return any(pattern.match(source[m.end():]) for m in re.finditer(re.escape(name), source))


def named_like(name: str, kind: str, source: str) -> bool:
    """Whether `name` looks like the name of a `kind` in the source (person, place, technology; a project
    in Latin letters; organisations and Korean projects are named with common words: "본사", "온비서")."""
    if kind not in _NAMED_TYPES or name_key(name) in _KIN:
        return True
    if name_key(name) in _GENERIC or name_key(_MODIFIER.sub("", name)) in _GENERIC:
        return False  # "회사 프로젝트 온비서 킥오프": the real model named "프로젝트" the project; "우리 방"
    if name.isascii():  # a project too: "Onbiseo", "Project Hail Mary"; not "Knee surgery"
        letters = re.sub(r"[^A-Za-z]", "", name)
        # every word of a person's, place's or product's name is written as a name: "Riverside Dental Clinic",
        # not "Grandpa's old watch" (a project or event may be named in words: "the spring charity run")
        lowered = [w for w in name.split()[1:] if w[:1].islower() and w.lower() not in _SMALL_WORDS
                   and kind != "project"]
        return len(letters) >= 3 and not lowered and _capitalised_in(name, source)  # "DB", "PM": a word
    if kind == "technology" and " " in name.strip():
        return False  # a Korean phrase typed technology: "깨진 첫 접시", "꽃 한 다발"; not a product's name
    if kind == "place" and _POSITION.search(name):
        return False
    if kind == "person":
        return name.endswith(("님", "씨")) or _followed_by(name, source, _HONORIFIC)
    if kind == "place":
        return bool(_PLACE_SUFFIX.search(name)) or _followed_by(name, source, _PLACE_PARTICLE)
    return True


def _key(text: str) -> str:
    return name_key(text)


def occurs(name: str, text: str) -> bool:
    """The name is written in the text: same key, or the same romanised key for names long enough that a
    romanised match means something ('온비서' in 'Onbiseo ...')."""
    key, haystack = _key(name), _key(text)
    if key and key in haystack:
        return True
    roman = romanise(key)
    return len(roman) >= 5 and roman in romanise(haystack)


_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+|\n+|(?<=다\.)|;\s*")


def sentences(text: str, unit: str = "sentence") -> list[str]:
    """The source's sentences; `unit="entry"`: its lines (one note per line) instead."""
    parts = text.split("\n") if unit == "entry" else _SENTENCE_END.split(text)
    return [s.strip() for s in parts if s and s.strip()]


def supporting_sentence(subject: str, obj: str, source: str, unit: str = "sentence") -> str | None:
    """The first sentence (or entry) of the source that names both ends, or None."""
    for sentence in sentences(source, unit):
        if occurs(subject, sentence) and occurs(obj, sentence):
            return sentence
    return None


def moved_away_from(obj: str, sentence: str) -> bool:
    """Whether the sentence names `obj` as what something moved away from: "from SQLite to PostgreSQL",
    "SQLite에서 PostgreSQL로", "SQLite → PostgreSQL". Such an object is a past fact, not a current one."""
    escaped = re.escape(obj.strip())
    return bool(re.search(rf"\bfrom\s+{escaped}\b.*\bto\b", sentence, re.IGNORECASE)
                or re.search(rf"{escaped}\s*(에서|->|→)\s*\S+", sentence))


# -- what was dropped ----------------------------------------------------------------------------------
@dataclass
class Dropped:
    """Counts of what the checks refused, by reason."""

    entities: dict[str, int] = field(default_factory=dict)
    relations: dict[str, int] = field(default_factory=dict)

    def entity(self, reason: str) -> None:
        self.entities[reason] = self.entities.get(reason, 0) + 1

    def relation(self, reason: str) -> None:
        self.relations[reason] = self.relations.get(reason, 0) + 1

    def to_json(self) -> dict:
        return {"entities": dict(sorted(self.entities.items())), "relations": dict(sorted(self.relations.items()))}


def record_checks(home: Path, episode_id: str, dropped: Dropped) -> None:
    """Keep an episode's drop counts (a re-extraction replaces them) in `<home>/graph-checks.json`."""
    path = home / CHECKS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except ValueError:
        data = {}
    data[episode_id] = dropped.to_json()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def load_check_counts(home: Path) -> dict:
    """What the checks dropped over every episode: {"entities": {reason: n}, "relations": {reason: n}}."""
    path = home / CHECKS_FILE
    total = Dropped()
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except ValueError:
        data = {}
    for counts in data.values() if isinstance(data, dict) else []:
        for reason, n in (counts.get("entities") or {}).items():
            total.entities[reason] = total.entities.get(reason, 0) + int(n)
        for reason, n in (counts.get("relations") or {}).items():
            total.relations[reason] = total.relations.get(reason, 0) + int(n)
    return total.to_json()


# -- the check over one extraction ---------------------------------------------------------------------
@dataclass
class Checked:
    """What passed: entities (name, type) and relations (subject, vocabulary predicate, object)."""

    entities: list[tuple[str, str]] = field(default_factory=list)
    relations: list[tuple[str, str, str]] = field(default_factory=list)
    dropped: Dropped = field(default_factory=Dropped)


def check_entity(name: str, kind: str, source: str, types: frozenset[str]) -> tuple[str, str | None]:
    """(the name with particles stripped, None if it passes, else the reason it is dropped)."""
    clean = strip_particles(name, source)
    if not is_noun_phrase(clean, source):
        return clean, "not a noun phrase"
    if not occurs(clean, source):
        return clean, "not in the notes"
    if kind not in types:
        return clean, f"type {kind}"
    if not named_like(clean, kind, source):
        return clean, f"not a {kind}'s name"
    return clean, None


def rule_predicate(s_type: str, o_type: str, sentence: str) -> tuple[str, bool] | None:
    """The one predicate whose end types fit (either way round) and whose cue word the sentence holds, and
    whether the ends are swapped; None when none or several fit. The 0.5B model names the right pair with
    a wrong predicate (it copies the prompt's example: "Mina uses database Busan"), so the rule picks it."""
    found = set()
    for name, (subjects, objects) in DOMAINS.items():
        if name not in CUES or not cue_agrees(name, sentence, specific=True):
            continue
        if s_type in subjects and o_type in objects:
            found.add((name, False))
        elif o_type in subjects and s_type in objects and not VOCABULARY[name].symmetric:
            found.add((name, True))
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class Rules:
    """Which relation checks apply (the `graph_*` settings)."""

    support: str = "sentence"  # a sentence, or a whole entry, must hold both ends
    cues: bool = False  # the sentence holds a cue word of the predicate
    rule_predicate: bool = False  # a predicate that does not fit is replaced by the rule's, if one fits
    writer: bool = False  # the writer's own facts: a first-person sentence, a checked entity, the rule's predicate
    end_types: frozenset[str] = frozenset()  # types kept only as the end of a checked relation (a book read)
    roles: bool = False  # a role the notes name: "PM은 지수 님" -> (the entry's project, has pm, 지수 님)


def _fits(predicate: str, s_type: str, o_type: str, sentence: str, rules: Rules) -> bool:
    allowed = DOMAINS.get(predicate)
    if allowed and (s_type not in allowed[0] or o_type not in allowed[1]):
        return False
    return not rules.cues or cue_agrees(predicate, sentence)


def check_relation(relation: tuple[str, str, str], kept: dict[str, tuple[str, str]], source: str,
                   rules: Rules) -> tuple[tuple[str, str, str] | None, str]:
    """(the checked relation, "") or (None, why it is dropped)."""
    subject, wording, obj = relation
    mapped = map_predicate(wording)
    if mapped is None:
        return None, "predicate not in the vocabulary"
    predicate, swapped = mapped
    if swapped:
        subject, obj = obj, subject
    ends = kept.get(name_key(subject)), kept.get(name_key(obj))
    if ends[0] is None or ends[1] is None:
        return None, "an end is not a checked entity"
    (s, s_type), (o, o_type) = ends
    sentence = supporting_sentence(s, o, source, rules.support) if name_key(s) != name_key(o) else None
    if sentence is None:
        return None, "no sentence holds both ends"
    if not _fits(predicate, s_type, o_type, sentence, rules):
        picked = rule_predicate(s_type, o_type, sentence) if rules.rule_predicate else None
        if picked is None:
            wrong_types = not _fits(predicate, s_type, o_type, sentence, Rules())
            return None, "types do not fit the predicate" if wrong_types else "the sentence does not say it"
        predicate, swapped = picked
        if swapped:
            s, o = o, s
    if predicate in FUNCTIONAL and moved_away_from(o, sentence):
        return None, "the object it moved away from"
    return (s, predicate, o), ""


# The journal's writer: the subject a first-person note leaves out ("본가 다녀옴", "Visited Busan").
WRITERS = {"ko": "나", "en": "I"}
_OTHER_SUBJECT = re.compile(r"(\b(he|she|they|his|her|their|we)\b|그녀|그는|그가|우리|님이|님은|님께서|씨가)",
                            re.IGNORECASE)
_FIRST_PERSON = re.compile(r"(\b(i|my|me|i'm|i've)\b|내가|나는|내\s|제가|저는)", re.IGNORECASE)


def writer_of(source: str) -> str:
    """The writer's node: "나" for notes in Korean, "I" otherwise."""
    return WRITERS["ko"] if len(_HANGUL.findall(source)) * 4 > len(re.findall(r"[A-Za-z]", source)) else WRITERS["en"]


def writer_relations(entities: list[tuple[str, str]], source: str, support: str = "sentence"
                     ) -> list[tuple[str, str, str]]:
    """What the writer did with a checked entity: in a sentence with no other person in it (no third-person
    pronoun, no other checked person), the one predicate a person subject and the entity's type allow and
    whose cue word the sentence holds: "본가 다녀옴" -> (나, visited, 본가)."""
    people = [n for n, t in entities if t == "person"]
    writer, out = writer_of(source), []
    for name, kind in entities:
        for sentence in sentences(source, support):
            if not occurs(name, sentence) or any(occurs(p, sentence) for p in people if p != name):
                continue
            if _OTHER_SUBJECT.search(sentence) and not _FIRST_PERSON.search(sentence):
                continue
            picked = rule_predicate("person", kind, sentence)
            if picked and not picked[1] and kind != "person":
                out.append((writer, picked[0], name))
                break
    return out


def _add_writer(out: Checked, source: str, rules: Rules, seen: set[tuple[str, str, str]]) -> None:
    for relation in writer_relations(out.entities, source, rules.support):
        triple = (name_key(relation[0]), relation[1], name_key(relation[2]))
        if triple in seen:
            continue
        seen.add(triple)
        out.relations.append(relation)
        if name_key(relation[0]) not in {name_key(n) for n, _ in out.entities}:
            out.entities.append((relation[0], "person"))


def check(entities: list[tuple[str, str]], relations: list[tuple[str, str, str]], source: str,
          types: frozenset[str], rules: Rules = Rules(), related: bool = False) -> Checked:
    """Entities that are noun phrases of the source with an allowed type; relations whose predicate is in
    the vocabulary and whose two ends are such entities named together in one sentence of the source."""
    out = Checked()
    kept: dict[str, tuple[str, str]] = {}  # key of the model's name -> (clean name, type)
    for name, kind in entities:
        kind = "person" if _HONORIFIC_NAME.search(name.strip()) and "person" in types else kind
        clean, reason = check_entity(name, kind, source, types | rules.end_types)
        if reason:
            out.dropped.entity(reason)
            continue
        if name_key(clean) not in {name_key(n) for n, _ in kept.values()}:
            out.entities.append((clean, kind))
        kept[name_key(name)] = (clean, kind)
    seen: set[tuple[str, str, str]] = set()
    for relation in relations:
        checked, reason = check_relation(relation, kept, source, rules)
        if checked is None:
            out.dropped.relation(reason)
            continue
        triple = (name_key(checked[0]), checked[1], name_key(checked[2]))
        if triple not in seen:
            seen.add(triple)
            out.relations.append(checked)
    if rules.writer:
        _add_writer(out, source, rules, seen)
    if rules.roles:
        add_found(out, role_relations(out.entities, source, types), seen)
    ends = {name_key(n) for r in out.relations for n in (r[0], r[2])}
    for name, kind in out.entities:  # abstain: an entity only when a checked relation names it
        if name_key(name) not in ends and (related or kind not in types):
            out.dropped.entity("in no checked relation" if related or kind in rules.end_types else f"type {kind}")
    out.entities = [(n, t) for n, t in out.entities if name_key(n) in ends or (not related and t in types)]
    return out


def trusted(subject: str, predicate: str, obj: str) -> bool:
    """Whether a stored fact passed the checks: a vocabulary predicate between two noun phrases. Facts a
    store holds from before the checks (free-text predicates, clauses) fail, so answers leave them out."""
    return predicate in VOCABULARY and (subject in WRITERS.values() or is_noun_phrase(subject)) \
        and is_noun_phrase(obj)


# -- a change carries a current fact's predicate over to the new object ---------------------------------
@dataclass(frozen=True)
class Fact:
    """A current fact of the store, by names: the subject's and the object's names (every spelling the
    merged entity has) and the object's type."""

    subjects: tuple[str, ...]
    predicate: str
    objects: tuple[str, ...]
    object_type: str
    subject_type: str = "project"


# A word of change must be in the sentence: "from A to B" alone is also a price or a route.
_CHANGE = re.compile(r"(\bmov(ed|ing|e)\b|\bmigrat|\bswitch|\breplac|\bchanged\b|바뀌|바꿨|바꾸|바꿈|옮기|옮겼"
                     r"|옮김|이사|대신|→|->)", re.IGNORECASE)
_LATIN_NAME = re.compile(r"[A-Za-z0-9][\w.\-+]*(?:\s+[A-Z0-9][\w.\-+]*){0,2}")
_HANGUL_NAME = re.compile(r"[\uac00-\ud7a3A-Za-z0-9][\uac00-\ud7a3\w.\-]*(?:\s님)?")


def _name_at(rest: str, entities: list[tuple[str, str]], kind: str, source: str, types: frozenset[str],
             at_end: bool = False) -> tuple[str, str] | None:
    """The checked entity (name, type) that `rest` starts with (ends with, `at_end`), else the name written
    there if it passes the entity checks as a `kind`: "현우 님으로 바뀌었다" -> ("현우 님", person)."""
    text = rest.strip() if not at_end else rest.rstrip()
    for name, typ in sorted(entities, key=lambda e: -len(e[0])):
        written = re.escape(name)
        if re.match(rf"{written}(?![A-Za-z0-9])", text, re.IGNORECASE) if not at_end else \
                re.search(rf"(?<![\w]){written}$", text, re.IGNORECASE):
            return name, typ
    if at_end:
        return None  # "B replaced A": only a checked entity, the words before are the sentence's start
    found = (_LATIN_NAME if text[:1].isascii() else _HANGUL_NAME).match(text)
    if not found:
        return None
    name = re.sub(r"(님)(으로|로|이|가|은|는|에게)$", r"\1", found.group(0).rstrip(".,;:!?"))
    name = re.sub(r"(?<=[A-Za-z0-9.])(으로|로|이|가|은|는|을|를)$", "", name)  # "PostgreSQL로"
    clean, reason = check_entity(name, kind, source, types)
    return (clean, kind) if reason is None and len(name_key(clean)) >= 2 else None  # never a bare "를"


def _new_object(old: str, sentence: str, entities: list[tuple[str, str]], kind: str, source: str,
                types: frozenset[str]) -> tuple[str, str] | None:
    """What the sentence says `old` was changed to: "from A to B", "A에서 B로", "A → B", "A 대신 B",
    "replaced A with B", "B replaced (my old) A"; None when it says no such thing."""
    a = re.escape(old)
    for pattern in (rf"\bfrom\s+{a}\s+(?:to|over to)\s+", rf"(?<![\w]){a}\s*(?:에서|->|→)\s*",
                    rf"(?<![\w]){a}\s*대신\s*", rf"\breplac\w*\s+(?:the\s+|my\s+|our\s+)?(?:old\s+)?{a}\s+with\s+"):
        found = re.search(pattern, sentence, re.IGNORECASE)
        if found:
            picked = _name_at(sentence[found.end():], entities, kind, source, types)
            if picked and name_key(picked[0]) != name_key(old):
                return picked
    found = re.search(rf"\s+replaced\s+(?:the\s+|my\s+|our\s+)?(?:old\s+)?{a}(?![\w])", sentence, re.IGNORECASE)
    if found:
        picked = _name_at(sentence[:found.start()], entities, kind, source, types, at_end=True)
        if picked and name_key(picked[0]) != name_key(old):
            return picked
    return None


_STAYS = r"(\bstays?\s+(?:on\s+|with\s+)?{a}|\bstill\s+(?:on\s+)?{a}|{a}\S{{0,2}}\s*(?:그대로|유지))"


def _writer_alone(sentence: str, entities: list[tuple[str, str]]) -> bool:
    """A sentence about the writer: no third person in it (by pronoun or by a checked person's name)."""
    if _OTHER_SUBJECT.search(sentence) and not _FIRST_PERSON.search(sentence):
        return False
    return not any(occurs(name, sentence) for name, kind in entities if kind == "person")


_MOVED_TO = (r"((?<![\w]){b}\s*(?:으로|로)\s*(?:옮기|옮겼|옮김|바꾸|바꿨|바꿈|바뀌|이전|갈아타)"
             r"|\b(?:mov|migrat|switch)\w*\s+(?:(?!from\b)[\w'.-]+\s+){{0,3}}?(?:to|onto)\s+{b}(?![\w]))")


def _about(fact: Fact, text: str, entities: list[tuple[str, str]]) -> bool:
    """The text names the fact's subject (for the writer's facts: names no third person)."""
    if fact.subjects[0] in WRITERS.values():
        return _writer_alone(text, entities)
    return any(occurs(s, text) for s in fact.subjects)


def _carry_in_entry(fact: Fact, entry: str, entities: list[tuple[str, str]], source: str, types: frozenset[str]
                    ) -> tuple[str, str] | None:
    """The new object (name, type) an entry of change gives a current fact, or None."""
    if any(re.search(_STAYS.format(a=re.escape(old)), entry, re.IGNORECASE) for old in fact.objects):
        return None  # "the database itself stays PostgreSQL"
    for sentence in sentences(entry):
        if not _about(fact, sentence, entities):
            continue
        for old in fact.objects:
            picked = _new_object(old, sentence, entities, fact.object_type, source, types)
            if picked:
                return picked
    # "SQLite로는 부족하다는 결론. PostgreSQL로 옮기기로 했다": the entry names the subject and the old object,
    # and a move to a checked entity ("from A to B" is the sentence's: a different A is another thing).
    if not _about(fact, entry, entities) or not any(occurs(old, entry) for old in fact.objects):
        return None
    olds = {name_key(o) for o in fact.objects}
    for name, kind in entities:
        if name_key(name) not in olds and re.search(_MOVED_TO.format(b=re.escape(name)), entry, re.IGNORECASE):
            return name, kind
    return None


def carried_over(facts: list[Fact], entities: list[tuple[str, str]], source: str, types: frozenset[str]
                 ) -> list[tuple[tuple[str, str, str], tuple[str, str]]]:
    """New facts that an entry of change states about a current fact: "Moved Onbiseo from Heroku to
    Fly.io" with (온비서, hosted on, Heroku) current gives (온비서, hosted on, Fly.io); "온비서 PM이 지수 님에서
    현우 님으로 바뀌었다" gives (온비서, has pm, 현우 님). The entry holds a word of change; a sentence holds the
    subject (for the writer's facts: no third person), the old object as what was left and the new one as
    what came instead ("from A to B", "A에서 B로", "A 대신 B", "B replaced A"), or the entry names the
    subject and the old object and a move to the new one ("B로 옮기기로 했다"). The new one passes the entity
    checks with a type the predicate allows. Returns ((subject, predicate, new object), (subject type, new
    object type)); nothing when the entry says the old one stays ("the database itself stays PostgreSQL")."""
    out: list[tuple[tuple[str, str, str], tuple[str, str]]] = []
    entries = [e for e in sentences(source, "entry") if _CHANGE.search(e)]
    for fact in facts:
        if fact.predicate not in FUNCTIONAL or not fact.subjects:
            continue
        allowed = DOMAINS.get(fact.predicate, ((), (fact.object_type,)))[1]
        for entry in entries:
            picked = _carry_in_entry(fact, entry, entities, source, types)
            if picked and picked[1] in allowed:
                out.append(((fact.subjects[0], fact.predicate, picked[0]), (fact.subject_type, picked[1])))
                break
    return out


# -- roles a note names --------------------------------------------------------------------------------
# "PM은 지수 님", "온비서 PM은 이제 소라 님이다", "새 팀장은 이정민 님", "DB는 SQLite로 시작", "our team lead is now
# Sora": the role, a particle or "is", then a name. PM and DB in capitals only ("5 pm" is a time).
# (predicate, the role's words, whose role: the entry's one project or the writer, the holder's type)
_ROLES = (("has pm", r"(?:PM|(?i:project manager)|프로젝트\s?매니저)", "project", "person"),
          ("reports to", r"(?:팀장(?:님)?|(?i:team lead|manager|boss))", "writer", "person"),
          ("uses database", r"(?:DB|(?i:database)|데이터베이스)", "project", "technology"))
_ROLE_LINK = r"\s*(?:은|는|이|가|:|(?i:is|was)\b)?\s*(?:(?i:now)\s+|이제\s+|새로\s+)?"


def role_relations(entities: list[tuple[str, str]], source: str, types: frozenset[str]
                   ) -> list[tuple[tuple[str, str, str], tuple[str, str]]]:
    """Facts of a role a sentence names with who or what holds it: a project's PM and database (the one
    project the entry names) and the writer's team lead. The holder is a checked entity or a name that
    passes the checks as its type ("지수 님"); one the sentence says was left ("지수 님에서") holds nothing."""
    out = []
    for entry in sentences(source, "entry"):
        projects = {name_key(n): n for n, t in entities if t == "project" and occurs(n, entry)}
        for sentence in sentences(entry):
            for predicate, role, whose, kind in _ROLES:
                for found in re.finditer(rf"(?<![\w']){role}(?=[\s:은는이가]){_ROLE_LINK}", sentence):
                    if whose == "writer" and re.search(r"('s|’s|의)\s*$", sentence[:found.start()]):
                        continue  # someone else's team lead
                    picked = _name_at(sentence[found.end():], entities, kind, source, types)
                    if not picked or picked[1] != kind or moved_away_from(picked[0], sentence):
                        continue
                    if whose == "project" and len(projects) == 1:
                        out.append(((next(iter(projects.values())), predicate, picked[0]), ("project", kind)))
                    elif whose == "writer":
                        out.append(((writer_of(source), predicate, picked[0]), ("person", kind)))
    return out


def add_found(out: Checked, found: list[tuple[tuple[str, str, str], tuple[str, str]]],
              seen: set[tuple[str, str, str]] | None = None) -> None:
    """Add rule-found relations and their ends (as entities, when new) to a checked extraction."""
    if seen is None:
        seen = {(name_key(s), p, name_key(o)) for s, p, o in out.relations}
    for (subject, predicate, obj), kinds in found:
        triple = (name_key(subject), predicate, name_key(obj))
        if triple in seen:
            continue
        seen.add(triple)
        out.relations.append((subject, predicate, obj))
        known = {name_key(n) for n, _ in out.entities}
        for name, kind in zip((subject, obj), kinds):
            if name_key(name) not in known:
                out.entities.append((name, kind))
