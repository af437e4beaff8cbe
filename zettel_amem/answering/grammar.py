"""How a journal sentence tells what it tells (#59): whether it happened, and whose it is.

Read from grammar, in Korean and English, never from a question's words:
- **happened**: a clause tells an event that took place when it is not negated ("no running for two weeks",
  "didn't go", "안 갔다", "가지 못했다"), not a wish, a duty or a supposition ("I should go to the dentist",
  "가야겠다", "가고 싶다", "if", "maybe") and not planned or arranged for later (`date_mentions.tense`:
  "will", "going to", "booked", "기로", "예정"). A count counts only such clauses (counting.py).
- **retracted**: a date written in a negated clause ("not on Friday, it is on Monday", "금요일이 아니라") is not
  the day the sentence gives.
- **someone else's**: a sentence whose subject is another person ("she recommended …", "동생이 …", "지수 님이
  …") and that does not speak of the writer ("I", "my", "나", "내") tells someone else's state, not the
  writer's: a "now" question about the writer is not answered by it (journal_answer.answer_now).
"""

from __future__ import annotations

import re

from ..core.date_mentions import tense
from ..core.words import KIN

# Clauses: a sentence cut at punctuation and at the conjunctions that start a new clause ("went, but …",
# "갔는데 …", "갔고 …", "금요일이 아니라 …").
# A Korean connective ending closes its clause, not "-고" before an auxiliary ("가고 싶다", "하고 있다") nor "-려고".
_CLAUSE_BREAK = re.compile(r"[,;:—–]|\s(?=(?:but|because|although|though|while|so|whereas|then)\s)"
                           r"|(?:(?<=는데)|(?<=지만)|(?<=아니라)|(?<=아니고)|(?<=[가-힣]고)(?<!려고))"
                           r"\s(?!싶|있|말|나서|계)", re.I)
_NEGATED = re.compile(r"\b(?:not|never|no|without|cancel+ed|skipped|missed)\b|n't\b"
                      r"|(?<![가-힣])(?:안|못)\s+[가-힣]|(?<![가-힣])못(?:했|갔|가|해|먹|봤|왔)|지\s?(?:않|못|말)"
                      r"|수\s?없었|아니(?:라|고|다|야|었|에요)|취소", re.I)
# A wish, a duty, a supposition or a condition: what is not (yet) so
_MODAL = re.compile(r"\b(?:should|must|ought|wants? to|wanted to|wanna|wish|hope|need(?:s|ed)? to|ha(?:ve|s|d) to"
                    r"|would like|might|maybe|perhaps|if)\b|'d like"
                    r"|싶|야겠|야지|야\s?(?:해|한다|했|하는|할)|(?<=[가-힣])면\s|려고|아마|지도\s?모르", re.I)

_FIRST_PERSON = re.compile(r"\b(?:I|my|me|mine|myself|we|our|us)\b"
                           r"|(?<![가-힣])(?:나|내|제|저|우리)(?:는|가|도|의|를|랑|한테)?(?![가-힣])", re.I)
_OTHERS_KO = {"친구", "동생", "언니", "오빠", "형", "누나", "그녀", "그", "그들"}
_KO_PEOPLE = "|".join(sorted({w for group in KIN for w in group if re.match("[가-힣]", w)} | _OTHERS_KO,
                             key=len, reverse=True))
_THIRD_PERSON = re.compile(rf"\b(?:she|he|they)\b|(?<![가-힣])(?:{_KO_PEOPLE})(?:이|가|은|는|께서|도)(?![가-힣])"
                           r"|(?:님|씨)(?:이|가|은|는|께서)(?![가-힣])", re.I)


def clauses(sentence: str) -> list[str]:
    """The sentence's clauses (`_CLAUSE_BREAK`), each stripped; the sentence itself when it has one."""
    return [c.strip() for c in _CLAUSE_BREAK.split(sentence) if c and c.strip()] or [sentence]


def happened(clause: str) -> bool:
    """Whether a clause tells something that took place: not negated, no wish, duty or supposition, not
    planned for later."""
    return not (_NEGATED.search(clause) or _MODAL.search(clause) or tense(clause) == "future")


def retracted(sentence: str) -> set[str]:
    """The words of the sentence's negated clauses ("not on Friday"): a date written there is not its day."""
    return {c for c in clauses(sentence) if _NEGATED.search(c)}


def someone_elses(sentence: str) -> bool:
    """Whether a sentence tells another person's doing or state and says nothing of the writer."""
    return bool(_THIRD_PERSON.search(sentence)) and not _FIRST_PERSON.search(sentence)


_NAMED = re.compile(r"(?<=[a-z,]\s)[A-Z][a-z]+")  # an English name within a question ("What does Mina do now?")


def about_writer(question: str) -> bool:
    """Whether a question asks about the writer: it speaks of "I", "my", "나", "내", or names no one else."""
    return bool(_FIRST_PERSON.search(question)) or not (_THIRD_PERSON.search(question) or _NAMED.search(question))
