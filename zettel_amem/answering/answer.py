"""Answers built for a small model: a short answer, then the ids of the notes it came from.

- **Grammar-bound.** The model fills `{"answer": "...", "ids": [...]}`: the answer is one short string
  (no room to echo the prompt), the ids an `enum` of the notes it was given (it cannot invent one), at
  least one of them (every answer cites).
- **Declining is decided from retrieval evidence, not by the model.** Asked to judge "do the notes
  answer this?", the bundled 0.5B model declined most answerable questions (README). Instead: if the
  question names a person who speaks in the retrieved turns, but none of the turns that best cover what
  is asked (the question without the name) is that person's own words, the notes are about someone
  else ("what did Jon say?" when only Gina said it) and zk says "No information available." without a
  model call. Calibrated on LoCoMo conv-26 and conv-30 (bench/calibrate_decline.py).
- **Extractive fallback.** If the model fails (bad output, interrupted), the answer is the note sentence
  that covers most of the question, marked as such: the user still gets their own words, with the id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..amem.supersede import updating_entries
from ..backends.llm import LLMError, mask_spec
from ..core import dates
from ..core.config import Settings
from ..core.errors import InvalidInput
from ..core.models import Note, ServerReach, Usage
from ..core.passages import as_notes, entry_id_of, passage_id, row_passages
from ..core.prompts import language_of
from ..core.text import is_blank, keyword_terms, name_pattern, nfc, statements
from ..retrieval.retrieve import CoverageIndex, Hit, render_hit
from .date_guard import held_to_citations
from .evidence import best_sentence
from .journal_answer import NOTHING_ASKED, answer_journal
from .reader import ModelReader
from .term_bridge import bridge_terms
from .view import View

if TYPE_CHECKING:
    from ..parts import Parts

DECLINED = "No information available."
NO_MODEL_CALLED = "a journal question is answered from your notes' own words; no model was called"
JOURNAL_POOL = 30  # journal answers read this many hits (no links): the newest note may rank lower
WIDER_POOL = 4 * JOURNAL_POOL  # candidates per list of the wider look; the first search ranks as deep (one ranking)
# ... and up to this many of the next 30 in the question's other language: search ranks notes in the
# question's language first (a Korean question's 30 held no English note in 14 of 44 bench questions)
JOURNAL_OTHER_LANGUAGE = 10
DAY_WINDOW = 7  # a question about a day reads the entries this many days either side (a later one says "어제")
ANSWER_MAX_CHARS = 160  # a short answer: a name, a place, a date, a phrase, one short sentence
_SENTENCE = re.compile(r"[^.!?。\n]+[.!?。]?")
# What the answer string may hold: no Chinese characters or kana for Korean/English questions (a small
# Qwen drifts into Chinese), nothing but JSON-safe text otherwise.
_NO_CJK = '[^"\\\\\u3040-\u30ff\u3400-\u9fff\n]'
_ANY = '[^"\\\\\n]'


@dataclass
class Decision:
    """How an answer was made: "model", "extractive" (the model failed) or "declined" (no evidence)."""

    mode: str
    reason: str = ""


def answer_schema(short_ids: list[str], question: str, max_chars: int = ANSWER_MAX_CHARS) -> dict[str, Any]:
    char = _NO_CJK if language_of(question) in ("Korean", "English") else _ANY
    ids = {"type": "array", "items": {"type": "string", "enum": short_ids}, "minItems": 1,
           "maxItems": min(3, len(short_ids))} if short_ids else {"type": "array", "maxItems": 0}
    return {
        "title": "answer",
        "type": "object",
        "properties": {
            "answer": {"type": "string", "pattern": f"^{char}{{1,{max_chars}}}$"},
            "ids": ids,
        },
        "required": ["answer", "ids"],
    }


def read_answer(data: dict[str, Any], hits: list[Hit]) -> tuple[str, list[str]]:
    """The answer text and the full ids it cites (only notes it was given, each once, in its order)."""
    by_short = {h.note.short_id: h.note.id for h in hits}
    text = " ".join(str(data.get("answer") or "").split())
    ids = data.get("ids") if isinstance(data.get("ids"), list) else []
    cited = [by_short[i] for i in dict.fromkeys(i for i in ids if isinstance(i, str)) if i in by_short]
    return text, cited


def supporting(text: str, cited: list[str], hits: list[Hit]) -> list[str]:
    """The cited notes that share a word with the answer, read as the model saw them (with the day and the
    resolved dates); all of them when none does ("yes", a count). A 0.5B model fills its id list with
    notes the answer never came from; a citation a user cannot trace erodes trust in the rest."""
    words = set(keyword_terms(text))
    shown = {h.note.id: set(keyword_terms(render_hit(h))) for h in hits}
    return [i for i in cited if words & shown.get(i, set())] or cited


def quotes_of(text: str, question: str, cited: list[Hit]) -> list[dict[str, str]]:
    """Per cited note (a matched passage of a long entry), its entry id and the sentence the answer most
    likely came from: the one sharing most words with the answer, then the question (`zk ask --json`)."""
    terms = keyword_terms(text) + keyword_terms(question)
    quotes = []
    for hit in cited:
        units = [(passage_id(hit.note.id, p.index), p.text) for p in hit.passages] or [(hit.note.id, hit.note.content)]
        sentence = {u: best_sentence(Note(id=u, content=t, at=hit.note.at), terms) for u, t in units}
        unit = max(sentence, key=lambda u: len(set(keyword_terms(sentence[u])) & set(terms)))
        quotes.append({"entry_id": entry_id_of(hit.note.id), "passage_id": unit, "at": hit.note.at,
                       "text": sentence[unit]})
    return quotes


def echoes_prompt(text: str, prompt_lines: list[str]) -> bool:
    """An answer that repeats a line of the prompt's own frame ("Today is ... Question: ...")."""
    folded = text.casefold()
    return any(line and line.casefold() in folded for line in prompt_lines)


def speakers_named(question: str, hits: list[Hit]) -> set[str]:
    """Speakers of the retrieved turns whose name the question uses (word boundaries, any case)."""
    speakers = {h.note.speaker for h in hits if h.note.speaker}
    return {s for s in speakers if re.search(name_pattern(s), nfc(question), re.IGNORECASE)}


Similarity = Callable[[str, list[Hit]], list[float]]  # each hit's cosine to a text


def decide(question: str, hits: list[Hit], settings: Settings, pool: Callable[[], list[Hit]] | None = None,
           similarity: Similarity | None = None) -> Decision | None:
    """A decline decided from the evidence, or None (let the model answer). `pool()` gives the wider
    ranked list (`answer_attribution_pool` direct hits) the attribution check reads; default: `hits`.
    `similarity(text, hits)` gives each hit's cosine to a text (without it, words alone decide)."""
    direct = [h for h in hits if h.via is None]
    if not direct:
        return Decision("declined", "no note matches the question")
    named = speakers_named(question, hits)  # session turns name the speakers too
    if len(named) == 1 and settings.answer_attribution_hits > 0:
        person = next(iter(named))
        evidence = pool() if pool is not None else direct
        scores = attribution_scores(question, person, evidence, settings.answer_attribution_vector_weight,
                                    similarity)
        order = sorted(range(len(evidence)), key=lambda i: (-scores[i], i))
        top = [evidence[i] for i in order[: settings.answer_attribution_hits] if scores[i] > 0]
        theirs = max((scores[i] for i in order if evidence[i].note.speaker == person), default=0.0)
        if top and not any(h.note.speaker == person for h in top) \
                and theirs < settings.answer_attribution_margin * scores[order[0]]:
            return Decision("declined", f"the notes that match are not {person}'s own words")
    return None


def without_person(question: str, person: str) -> str:
    """What is asked about someone: the question without their name (and its possessive)."""
    return re.sub(name_pattern(person), " ", nfc(question), flags=re.IGNORECASE)


def attribution_scores(question: str, person: str, hits: list[Hit], vector_weight: float = 0.0,
                       similarity: Similarity | None = None) -> list[float]:
    """How well each hit matches what is asked about `person`, whoever said it: the share of the question's
    words its statements cover, plus `vector_weight` times its cosine to the question, both without the
    name (the name matches every turn of that speaker; what is asked about decides who said it). Questions
    in a turn do not count as covering: "Did you make that bowl?" is the asker's question about the other."""
    topic = without_person(question, person)
    scores = CoverageIndex([statements(h.note.content) for h in hits]).scores(topic)
    if vector_weight > 0 and similarity is not None and hits:
        scores = [c + vector_weight * v for c, v in zip(scores, similarity(topic, hits))]
    return scores


def is_journal(hits: list[Hit]) -> bool:
    """Whether the retrieved notes are journal notes (`zk add`, no speaker): none is a chat turn. LoCoMo
    and other imported chats (every turn has a speaker) keep the model path unchanged."""
    direct = [h for h in hits if h.via is None]
    return bool(direct) and not any(h.note.speaker for h in hits)


def extractive(question: str, hits: list[Hit]) -> tuple[str, list[str]]:
    """The sentence of the best notes that covers most of the question (ties: the better-ranked note)."""
    candidates = [(hit, sentence.strip()) for hit in hits[:3] for sentence in _SENTENCE.findall(hit.note.content)
                  if sentence.strip()]
    if not candidates:
        return "", []
    scores = CoverageIndex([s for _, s in candidates]).scores(question)
    best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
    hit, sentence = candidates[best]
    return sentence, [hit.note.id]


@dataclass
class Answer:
    """`ask()` result: iterate `pieces` for the answer text (the CLI renders it as it comes); then
    `text`, `cited` (full ids of the notes it came from, all among `notes`), `mode` ("model",
    "extractive" when the model failed or none is used, "declined" when the evidence does not support an
    answer), `reason` and `model` (the model called, masked; "" when none was) are set. `notes` is the
    context the model was given; `server` whether a configured model server can be reached (`Memory.ask`)."""

    pieces: Iterator[str]
    notes: list[Hit]
    text: str = ""
    usage: Usage = field(default_factory=Usage)
    cited_ids: list[str] = field(default_factory=list)
    mode: str = "model"
    reason: str = ""
    model: str = ""
    server: ServerReach | None = None
    # journal answers: per quoted passage, its entry id, passage id, time and the text used
    quotes: list[dict[str, str]] = field(default_factory=list)
    # journal answers: what `zk ask` shows (view.py): the headline, the supporting sentences, how sure
    view: View | None = None

    def cited(self) -> list[str]:
        return list(self.cited_ids)


class Answerer:
    """`Memory.ask`: retrieve, decide from the evidence whether to answer, then one grammar-bound call
    (or the extractive fallback)."""

    def __init__(self, parts: Parts, search: Callable[..., list[Hit]]):
        """`parts`: the notebook's settings, prompts, store, model and query embeddings; `search`: the
        owner's validated search (`Memory.search`), so answering never holds or imports `Memory`."""
        self.parts, self.search = parts, search
        self._vectors: dict[str, Any] = {}
        self._words: Any = None  # WordVectors, made on first use
        self._updaters: list[Note] = []  # what `updating_units` read for the last journal answer
        self._day: list[Note] = []  # ... and `day_units`

    def ask(self, question: str, k: int | None = None, budget_tokens: int | None = None, *,
            today: str | None = None, hits: list[Hit] | None = None, memory_block: str = "",
            **search_options) -> Answer:
        """Retrieve (or take `hits`), then answer briefly with the ids it came from (see answer.py).
        `search_options` go to `search()`; `memory_block` is what the upper tiers add (episode hints,
        graph facts), placed before the notes."""
        if is_blank(question):  # also zero-width spaces and the Hangul filler, as a note is (memory.validate_content)
            raise InvalidInput("the question is empty")
        if not any(ch.isalnum() for ch in question):  # punctuation, emoji: nothing to search for
            raise InvalidInput(NOTHING_ASKED)
        if hits is None:
            budget = budget_tokens or self.parts.settings.context_budget_tokens
            if self.parts.settings.answer_journal and self.parts.store.has_passages(self.parts.notebook):
                search_options.setdefault("pool", WIDER_POOL)  # `journal`'s wider look reuses this ranking
            hits = self.search(question, k, budget_tokens=budget, **search_options)
        # notes written with `zk add`: extractive and time-aware (journal_answer.py)
        if self.parts.settings.answer_journal and is_journal(hits):
            return self.journal(question, hits)
        declined = decide(question, hits, self.parts.settings, lambda: self.attribution_pool(question),
                          self.similarity) if not memory_block.strip() or hits else None
        if declined is not None:  # decided from the evidence, without spending a model call
            return Answer(pieces=iter([DECLINED]), notes=hits, text=DECLINED, mode=declined.mode,
                          reason=declined.reason)
        answer = Answer(pieces=iter(()), notes=hits)

        def pieces() -> Iterator[str]:
            self._answer(question, hits, memory_block, today, answer)
            yield answer.text

        answer.pieces = pieces()
        return answer

    def journal(self, question: str, hits: list[Hit]) -> Answer:
        """A journal answer from the hits and a wider pool (the newest note on a subject may rank
        below the first k), read passage by passage (a long entry's sentences are quoted, not its
        start); no model call."""
        pool = {h.note.id: h for h in hits}
        self._updaters, self._day = [], []
        wider = self.search(question, 2 * JOURNAL_POOL, follow_links=False, session_turns=0, reuse_ranking=True,
                            pool=WIDER_POOL)
        korean = language_of(question) == "Korean"
        other = [h for h in wider[JOURNAL_POOL:] if bool(re.search("[\uac00-\ud7a3]", h.note.content)) != korean]
        for hit in wider[:JOURNAL_POOL] + other[:JOURNAL_OTHER_LANGUAGE]:
            pool.setdefault(hit.note.id, hit)
        units = self.with_passage_vectors([h.note for h in pool.values()])
        translate = self.translate if self.parts.settings.answer_journal_translate else None
        reader = ModelReader(self.parts.llm, self.parts.prompts, self.parts.settings.answer_reader_passages,
                             mask_spec(self.model_name())) if self.parts.settings.answer_journal_reader else None
        reply = answer_journal(question, units, self.note_cosines, translate, self.updating_units, reader,
                               self.day_units)
        if reply.view is not None and reply.view.line is not None:  # where search ranked the quoted entry
            ranked = list(dict.fromkeys(entry_id_of(h.note.id) for h in wider))
            entry = reply.view.line.entry_id
            reply.view.signals["search_rank"] = float(ranked.index(entry) + 1 if entry in ranked else 99)
        units += [u for u in self._updaters + self._day if u.id not in {x.id for x in units}]
        by_id = {u.id: u for u in units}
        quotes = [{"entry_id": entry_id_of(i), "passage_id": i, "at": by_id[i].at, "text": by_id[i].content}
                  for i in reply.cited if i in by_id]
        cited = list(dict.fromkeys(entry_id_of(i) for i in reply.cited))
        # a cited newer value (an update hit), or an entry of the day asked about that search did not rank
        for via, read in (("updates", self._updaters), ("day", self._day)):
            found = {entry_id_of(u.id): u for u in read}
            pool.update({i: Hit(self.parts.store.get(i) or found[i], 0.0, via=via) for i in cited
                         if i not in pool and i in found})
        given = hits + [pool[i] for i in cited if i not in {h.note.id for h in hits} and i in pool]
        answer = Answer(pieces=iter([reply.text]), notes=given, text=reply.text, cited_ids=cited,
                        mode=reply.mode, reason=reply.reason or (reader and reader.said) or NO_MODEL_CALLED,
                        quotes=quotes, view=reply.view)
        if reply.view is not None and reply.mode != "declined" and self.parts.settings.llm_model.startswith("openai:"):
            self.write(question, answer)
        return answer

    def write(self, question: str, answer: Answer) -> None:
        """A model server writes the headline from the view's sentences (writer.py); when it fails, the quoted
        headline stays and the reason says why."""
        from .writer import write_headline

        answer.model = mask_spec(self.model_name())
        try:
            answer.view, answer.usage = write_headline(self.parts.llm, self.parts.prompts, question, answer.view,
                                                       dates.today().isoformat())
        except LLMError as exc:
            answer.reason = f"could not write the headline, so it is quoted from your notes: {exc}"
            return
        answer.text, answer.mode, answer.pieces = answer.view.headline, "model", iter([answer.view.headline])
        answer.reason = "written from the sentences shown; dates held to the ones they give"

    def model_name(self) -> str:
        llm = self.parts.llm
        return str(getattr(llm, "name", "") or type(llm).__name__)

    def day_units(self, day: str) -> list[Note]:
        """The journal's passages written within `DAY_WINDOW` days of `day` (ISO), read from the store as `zk on`
        reads a day: a question about a day is answered from its entries and those that date it."""
        from datetime import date, timedelta

        first = date.fromisoformat(day)
        since = first - timedelta(days=min(DAY_WINDOW, first.toordinal() - 1))
        until = first + timedelta(days=min(DAY_WINDOW + 1, date.max.toordinal() - first.toordinal()))
        notes = self.parts.store.newest(self.parts.notebook, None, since=since.isoformat(),
                                        until=until.isoformat() if until > first else None)
        self._day = self.with_passage_vectors([n for n in notes if not n.speaker])
        return self._day

    def updating_units(self, units: list[Note]) -> list[Note]:
        """The passages (or short notes) that update any of `units` (typed *updates* links, supersede.py),
        read from the store: a "now" question reads the newer value even when its words did not rank."""
        have = {entry_id_of(u.id) for u in units}
        missing = [i for i in updating_entries(units) if i not in have]
        self._updaters = self.with_passage_vectors(list(self.parts.store.get_many(missing).values())) \
            if missing else []
        return self._updaters

    def with_passage_vectors(self, notes: list[Note]) -> list[Note]:
        """The notes as answers read them (`passages.as_notes`), each passage's vector remembered for
        `note_cosines`."""
        import numpy as np

        long = [n for n in notes if n.passages]
        for note_id, row in self.parts.store.passage_rows([n.id for n in long]).items():
            passages = row_passages(row)
            if passages and passages[0].vector is not None:
                blank = np.zeros(len(passages[0].vector), dtype=np.float32)  # past the embedded passages: by words
                for passage in passages:
                    self._vectors[passage_id(note_id, passage.index)] = \
                        blank if passage.vector is None else np.asarray(passage.vector, dtype=np.float32)
        return as_notes(notes)

    def translate(self, terms: list[str], question: str, notes: list[Note]) -> dict[str, list[str]]:
        """The question's terms in the journal's other language, among the notes' words (term_bridge.py)."""
        return bridge_terms(terms, question, notes, self.word_vectors)

    def word_vectors(self, words: list[str]) -> Any:
        """Passage embeddings of single words, each computed once and kept in the cache dir
        (backends/word_vectors.py: a journal's vocabulary was most of a cold `zk ask`)."""
        if self._words is None:
            from ..backends.word_vectors import WordVectors
            from ..core.config import cache_dir

            embedder = self.parts.embedder
            self._words = WordVectors(embedder.embed_passages, embedder.name, cache_dir() / "word-vectors")
        return self._words.vectors(words)

    def note_cosines(self, text: str, notes: list[Note]) -> list[float]:
        """Each note's raw-words vector's cosine to `text` (vectors read once per Answerer)."""
        import numpy as np

        missing = [n.id for n in notes if n.id not in self._vectors and not n.passages]
        for note_id, note in self.parts.store.get_many(missing, with_vector=True).items():
            self._vectors[note_id] = np.asarray(note.raw_vector, dtype=np.float32)
        query = np.asarray(self.parts.query_vector(text), dtype=np.float32)
        return [float(self._vectors[n.id] @ query) if n.id in self._vectors else 0.0 for n in notes]

    def attribution_pool(self, question: str) -> list[Hit]:
        """The wider list of direct hits `answer.decide` reads to tell who said what is asked about."""
        pool = self.parts.settings.answer_attribution_pool
        return self.search(question, pool, follow_links=False, session_turns=0)

    def similarity(self, text: str, hits: list[Hit]) -> list[float]:
        """Cosine of each hit's raw-words embedding to `text` (one query embedding, one read)."""
        import numpy as np

        stored = self.parts.store.get_many([h.note.id for h in hits], with_vector=True)
        query = np.asarray(self.parts.query_vector(text), dtype=np.float32)
        vectors = [stored[h.note.id].raw_vector if h.note.id in stored else None for h in hits]
        return [float(np.dot(np.asarray(v, dtype=np.float32), query)) if v is not None else 0.0 for v in vectors]

    def _answer(self, question: str, hits: list[Hit], memory_block: str, today: str | None,
                answer: Answer) -> None:
        notes_block = "\n".join(render_hit(h) for h in hits)
        today = today or dates.today().isoformat()
        user = self.parts.prompts.render("answer", notes=notes_block, question=question.strip(), today=today,
                                   memory=memory_block.strip() + "\n" if memory_block.strip() else "")
        system = self.parts.prompts.raw("answer_system").strip()
        if self.parts.settings.answer_decline:
            system += " " + self.parts.prompts.raw("answer_decline").strip()
        schema = answer_schema([h.note.short_id for h in hits], question)
        frame = [f"Today is {today}", f"Question: {question.strip()}"]
        llm = self.parts.llm
        answer.model = mask_spec(self.model_name())
        try:
            limit = self.parts.settings.answer_max_tokens
            data, answer.usage = llm.complete_json(system, user, schema, limit)
            answer.text, answer.cited_ids = read_answer(data, hits)
            answer.cited_ids = supporting(answer.text, answer.cited_ids, hits)
            given = {h.note.id: h for h in hits}
            held = held_to_citations(answer.text, [given[i].note for i in answer.cited_ids], question,
                                     language_of(question) == "Korean", [h.note for h in hits])
            answer.text = held.text
            answer.cited_ids += [n.id for n in held.tellers if n.id not in answer.cited_ids]
            if held.replaced:
                answer.reason = f"a date no cited note gives ({', '.join(held.replaced)}) became the cited note's day"
            answer.quotes = quotes_of(answer.text, question, [given[i] for i in answer.cited_ids])
            if not answer.text or echoes_prompt(answer.text, frame):
                raise LLMError("the model's answer was empty or repeated the question")
        except LLMError as exc:  # the user still gets their own words, with the id, marked as such
            if exc.usage is not None:
                answer.usage = exc.usage
            answer.text, answer.cited_ids = extractive(question, hits)
            answer.mode, answer.reason = "extractive", str(exc)
