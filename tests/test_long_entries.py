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
    [quote] = answer.quotes
    assert quote["entry_id"] == answer.cited()[0] and "두부가 토해서" in quote["text"]
    assert "출근" not in answer.text  # the entry's start is not quoted


def test_an_answer_deep_in_a_page_quotes_its_sentence(memory):
    _journal(memory)
    answer = ask_through(memory, "적금 한 달에 얼마씩 넣어?")
    assert "30만 원" in answer.text and "출근" not in answer.text


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


def test_not_decided_is_read_in_the_sentence_that_answers(memory):
    memory.settings.answer_journal = True
    memory.add("Woke up early. The mechanic quoted 340 dollars to replace the car's brake pads. I still have not "
               "decided whether to pay it this month. Then I walked the dog along the river.", "2026-04-08T21:45")
    answer = ask_through(memory, "How much did the mechanic quote for the brake pads?")
    assert "340 dollars" in answer.text and answer.mode == "extractive"
    undecided = ask_through(memory, "Did I decide whether to pay for the brake pads?")
    assert undecided.mode == "declined" and "never decided" in undecided.reason
