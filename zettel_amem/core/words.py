"""The words a text is about, in Korean and English: question and function words left out, Korean
particles and verb endings stripped ("데이터베이스를" -> "데이터베이스", "이사했어" -> "이사"). Shared by
answering (what a question asks) and write-time checks (what an updating note is about)."""

from __future__ import annotations

import re

from .text import nfc

_EN_QUESTION_WORDS = {
    "what", "who", "whom", "am", "whose", "where", "when", "why", "which", "how", "much", "many", "does", "did", "do",
    "is", "was", "are", "were", "have", "has", "had", "i", "me", "my", "mine", "the", "a", "an", "of", "to", "in",
    "on", "at", "for", "and", "or", "it", "its", "this", "that", "now", "currently", "current", "these", "days",
    "date", "day", "time", "times", "go", "get", "got", "use", "used", "using", "be", "been", "from", "with",
    "still", "ever", "year", "there", "they", "she", "he", "her", "his", "their", "you", "your", "can", "could",
    "would", "should", "will", "reason", "come", "made", "make", "after", "before", "then", "first",
    # asking to be told or reminded names no subject: "Can you tell me …", "Remind me what …", "… per month"
    "tell", "remind", "remember", "recall", "know", "please", "about", "per",
    # asking for a story: "what happened with …", "how did … turn out"
    "happened", "happen", "story", "turn", "turned", "going"}
_KO_QUESTION_WORDS = {
    "뭐", "뭐야", "뭐였어", "무엇", "무슨", "누구", "누구야", "어디", "어디야", "언제", "언제야", "왜", "어떤",
    "어느", "몇", "지금", "요즘", "현재", "이제", "내", "나", "제", "저", "그", "그때", "얼마나", "어떻게", "했어",
    "했지", "있어", "있지", "하고", "해", "야", "이야", "거", "건", "것", "올해", "처음", "다", "뭐뭐", "누구누구",
    "했었어", "됐어", "주로", "뭘", "명", "번", "가장", "얼마", "정도", "날짜", "며칠", "날",
    # "어디서" asks where; "한", "할", "된", "될" are what "한다고", "할까" leave: the verb "do"
    "어디서", "어디에서", "어디로", "한", "할", "된", "될",
    # asking to be told or reminded: "날짜 알려줘", "기억나?", "궁금해"
    "알려줘", "알려", "말해줘", "기억나", "기억해", "궁금해", "혹시", "누가",
    # asking for a story: "무릎은 어떻게 됐지?", "무슨 일이 있었어?"
    "됐지", "됐나", "됐더라", "되었지", "돼", "일이", "있었어", "있었지", "경과",
    # "다니는 헬스장", "어디 다녀?": going somewhere by habit, English's "go to" (no subject either)
    "다니", "다니는", "다녀", "다녔어"}
# A question word with a copula or recall ending is still a question word: "뭐였지", "언제였더라",
# "어디였는지", "누구더라", "얼마였나"
_KO_ASKING = re.compile(
    r"(?:뭐|무엇|언제|어디|누구|얼마|며칠)(?:였|이었|이)?(?:지|더라|던가|는지|인지|나|냐|니|야|어)?"
)
# past-tense endings in general ("씹었어" -> "씹"), not whole verbs of the benchmark's questions
VERB_TAILS = ["었어", "았어", "었었어", "았었어"]
# Korean endings and particles, longest first: what is left is the word's stem ("이사했어" -> "이사").
_KO_TAILS = sorted([
    "했었어", "하셨어", "했어요", "했어", "했지", "했나", "했니", "한다", "하는", "해서", "하고", "하기", "됐어",
    "되었어", "였어", "였고", "이었어", "이야", "이에요", "인가", "이었", "였", "에서", "으로", "에게", "한테",
    "께서", "까지", "부터", "이랑", "랑", "하고", "처럼", "보다", "은", "는", "이", "가", "을", "를", "의", "에",
    "로", "와", "과", "도", "만", "야", "어", "고", "님", "들", "써", "줬어", "갔어", "샀어", "했", "셨어", "걸린다고",
    "라고", "다고", "이라고",
    # a copula or an embedded question's ending: "요일이지" -> "요일", "먹었는지" -> "먹었", "뭐였더라"
    "이지", "는지", "인지", "더라", "이더라"] + VERB_TAILS,
    key=len, reverse=True)
_COPULA_TAILS = {"이지", "인지", "더라", "이더라"}

_KO_TAIL_SET = set(_KO_TAILS)
KO_QUESTION_WORDS = frozenset(_KO_QUESTION_WORDS)
# English words that name no subject: question words and the commonest function words
STOP_WORDS = frozenset(_EN_QUESTION_WORDS | {
    "with", "but", "not", "very", "more", "into", "about", "over", "them", "our", "out", "off", "too", "all",
    "any", "just", "only", "than", "while", "also", "some", "here", "again", "still", "yet", "much", "who"})



# 하다's endings before a noun ("시작한 날", "준비했던 일"): cut only where two syllables stay ("대한" stays).
_ADNOMINAL = ("했던", "하던", "하신", "한")


def korean_stem(word: str) -> str:
    """`word` without one trailing particle or verb ending (a stem of at least one syllable)."""
    for tail in _ADNOMINAL:
        if word.endswith(tail) and len(word) - len(tail) >= 2:
            return word[: -len(tail)]
    for tail in _KO_TAILS:  # one tail: "데이터베이스를" -> "데이터베이스"; "이사했어" -> "이사"
        shortest = 2 if tail in _COPULA_TAILS else 1  # "요일이지" -> "요일", but "아이지" stays
        if word.endswith(tail) and len(word) - len(tail) >= shortest and _particle_fits(word[-len(tail) - 1], tail):
            return word[: -len(tail)]
    return word


# A particle's form follows the last sound of its noun: "차가" but "작가" is a word (가 never follows a
# closed syllable such as 작); "책을" but "바다을" never comes.
_AFTER_OPEN = {"가", "는", "를", "와", "랑", "야"}
_AFTER_CLOSED = {"이", "은", "을", "과", "이랑", "으로", "이야"}


def _particle_fits(syllable: str, tail: str) -> bool:
    code = ord(syllable) - 0xAC00
    if not 0 <= code < 11172 or (tail not in _AFTER_OPEN and tail not in _AFTER_CLOSED and tail != "로"):
        return True
    final = code % 28
    if tail == "로":
        return final in (0, 8)  # after a vowel or ㄹ: "서울로"
    if tail == "으로":
        return final not in (0, 8)
    return (final == 0) == (tail in _AFTER_OPEN)


def subject_terms(text: str) -> list[str]:
    """The words a question is about: no question words, Korean particles and endings stripped."""
    out: list[str] = []
    previous = ""
    text = re.sub(r"\bright now\b", "now", nfc(text), flags=re.I)  # "right" alone may be a side: "right knee"
    for word in re.findall(r"[0-9A-Za-z][0-9A-Za-z.'’-]*[0-9A-Za-z]|[0-9A-Za-z]|[\uac00-\ud7a3]+", text):
        counter, previous = previous == "몇", word
        low = word.lower().removesuffix("'s").removesuffix("’s")
        if counter or low in _EN_QUESTION_WORDS or word in _KO_QUESTION_WORDS or _KO_ASKING.fullmatch(word):
            continue  # "몇 도야": a unit, no subject
        if "\uac00" <= word[0] <= "\ud7a3":
            if word in _KO_TAIL_SET:  # a particle after a Latin word: "8km에서", "DB는"
                continue
            low = korean_stem(word)
            if low in _KO_QUESTION_WORDS or len(low) < 1:
                continue
        if low not in out:
            out.append(low)
    return out


# English verbs whose past is not "-ed": a question's "give" meets a note's "gave", and the reverse ("won"
# and "left" are left out: a currency and a side).
_IRREGULAR = {
    "give": ("gave", "given"), "go": ("went", "gone"), "take": ("took", "taken"), "buy": ("bought",),
    "bring": ("brought",), "make": ("made",), "sell": ("sold",), "pay": ("paid",), "see": ("saw", "seen"),
    "meet": ("met",), "find": ("found",), "get": ("got", "gotten"), "tell": ("told",), "say": ("said",),
    "eat": ("ate", "eaten"), "drive": ("drove", "driven"), "ride": ("rode", "ridden"), "run": ("ran",),
    "lose": ("lost",), "break": ("broke", "broken"), "begin": ("began", "begun"), "teach": ("taught",),
    "think": ("thought",), "feel": ("felt",), "keep": ("kept",), "send": ("sent",), "spend": ("spent",),
    "write": ("wrote", "written"), "swim": ("swam", "swum"), "sleep": ("slept",), "fall": ("fell", "fallen"),
    "hold": ("held",), "lend": ("lent",), "catch": ("caught",), "fly": ("flew", "flown"), "come": ("came",),
    "become": ("became",), "choose": ("chose", "chosen"), "wear": ("wore", "worn"), "forget": ("forgot",),
    "sit": ("sat",), "stand": ("stood",), "build": ("built",), "bite": ("bit", "bitten"), "sing": ("sang",),
    "draw": ("drew", "drawn"), "grow": ("grew", "grown"), "throw": ("threw", "thrown"), "hurt": ("hurt",),
    "quit": ("quit",), "shut": ("shut",), "cut": ("cut",), "put": ("put",), "lead": ("led",)}
_VERB_FORMS = {form: (base, *forms) for base, forms in _IRREGULAR.items() for form in (base, *forms)}


def regular_stem(word: str) -> str:
    """A regular English word's stem, for telling two forms of one word alike ("running", "runs" -> "run";
    "planned" -> "plan"): -ing, -ed and -s left off, a doubled last consonant undone. Other words as given.
    (answering/evidence.english_stem cuts less, for matching at a word's start.)"""
    word = word.lower()
    if not word.isascii() or len(word) < 5:
        return word
    for suffix in ("ing", "ed", "s"):
        if word.endswith(suffix) and not word.endswith("ss") and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if suffix != "s" and base[-1] == base[-2] and base[-1] not in "aeioulsz":
                base = base[:-1]  # running -> run, planned -> plan; "called", "missed" keep theirs
            return base
    return word


def verb_forms(word: str) -> tuple[str, ...]:
    """An English verb's other forms when it is irregular ("gave" -> give, gave, given), else ()."""
    return _VERB_FORMS.get(word.lower(), ())


# Family words, by meaning, in both languages (the embedder put "엄마" next to "father"): a journal names
# its people by them, in whichever language the day's entry is written.
KIN = (("mom", "mother", "엄마", "어머니"), ("dad", "father", "아빠", "아버지"), ("grandma", "grandmother", "할머니"),
       ("grandpa", "grandfather", "할아버지"), ("wife", "아내"), ("husband", "남편"), ("son", "아들"),
       ("daughter", "딸"), ("parents", "부모님"))


def kin_group(word: str) -> tuple[str, ...]:
    """The family word's group ("mom" -> mom, mother, 엄마, 어머니), or ()."""
    return next((g for g in KIN if word.lower() in g), ())


# -- Korean verbs: the stem a conjugated form is made of ("샀어", "샀다" -> 사; "달려", "달렸다", "달리기" -> 달리) --
# Endings after a stem or after its past syllable ("먹었다" = 먹 + 었 + 다; "갔었지" = 갔 + 었지), longest first.
_KO_VERB_ENDINGS = sorted({
    "다", "는다", "어", "아", "여", "요", "어요", "아요", "지", "지요", "죠", "고", "기", "는", "니", "냐",
    "나", "네", "자", "서", "어서", "아서", "면", "으면", "며", "으며", "는데", "던", "더라", "습니다", "었",
    "았", "였", "었어", "았어", "었다", "았다", "었지", "았지", "었고", "았고", "었는데", "았는데", "었니",
    "았니", "었나", "았나", "었네", "았네", "었던", "았던", "었더라", "았더라", "었어요", "았어요", "었습니다",
    "았습니다", "었었", "았었", "었었어", "았었어", "었었다", "았었다", "었었지", "았었지", "었을", "았을",
}, key=len, reverse=True)
# A stem's last vowel and the 어/아 ending written as one vowel: 리+어 = 려, 보+아 = 봐, 주+어 = 줘, 하+여 = 해,
# 되+어 = 돼, 지+어 = 져 (medial indexes of Hangul syllables)
_CONTRACTED = {6: 20, 9: 8, 14: 13, 1: 0, 10: 11}  # ㅕ->ㅣ, ㅘ->ㅗ, ㅝ->ㅜ, ㅐ->ㅏ (하다), ㅙ->ㅚ
_PAST_FINAL = 20  # ㅆ: the past 았/었 merged into an open stem ("샀" = 사 + 았)
_PRESENT_FINAL = 4  # ㄴ: the present ㄴ다 merged into an open stem ("달린다" = 달리 + ㄴ다)


def _syllable(initial: int, medial: int, final: int = 0) -> str:
    return chr(0xAC00 + (initial * 21 + medial) * 28 + final)


def _undo_contraction(word: str, past: bool) -> str:
    """`word` with its last syllable's merged ending taken off: "샀" -> "사", "렸" -> "리", "려" -> "리",
    "했" -> "하"; a syllable with no merged ending stays."""
    code = ord(word[-1]) - 0xAC00
    initial, medial, final = code // 588, (code % 588) // 28, code % 28
    if past and final != _PAST_FINAL or not past and final != 0:
        return word
    medial = _CONTRACTED.get(medial, medial) if medial != 1 or initial == 18 else medial  # ㅐ only in 해 (하+여)
    return word[:-1] + _syllable(initial, medial)


def korean_verb_stem(word: str) -> str:
    """The stem of a Korean verb form, or "" when `word` is no verb form (a noun, a noun with its particle):
    "샀어", "샀다" -> "사"; "갔었지", "갔다" -> "가"; "달려", "달렸다", "달리기를" -> "달리"; "이사했어" -> "이사하".
    A form is a verb's when an ending is taken off or its last syllable holds a merged ending; a noun keeps no
    stem, so "사과를" meets no "샀다"."""
    word = nfc(word)
    if not word or not all("\uac00" <= ch <= "\ud7a3" for ch in word):
        return ""
    return _verb_stem(word, whole=True) or (_verb_stem(korean_stem(word), whole=False) if korean_stem(word) != word
                                           else "")


def _verb_stem(word: str, whole: bool) -> str:
    """`korean_verb_stem` of a word; `whole`: as written (a form with a particle taken off is a noun's when
    only a contraction would make it a verb's: "사과를")."""
    ending = next((e for e in _KO_VERB_ENDINGS if word.endswith(e) and len(word) > len(e)), "")
    stem = word[: len(word) - len(ending)]
    past = _undo_contraction(stem, past=True)
    if past != stem:
        return past
    if ending == "다" and (ord(stem[-1]) - 0xAC00) % 28 == _PRESENT_FINAL:  # "달린다" = 달리 + ㄴ다
        return stem[:-1] + chr(ord(stem[-1]) - _PRESENT_FINAL)
    if ending:
        return stem
    plain = _undo_contraction(stem, past=False)  # "달려": 달리 + 어 in one syllable
    return plain if whole and plain != stem and len(stem) >= 2 else ""


# Verbs that name what is asked when nothing else does ("where did I go?", "what did I get?"): going, getting,
# using, making, coming. "do", "have" and "be" ask nothing of their own.
_ASKING_VERBS_EN = frozenset({"go", "get", "got", "use", "used", "using", "make", "made", "come"})
_LIGHT_STEMS_KO = frozenset({"하", "되", "있", "이"})  # 했어, 됐어, 있어: "do", "become", "be"


def asking_verbs(text: str) -> list[str]:
    """The verbs a question with no subject word asks with: "where did I go?" -> ["go"], "뭐 샀어?" -> ["샀어"],
    "어디 다녀?" -> ["다녀"] (a Korean verb written as asked: its stem meets the notes' forms)."""
    out: list[str] = []
    for word in re.findall(r"[A-Za-z]+|[\uac00-\ud7a3]+", nfc(text)):
        low = word.lower()
        if low in _ASKING_VERBS_EN or ("\uac00" <= word[0] <= "\ud7a3" and not _KO_ASKING.fullmatch(word)
                                       and korean_verb_stem(word) not in ("", *_LIGHT_STEMS_KO)):
            out.append(low)
    return list(dict.fromkeys(out))


# Words that only ask (what, when, why, how many, now; 뭐, 언제, 왜, 몇, 지금) and the words that carry them: a
# question made only of these has nothing to look for.
def only_asks(text: str) -> bool:
    """Whether every word of `text` is a question or function word (`subject_terms` finds none and it asks
    with no verb of its own): "when?", "why?", "now?", "how many?", "언제?"."""
    return not subject_terms(text) and not asking_verbs(text)
