"""What the model writes into a note is true of that note: the grounded contract (#60).

Every field the model writes (construction's context, keywords and tags; evolution's "later" clause and tags)
is checked here, after the model and before the store, whatever the model (the bundled 0.5B or an `openai:`
server: one contract, one code path):

- a **context** says only what its note says: each of its content words is a word of the note (by stem, in
  both languages: "running" meets "ran", "이사" meets "이사했다", "달리기" meets "달렸다"), a date word the
  note's own time gives ("March", "Saturday", "3월"), or one of a few framing words ("about", "plan", "날");
- a **keyword** is a word or phrase of the note; a **tag** is one too, or a topic from a closed list that a
  word of the note implies ("health" for "knee", "가족" for "엄마");
- a context that fails is not stored: the note keeps an extractive one, its most central sentence, clipped
  (`extractive_context`); keywords and tags that fail are dropped one by one. The failures are counted.

Evolution refines and never replaces (`later_context`): the neighbour keeps its own description and gains one
dated "later" clause, in the causing note's words (the model's, when they hold, else the causing note's
sentence that shares most with the neighbour); a tag it adds is a word of the neighbour's, or of both notes.
refine.py decides where a clause may go (a shared word that names one thing; a page that still reads as itself).
This is the same idea as the entity graph's tiers/grounding.py, for notes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.text import clip, clip_phrase, nfc, one_line, phrases, sentences
from ..core.words import STOP_WORDS, korean_stem, regular_stem, verb_forms

_WORD = re.compile(r"[0-9A-Za-z][0-9A-Za-z'’-]*[0-9A-Za-z]|[0-9A-Za-z]|[\uac00-\ud7a3]+")

# Words that frame a description without saying anything the note must hold ("a plan about …", "…한 날").
FRAMING = frozenset({
    "note", "notes", "entry", "day", "days", "today", "tonight", "morning", "afternoon", "evening", "night",
    "week", "weekend", "plan", "plans", "planning", "about", "thought", "thoughts", "reflection", "reflections",
    "update", "updates", "news", "time", "life", "daily", "personal", "experience", "experiences", "things",
    "thing", "something", "during", "while", "new", "later", "recent", "recently", "own",
    "날", "하루", "일", "기록", "이야기", "생각", "계획", "오늘", "주말", "아침", "저녁", "점심", "밤", "경험",
    "소식", "일상", "대한", "관한", "위한", "대해", "관해", "함께", "같이", "및", "그리고", "있는", "없는", "하는",
    "한", "된", "했던", "있었던", "보낸", "새", "새로운", "나중", "이후", "최근", "것", "거", "중", "때", "후", "전"})
# Date words a note's time gives even when its text does not say them.
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_KO_WEEKDAYS = ("월요일", "화요일", "수요일", "목요일", "금요일", "토요일", "일요일")
# Words that name a time or a span of it, not a thing: two entries both written on a Sunday, or both saying
# "Sunday" or "사흘" (three days), are not about one thing (a later clause must share a word that names one).
_SPANS = ("하루", "이틀", "사흘", "나흘", "닷새", "엿새", "이레", "열흘", "보름", "새벽", "오전", "오후", "dawn",
          "hour", "hours", "minute", "minutes", "fortnight")
DATE_WORDS = frozenset({*_MONTHS, *(m[:3] for m in _MONTHS), *_WEEKDAYS, *_KO_WEEKDAYS, "주말", "weekend", *_SPANS})

# Topic tags a word of the note implies (a closed list, both languages): a tag that is not a word of the note
# must be one of these, with one of its cue words (by stem) in the note.
TOPICS: dict[tuple[str, str], tuple[str, ...]] = {
    ("health", "건강"): ("doctor", "hospital", "clinic", "pain", "sick", "ill", "medicine", "knee", "back", "injury",
                        "fever", "cold", "surgery", "therapy", "dentist", "병원", "의사", "약", "아프", "무릎", "허리",
                        "감기", "수술", "치료", "치과", "통증", "부상", "진료"),
    ("exercise", "운동"): ("run", "gym", "workout", "swim", "yoga", "hike", "bike", "cycling", "race", "marathon",
                          "climb", "tennis", "soccer", "football", "달리기", "달리", "헬스", "수영", "요가", "등산",
                          "자전거", "마라톤", "클라이밍", "축구", "테니스", "조깅", "산책"),
    ("work", "일"): ("work", "office", "job", "boss", "colleague", "meeting", "project", "deadline", "client",
                    "manager", "team", "company", "회사", "출근", "퇴근", "회의", "상사", "동료", "업무", "프로젝트",
                    "마감", "팀장", "직장", "야근"),
    ("family", "가족"): ("mom", "mother", "dad", "father", "sister", "brother", "parents", "grandma", "grandpa",
                        "son", "daughter", "wife", "husband", "aunt", "uncle", "cousin", "엄마", "어머니", "아빠",
                        "아버지", "누나", "언니", "오빠", "형", "동생", "할머니", "할아버지", "아내", "남편", "아들",
                        "딸", "부모님", "이모", "삼촌", "사촌"),
    ("friends", "친구"): ("friend", "friends", "친구"),
    ("food", "음식"): ("dinner", "lunch", "breakfast", "restaurant", "cafe", "coffee", "cook", "recipe", "ate",
                      "eat", "meal", "저녁", "점심", "아침밥", "식당", "카페", "커피", "요리", "먹", "밥", "맛집"),
    ("travel", "여행"): ("trip", "travel", "flight", "airport", "hotel", "vacation", "holiday", "train", "여행",
                        "비행기", "공항", "호텔", "휴가", "기차", "출장"),
    ("money", "돈"): ("money", "pay", "paid", "bill", "rent", "salary", "price", "cost", "budget", "save", "saving",
                     "won", "dollar", "bank", "loan", "돈", "월급", "월세", "요금", "가격", "예산", "저축", "적금",
                     "은행", "대출", "원"),
    ("study", "공부"): ("study", "class", "exam", "test", "course", "lesson", "school", "homework", "book",
                       "read", "lecture", "공부", "수업", "시험", "강의", "학교", "숙제", "책", "학원"),
    ("home", "집"): ("home", "apartment", "flat", "house", "move", "moving", "landlord", "room", "집", "아파트",
                    "이사", "방", "집주인"),
    ("pets", "반려동물"): ("dog", "cat", "puppy", "kitten", "pet", "vet", "강아지", "고양이", "개", "반려", "동물병원"),
    ("shopping", "쇼핑"): ("buy", "bought", "shop", "shopping", "order", "store", "mall", "사", "샀", "구매", "쇼핑",
                          "주문", "마트"),
    ("hobby", "취미"): ("hobby", "paint", "drawing", "music", "guitar", "piano", "photo", "movie", "film", "game",
                       "pottery", "취미", "그림", "음악", "기타", "피아노", "사진", "영화", "게임", "도자기"),
    ("mood", "기분"): ("happy", "sad", "tired", "angry", "anxious", "stress", "stressed", "lonely", "excited",
                      "worried", "기분", "행복", "슬프", "피곤", "화나", "불안", "스트레스", "외롭", "설레", "걱정"),
}
_CONTRACTED = {("ㅣ", "ㅕ"), ("ㅗ", "ㅘ"), ("ㅜ", "ㅝ"), ("ㅏ", "ㅐ"), ("ㅡ", "ㅓ"), ("ㅣ", "ㅓ")}
_MEDIALS = "ㅏㅐㅑㅒㅓㅔㅕㅖㅗㅘㅙㅚㅛㅜㅝㅞㅟㅠㅡㅢㅣ"


def words(text: str) -> list[str]:
    """The words of `text`, lower-cased, in order (Latin words and numbers, Hangul runs)."""
    return [w.lower().removesuffix("'s").removesuffix("’s") for w in _WORD.findall(nfc(text))]


def content_words(text: str) -> list[str]:
    """The words of `text` that say something: no function or framing words (Korean particles stripped)."""
    out = []
    for word in words(text):
        base = korean_stem(word) if _hangul(word) else word
        if word in STOP_WORDS or word in FRAMING or base in FRAMING or not base:
            continue
        out.append(word)
    return out


def _hangul(word: str) -> bool:
    return "\uac00" <= word[0] <= "\ud7a3"


def _parts(syllable: str) -> tuple[int, str, int]:
    """A Hangul syllable's initial consonant (0-18), medial vowel and final consonant (0: none)."""
    code = ord(syllable) - 0xAC00
    return code // 588, _MEDIALS[(code % 588) // 28], code % 28


_SS = 20  # the final ㅆ of a past tense: 달리+었 -> 달렸, 보+았 -> 봤


def _korean_same(a: str, b: str) -> bool:
    """Two Korean stems are one word: they agree on their first two syllables (or one is a one-syllable word
    the other is), where a verb's vowel may have contracted into a past tense ("달리기" / "달렸다", "보다" /
    "봤다"), but no other vowel differs ("사과" is not "사고")."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    if len(short) < 2:
        return False
    if long.startswith(short[:2]):
        return True
    if short[0] != long[0] or not ("\uac00" <= short[1] <= "\ud7a3" and "\uac00" <= long[1] <= "\ud7a3"):
        return False
    (i1, v1, _), (i2, v2, f2) = _parts(short[1]), _parts(long[1])
    (_, _, f1) = _parts(short[1])
    contracted = (v1, v2) in _CONTRACTED and f2 == _SS or (v2, v1) in _CONTRACTED and f1 == _SS
    return i1 == i2 and contracted


def _english_forms(word: str) -> set[str]:
    """A word and its stems ("runs", "running", "ran" all hold "run"; "cities" holds "city")."""
    forms = {word, regular_stem(word)}
    if word.endswith("ies") and len(word) > 4:
        forms.add(word[:-3] + "y")
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:  # short plurals: "runs", "legs"
        forms.add(word[:-1])
    for form in list(forms):
        forms.update(verb_forms(form))
    return forms


@dataclass
class NoteWords:
    """The words of one note (and of what its time says), for telling whether a field's words are its own."""

    english: set[str] = field(default_factory=set)
    korean: set[str] = field(default_factory=set)
    numbers: set[str] = field(default_factory=set)
    units: set[str] = field(default_factory=set)  # the letters beside a number ("km" of "10km")

    @classmethod
    def of(cls, text: str, at: str = "") -> NoteWords:
        found = cls()
        found.add(text)
        if at[:10].count("-") == 2:
            found.add_time(at)
        return found

    def add(self, text: str) -> None:
        for word in words(text):
            if _hangul(word):
                self.korean.update({word, korean_stem(word)})
            else:
                self.english.update(_english_forms(word))
                self.units.update(re.findall(r"[a-z]+", word) if re.search(r"\d", word) else [word])
            self.numbers.update(re.findall(r"\d+", word))

    def add_time(self, at: str) -> None:
        from datetime import date

        try:
            day = date.fromisoformat(at[:10])
        except ValueError:
            return
        self.english.update({_MONTHS[day.month - 1], _MONTHS[day.month - 1][:3], _WEEKDAYS[day.weekday()],
                             str(day.year)})
        self.korean.update({f"{day.month}월", _KO_WEEKDAYS[day.weekday()], f"{day.year}년"})
        self.numbers.update({str(day.year), str(day.month), str(day.day)})

    def holds(self, word: str) -> bool:
        """Whether `word` (one word of a field) is a word of the note."""
        if re.search(r"\d", word) and not _hangul(word):  # "2", "10km", "3pm": its numbers and its letters
            return word in self.english or (all(n in self.numbers for n in re.findall(r"\d+", word))
                                            and all(unit in self.units for unit in re.findall(r"[a-z]+", word)))
        if _hangul(word):
            if re.search(r"\d", word):  # "5월", "3일": the number is the note's
                return all(n in self.numbers for n in re.findall(r"\d+", word))
            stem = korean_stem(word)
            return any(_korean_same(stem, other) for other in self.korean if other[:1] == stem[:1])
        return bool(_english_forms(word) & self.english)

    def begins(self, word: str) -> bool:
        """Whether `word` is the start of a word of the note (two letters at least): a word cut by a length cap."""
        pool = self.korean if _hangul(word) else self.english
        return len(word) >= 2 and any(other.startswith(word) for other in pool)

    def grounded_share(self, text: str) -> float:
        """The share of `text`'s content words that are words of the note (1.0 when it has none). A last word
        cut short (the model's string ran into its length cap) counts when it begins a word of the note."""
        found = content_words(text)
        if not found:
            return 1.0
        held = [self.holds(w) for w in found]
        unfinished = not re.search(r"[.!?。]\W*$", text.strip())  # no sentence end: cut off by the cap
        if not held[-1] and unfinished and self.begins(found[-1]):
            held[-1] = True
        return sum(held) / len(held)


def strip_dates(context: str) -> str:
    """A context without the dates the tool resolved and appended ("… [yesterday = 7 May 2023]")."""
    return re.sub(r"\s*\[[^\]]*=[^\]]*\]\s*$", "", context)


def repeats(found: list[str]) -> bool:
    """A small model's loop ("오 사장님 드리고, 내 거, 오 사장님 드리고, …"): words the note holds, saying nothing."""
    return len(found) >= 4 and len(set(found)) / len(found) < 0.6


def context_holds(context: str, note: NoteWords) -> bool:
    """A context is the note's when every content word in it is a word of the note (see the module), and it
    does not go round in a loop."""
    text = strip_dates(context)
    return note.grounded_share(text) == 1.0 and not repeats(content_words(text))


MAX_TERM_WORDS = 3  # a keyword or tag is a name or a short phrase, not a sentence


def term_holds(term: str, note: NoteWords) -> bool:
    """A keyword or tag is the note's when each of its content words is, and it is a short phrase (a term
    made only of framing words says nothing; one of a clause or a loop is no term: not kept)."""
    found = content_words(term)
    return 0 < len(found) <= MAX_TERM_WORDS and len(set(found)) == len(found) and all(note.holds(w) for w in found)


def topic_of(tag: str, note: NoteWords) -> bool:
    """A tag from the closed topic list, one of whose cue words the note holds."""
    key = tag.strip().lower()
    for names, cues in TOPICS.items():
        if key in names and any(note.holds(cue) for cue in cues):
            return True
    return False


def central_sentence(text: str) -> str:
    """The note's most central sentence: the one sharing the most distinct content words with the rest of the
    note (the first on a tie; a note of one sentence is that sentence)."""
    pieces = [one_line(s) for s in sentences(text)] or [one_line(text)]
    if len(pieces) == 1:
        return pieces[0]
    bags = [{regular_stem(korean_stem(w)) for w in content_words(p)} for p in pieces]

    def centrality(index: int) -> int:
        others = set().union(*(bag for i, bag in enumerate(bags) if i != index))
        return len(bags[index] & others)

    best = max(range(len(pieces)), key=lambda i: (centrality(i), -i))
    return pieces[best]


def extractive_context(text: str, max_chars: int) -> str:
    """The context a note keeps when the model's does not hold: its central sentence, clipped at a phrase."""
    return clip_phrase(central_sentence(text), max_chars)


@dataclass
class Checked:
    """A construction after the contract, and what it refused."""

    context: str
    keywords: list[str]
    tags: list[str]
    context_refused: bool = False
    keywords_dropped: list[str] = field(default_factory=list)
    tags_dropped: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"context": int(self.context_refused), "keywords": len(self.keywords_dropped),
                "tags": len(self.tags_dropped)}


def check_construction(content: str, at: str, context: str, keywords: list[str], tags: list[str],
                       max_context_chars: int) -> Checked:
    """The construction fields that hold, with an extractive context in place of one that does not."""
    note = NoteWords.of(content, at)
    kept_keywords = [k for k in keywords if term_holds(k, note)]
    kept_tags = [t for t in tags if term_holds(t, note) or topic_of(t, note)]
    holds = bool(context.strip()) and context_holds(context, note)
    return Checked(context=context if holds else extractive_context(content, max_context_chars),
                   keywords=kept_keywords, tags=kept_tags, context_refused=not holds,
                   keywords_dropped=[k for k in keywords if k not in kept_keywords],
                   tags_dropped=[t for t in tags if t not in kept_tags])


# -- evolution ----------------------------------------------------------------------------------------------
LATER = {"Korean": "이후", "English": "later"}
_LATER_MARK = re.compile(r"; (?:later|이후) \(\d\d-\d\d\): ")


def own_description(context: str) -> str:
    """A context without the "later" clause evolution added: the note's own description."""
    match = _LATER_MARK.search(context)
    return context[: match.start()] if match else context


def later_of(context: str) -> str:
    """The "later" clause evolution added to a context, without its mark and date ("" when none)."""
    match = _LATER_MARK.search(context)
    return context[match.end():] if match else ""


def best_sentence(cause: str, neighbour: NoteWords, names_it: Callable[[str], bool] = lambda _: True
                  ) -> tuple[str, int]:
    """The causing note's sentence that shares the most content words with the neighbour (only words
    `names_it` accepts) among those that stand alone (`stands_alone`), and how many."""
    scored = []
    for index, piece in enumerate(one_line(s) for s in sentences(cause) or [cause]):
        shared = len({w for w in content_words(piece) if neighbour.holds(w) and names_it(w)})
        if stands_alone(piece):
            scored.append((shared, -index, piece))
    shared, _, piece = max(scored) if scored else (0, 0, "")
    return piece, shared


# Pronouns that point out of their sentence. A later clause stands alone in another note: "Kim checked it
# twice" or "On Monday she left early", read in the neighbour, points at the neighbour's own things (#60: 3
# of 7 "partly" later clauses on the long diary's read half).
_PERSONAL = frozenset({"he", "him", "his", "she", "her", "hers", "they"})
_THINGS = frozenset({"them", "their", "its", "these", "those"})  # "nine of them": of what, in another note?
_LINKING = frozenset({"and", "but", "so", "because", "when", "if", "that", "then", "as", "since", "while", "until",
                      "though", "although", "or", "where", "after", "before"})
_SUBJECT_IT = frozenset({"'s", "’s", "is", "was", "will", "would", "has", "had", "feels", "felt", "looks", "seems",
                         "seemed", "might", "may", "can", "could", "rained", "snowed", "gets", "got", "takes",
                         "took", "turned", "turns", "made", "makes"})
_KO_POINTING = ("그거", "그게", "그걸", "그것", "이거", "이게", "이걸", "걔", "그녀", "그분")


def stands_alone(sentence: str) -> bool:
    """Whether `sentence` reads alone, pointing at nothing outside it: no "he"/"she"/"they" before a name (a
    capitalised word that is no function or date word), no "them", "its", "those", no "it" as an object
    ("checked it", "repainted it"; "it was", "said it's" are fine), no Korean "그거", "걔"."""
    tokens = re.findall(r"[A-Za-z]+(?:['’][a-z]+)?|[\uac00-\ud7a3]+|\S", sentence)
    named = False
    for i, token in enumerate(tokens):
        low = token.lower()
        if token.startswith(_KO_POINTING):
            return False
        if token[:1].isupper() and low not in STOP_WORDS and low not in DATE_WORDS and low != "i":
            named = True
        if low in _PERSONAL and not named or low in _THINGS:
            return False
        if low == "it":
            before = tokens[i - 1].lower() if i else ""
            after = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
            subject = not before or not before.isalpha() or before in _LINKING or after in _SUBJECT_IT
            if not subject and not after.startswith(("'", "’")):
                return False
    return True


def cut_off(clause: str, cause: str) -> bool:
    """Whether the model's clause, copying the causing note, ends cut off: a copy that stops inside a word or
    number of the note, or a number the note never writes whole ("it costs 2." of "about 2.5 million won"):
    the model's output ran into its length cap."""
    def numbers(text: str) -> set[str]:
        return {n.rstrip(".,") for n in re.findall(r"\d+(?:[.,]\d+)*", text)}

    if not numbers(clause) <= numbers(cause):
        return True
    core = one_line(clause).rstrip(" .…")
    text = one_line(cause)
    at = text.lower().find(core.lower()) if core else -1
    following = text[at + len(core): at + len(core) + 2] if at >= 0 else ""
    return bool(following) and (following[0].isalnum() or bool(re.match(r"[.,]\w", following)))


def later_clause(proposed: str | None, cause_content: str, cause_at: str, neighbour: NoteWords, max_chars: int,
                 names_it: Callable[[str], bool] = lambda _: True) -> str | None:
    """What evolution may add to a neighbour: the model's clause when each of its content words is the causing
    note's (the 0.5B often wrote the neighbour's own sentence as "later"), one is a word of the neighbour
    that names one thing of it, it stands alone and is not cut off mid-word, else the causing note's sentence
    that stands alone and shares most such words with the neighbour; None when the causing note has none
    (then it does not change what the neighbour means).
    `names_it`: whether a shared word names one thing (refine.py's caller: a subject word, no date, in few notes
    of the notebook; "오늘", "40만 원", "집" or "afternoon" in a diary of pages tie any two entries)."""
    sentence, shared = best_sentence(cause_content, neighbour, names_it)
    if not shared:
        return None
    cause = NoteWords.of(cause_content, cause_at)
    said = content_words(proposed or "")
    if (said and all(cause.holds(w) for w in said) and any(neighbour.holds(w) and names_it(w) for w in said)
            and stands_alone(proposed or "") and not cut_off(proposed or "", cause_content)):
        return clip_phrase(one_line(proposed), max_chars)  # what the causing note says, about the neighbour
    return clip_phrase(sentence, max_chars)


def naming_phrase(clause: str, neighbour: NoteWords, names_it: Callable[[str], bool] = lambda _: True
                  ) -> str | None:
    """The phrase of a "later" clause (cut at commas and Korean clause endings) that shares the most words
    naming the neighbour, when it is shorter than the clause: what to keep of a clause that outweighs its
    neighbour's own description. None when the clause is one phrase or no phrase names the neighbour."""
    pieces = [p.strip(" ,;:…") for p in phrases(clause.rstrip("…"))]
    scored = [(len({w for w in content_words(p) if neighbour.holds(w) and names_it(w)}), -i, p)
              for i, p in enumerate(pieces) if p]
    if len(scored) < 2:
        return None
    shared, _, piece = max(scored)
    return piece if shared else None


def later_context(own: str, clause: str, at: str, language: str, max_chars: int) -> str:
    """The neighbour's own description, then the dated "later" clause ("…; later (03-30): …"), within the cap
    (the own description is cut first only when it alone would leave the clause no room)."""
    mark = f"; {LATER.get(language, 'later')} ({at[5:10]}): "
    room = max_chars - len(mark) - len(clause)
    own = clip_phrase(own, room) if room >= 20 else clip_phrase(own, max(20, max_chars // 2))
    return clip(f"{own}{mark}{clause}", max_chars)


def evolution_tags(tags: list[str], neighbour: NoteWords) -> list[str]:
    """Tags an evolution may add: words of the neighbour (a word both notes share is one), or topics its
    words imply; never the causing note's alone."""
    return [t for t in tags if term_holds(t, neighbour) or topic_of(t, neighbour)]


# -- counting what the contract refused ------------------------------------------------------------------
NOTE_CHECKS = "note-checks.json"  # in the home: per note, what the contract did not keep (`zk stats --json`)


def record_checks(path: Path | None, note_id: str, construction: dict[str, int] | None = None,
                  evolution: int | None = None) -> None:
    """Keep one note's counts (processing it again replaces them): its construction's refused context and
    dropped keywords and tags, and the rewrites of its neighbours refused when it was linked."""
    if path is None:
        return
    from filelock import FileLock, Timeout

    try:  # processes (`zk add`'s worker, an import's) count into one file: one at a time, or counts are lost
        with FileLock(str(path.parent / ".note-checks.lock"), timeout=10):  # named as the home's other locks
            _record(path, note_id, construction, evolution)
    except (OSError, Timeout):
        pass  # a count is not worth failing a note's processing (a read-only or full home says so elsewhere)


def _record(path: Path, note_id: str, construction: dict[str, int] | None, evolution: int | None) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        data = {}
    data = data if isinstance(data, dict) else {}
    entry = data.setdefault(note_id, {})
    if construction is not None:
        entry.update(construction)
    if evolution is not None:
        entry["evolution"] = evolution
    if not any(entry.values()):
        data.pop(note_id, None)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(data), encoding="utf-8")
    temporary.replace(path)


def load_check_counts(path: Path) -> dict[str, int]:
    """What the contract refused over all notes: contexts replaced, keywords and tags dropped, rewrites of
    neighbours refused."""
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    except (OSError, ValueError):
        data = {}
    totals = {"context": 0, "keywords": 0, "tags": 0, "evolution": 0}
    for entry in data.values() if isinstance(data, dict) else []:
        for name in totals:
            value = entry.get(name, 0) if isinstance(entry, dict) else 0
            totals[name] += value if isinstance(value, int) else 0
    return totals
