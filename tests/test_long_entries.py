"""Page-long entries (#36): searched, budgeted, dated and quoted by their passages; migrated stores."""

from __future__ import annotations

import json

from sample import add_dated, ask_through

from zettel_amem.memory import Memory

# One evening's page on four subjects; the cat's vet visit is "어제 밤" (6 April), deep in the entry.
PAGE = ("오늘은 아침 7시 출근. 병동이 정신없었다 환자가 세 명이나 새로 들어왔다. "
        "수간호사님이 다음 달부터 나이트 근무를 줄여 주신다고 했다. "
        "퇴근하고 엄마랑 통화했는데 다음 주 금요일에 올라오신다고 하셨다. 반찬을 잔뜩 싸 오신단다. "
        "어제 밤 11시쯤 고양이 두부가 토해서 24시 동물병원에 갔다. 검사비만 8만 원이 나왔다. 의사 선생님이 체중이 "
        "4.2kg이라고 하셨다. 이번 달 적금은 월 30만 원으로 올렸다. 마츠모토 선생님은 후쿠오카 출신이라서 라멘을 "
        "좋아하신다고 했다.")
OTHERS = [("2026-04-01T21:00", "병원 선생님들이랑 회식을 했다. 선생님들이 다들 피곤해 보였다."),
          ("2026-04-03T21:00", "담임 선생님 같은 수간호사 선생님께 혼났다. 선생님 말씀이 다 맞았다."),
          ("2026-04-09T21:00", "Bought milk and eggs on the way home.")]


def _journal(memory: Memory) -> str:
    memory.settings.answer_journal = True  # the tests' config turns the journal path off (conftest.py)
    add_dated(memory, OTHERS)
    return memory.add(PAGE, "2026-04-07T22:00").id


def test_search_ranks_an_entry_by_the_passage_naming_a_rare_name_and_shows_it(zk, zk_home):
    memory = Memory(zk_home)
    page = _journal(memory)
    hits = zk("search", "마츠모토 선생님은 어디 출신이야?", "--json", check=True).json()
    assert hits[0]["id"] == page and hits[0]["entry_id"] == page
    matsumoto = "마츠모토 선생님은 후쿠오카 출신이라서 라멘을 좋아하신다고 했다."
    assert [p["text"] for p in hits[0]["passages"]] == [matsumoto]
    shown = zk("search", "체중이 몇 kg이야", check=True).stdout
    assert "4.2kg" in shown and "출근" not in shown  # the passage, not the entry's start


def test_the_budget_counts_passages_not_whole_entries(memory):
    # ten pages of ~500 characters: a budget of 700 tokens held two of them whole
    for day in range(1, 11):
        memory.add(f"{day}일차 일기. " + PAGE.replace("두부", f"두부{day}"), f"2026-05-{day:02d}T22:00")
    with_passages = memory.search("체중이 몇 kg이야", budget_tokens=700, follow_links=False)
    memory.settings.search_passage_weight = 0.0
    whole = memory.search("체중이 몇 kg이야", budget_tokens=700, follow_links=False)
    assert len(whole) <= 3 < 8 <= len(with_passages)
    assert all("kg" in " ".join(p.text for p in h.passages) for h in with_passages)


def test_when_is_the_day_the_passage_dates_not_the_entry_day(memory):
    _journal(memory)
    answer = ask_through(memory, "두부가 토한 게 언제야?")
    assert answer.text.startswith("2026-04-06")  # the event's day; the entry's may follow as its source
    quote = answer.quotes[0]  # the passage the headline quotes (the view may quote other passages below it)
    assert quote["entry_id"] == answer.cited()[0] and "두부가 토해서" in quote["text"]
    assert "출근" not in answer.text  # the entry's start is not quoted


def test_an_answer_deep_in_a_page_quotes_its_sentence(memory):
    _journal(memory)
    answer = ask_through(memory, "적금 한 달에 얼마씩 넣어?")
    assert "30만 원" in answer.text and "출근" not in answer.text


def test_a_journal_answer_ranks_once_and_answers_as_when_it_ranked_twice(memory, monkeypatch):
    """The journal answer's wider look takes the first search's ranking (ranked as deep) instead of ranking
    again; the answer, its view and its notes are what two rankings gave."""
    from zettel_amem.retrieval.search import Searcher

    _journal(memory)
    ranked, search = Searcher._ranked, Searcher.search
    calls = []
    monkeypatch.setattr(Searcher, "_ranked", lambda self, *args: calls.append(args[0]) or ranked(self, *args))

    def answered() -> tuple:
        answer = ask_through(memory, "두부는 왜 동물병원에 갔어?")
        return answer.text, answer.view.text(), answer.mode, [h.note.id for h in answer.notes]

    once = answered()
    assert len(calls) == 1
    monkeypatch.setattr(Searcher, "search", lambda self, query, k=None, pool=None, reuse_ranking=False, **options:
                        search(self, query, k, **options))  # as before: each search ranks for itself
    assert answered() == once and len(calls) == 3
    assert "두부가 토해서" in once[1]


def test_editing_an_entry_cuts_it_again(memory):
    page = _journal(memory)
    memory.edit(page, PAGE.replace("후쿠오카", "삿포로"))
    stored = memory.store.get(page, with_vector=True)
    assert any("삿포로" in p.text for p in stored.passages) and all(p.vector for p in stored.passages)
    assert not any("후쿠오카" in p.text for p in stored.passages)


def test_a_store_from_before_passages_is_cut_on_process_with_nothing_lost(zk, zk_home):
    memory = Memory(zk_home)
    page = _journal(memory)
    before = {n.id: (n.content, n.at, n.version) for n in memory.store.notes()}
    # the store as version 3 wrote it: no passage columns, meta at schema 3
    memory.store.table.drop_columns(["passages", "passage_vectors"])
    meta = json.loads((zk_home / "meta.json").read_text())
    (zk_home / "meta.json").write_text(json.dumps({**meta, "schema_version": 3}))
    reopened = Memory(zk_home)
    assert reopened.store.get(page).passages is None  # migrated: the columns are back, still empty
    assert reopened.pipeline.fill_passages() == 4
    after = {n.id: (n.content, n.at, n.version) for n in reopened.store.notes()}
    assert after == before
    assert len(reopened.store.get(page).passages) >= 6
    hits = zk("search", "체중이 몇 kg이야", "--json", check=True).json()
    assert hits[0]["id"] == page and "4.2kg" in hits[0]["passages"][0]["text"]


def _long_tail() -> str:
    """The report's entry (issue #53 C1): 1,200 short sentences, then one past the 35,000th character."""
    import random

    rng = random.Random(2)
    words = "the run knee coffee meeting lunch office train walk park".split()
    text = " ".join(f"Sentence {i} about the {rng.choice(words)}." for i in range(1200))
    return text + " Then I met Zebulon at the xylophone museum in Gangneung."


class Counting:
    """The embedder, keeping every text it was given."""

    def __init__(self, inner):
        self.inner, self.texts = inner, []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def embed_passages(self, texts: list[str]):
        self.texts += texts
        return self.inner.embed_passages(texts)


def test_53_a_sentence_past_the_6000th_character_is_shown_and_quoted(zk, zk_home, fake_llm, embedder):
    """Only the first 6,000 characters were cut: the entry was found, but shown and quoted by unrelated
    early sentences. The whole entry is cut now; only its first passages are embedded (the add costs what
    it did), the later ones are found by their words."""
    text = _long_tail()
    assert len(text) == 35_781
    counting = Counting(embedder)
    journal = Memory(zk_home, llm=fake_llm, embedder=counting)
    journal.settings.answer_journal = True
    page = journal.add(text, "2026-12-06T10:00").id
    entry, *embedded = counting.texts  # the entry's own vector (of its first ~400 words), then its passages
    journal.add("short note about coffee at the office", "2026-12-06T11:00")
    hits = zk("search", "xylophone museum", "--json", check=True).json()
    assert hits[0]["id"] == page
    assert [p["text"] for p in hits[0]["passages"]] == ["Then I met Zebulon at the xylophone museum in Gangneung."]
    assert "Zebulon" in zk("search", "Zebulon Gangneung", check=True).stdout
    answer = ask_through(journal, "Where did I meet Zebulon?")
    assert "xylophone museum" in answer.text and "Zebulon" in answer.quotes[0]["text"]

    from zettel_amem.core.passages import EMBEDDED_CHARS

    stored = journal.store.get(page, with_vector=True).passages
    assert stored[-1].text == "Then I met Zebulon at the xylophone museum in Gangneung."
    assert all((p.vector is not None) == (p.start < EMBEDDED_CHARS) for p in stored)
    assert entry == text and embedded == [p.text for p in stored if p.start < EMBEDDED_CHARS]
    assert sum(map(len, embedded)) < EMBEDDED_CHARS  # the add embeds what it did before (~200 passages, not 1,201)


def test_53_an_entry_cut_at_6000_characters_is_cut_again_on_process(zk, zk_home, memory):
    """A store written before: the entry's passages stop at the 6,000th character. `zk process` (and the
    idle worker) cut it whole; the passages it had keep their vectors (nothing embedded again)."""
    from zettel_amem.core.passages import make_passages

    text = _long_tail()
    note = memory.add(text, "2026-12-06T10:00")
    old = make_passages(text[:6000], note.at)  # what the earlier cut stored, every passage embedded
    for passage, vector in zip(old, memory.embedder.embed_passages([p.text for p in old])):
        passage.vector = [float(x) for x in vector]
    stored = memory.store.get(note.id, with_vector=True)
    stored.passages = old
    memory.store.update([stored])
    assert len(Memory(zk_home).store.get(note.id).passages) == len(old)
    head = {p.text: p.vector for p in old[:-1]}  # the last one was cut mid-sentence at 6,000
    hits = zk("search", "xylophone museum", "--json", check=True).json()
    assert "xylophone" not in json.dumps(hits[0]["passages"])  # the report's case
    reopened = Memory(zk_home)
    assert reopened.pipeline.fill_passages() == 1 and reopened.pipeline.fill_passages() == 0
    again = reopened.store.get(note.id, with_vector=True).passages
    assert again[-1].text.endswith("in Gangneung.") and len(again) > 1000
    assert all(head[p.text] == p.vector for p in again if p.text in head)
    hits = zk("search", "xylophone museum", "--json", check=True).json()
    assert [p["text"] for p in hits[0]["passages"]] == ["Then I met Zebulon at the xylophone museum in Gangneung."]
