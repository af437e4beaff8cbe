"""Typed *updates* links (#36 item 3, supersede.py) with the scripted model: the link call names the
candidate a new note replaces; the pipeline checks it (older, a shared subject word) and records it on the
older note as a version. Shown by `zk show` and `zk links`, undone by `zk revert` and by `zk rm` of the
newer note, and "now" answers read the newer passage. The real model's choices: test_long_entries_real.py."""

from __future__ import annotations

import json

import pytest

from tests.sample import ask_through
from zettel_amem.memory import Memory

OLD = ("2026-03-02T21:00", "요즘 다니는 수영장은 동네 구민체육센터다. 한 달 4만 원.")
NEW = ("2026-06-10T21:00", "수영장을 회사 옆 올림픽수영장으로 바꿨다. 점심시간에 간다.")
OTHER = ("2026-04-01T21:00", "퇴근하고 동생이랑 떡볶이를 먹었다. 이제 배부르다.")


@pytest.fixture
def memory(zk_home, fake_llm, embedder) -> Memory:
    memory = Memory(zk_home, llm=fake_llm, embedder=embedder)
    memory.settings.link_min_similarity = 0.0
    memory.settings.answer_journal = True  # the tests' config turns the journal path off (conftest.py)
    return memory


def replaces_first(fake_llm):
    fake_llm.link = lambda user, ids: {"links": ids[:1], "replaces": ids[:1], "updates": []}


def add_both(memory, first=OLD, second=NEW):
    old = memory.add(first[1], at=first[0])
    memory.process_pending()
    new = memory.add(second[1], at=second[0])
    result = memory.process(new.id)
    return memory.store.get(old.id), memory.store.get(new.id), result


def test_a_replaced_older_note_records_who_updates_it_as_a_version(memory, fake_llm):
    replaces_first(fake_llm)
    old, new, result = add_both(memory)
    assert result.updates == [old.id] and old.id in new.links
    assert old.updated_by == [{"passage": old.id, "by": new.id, "on": ["수영장"]}]
    last = old.history[-1]
    assert (last.cause, last.reason) == (new.id, "updated") and last.changes["updated_by"]["old"] == []
    assert "replaces" in fake_llm.calls[-1]["schema"]["properties"]  # grammar-bound: an enum over the ids
    assert fake_llm.calls[-1]["schema"]["properties"]["replaces"]["items"]["enum"]


def test_the_model_saying_none_and_no_change_word_records_nothing(memory, fake_llm):
    same_subject = ("2026-06-10T21:00", "수영장 물이 오늘따라 차가워서 20분만 했다.")
    old, new, result = add_both(memory, second=same_subject)  # the default rule links, replaces nothing
    assert result.updates == [] and old.updated_by == [] and old.id in new.links


def test_a_change_word_records_it_without_the_model_even_below_the_link_threshold(memory, fake_llm, monkeypatch):
    memory.settings.link_min_similarity = 1.1  # no neighbour is similar enough ...
    monkeypatch.setattr(memory.pipeline, "worth_a_link_call", lambda note, candidates: False)  # ... no link call
    old, new, result = add_both(memory)  # "바꿨다": the new value is stated as a change
    assert result.skipped == "no similar neighbour" and "link" not in fake_llm.tasks()
    assert result.updates == [old.id] and old.updated_by == [{"passage": old.id, "by": new.id, "on": ["수영장"]}]


def test_on_a_page_the_models_word_alone_records_nothing(memory, fake_llm):
    """A page shares words with many pages; the model naming one it "replaces" is not enough there."""
    replaces_first(fake_llm)
    page = ("수영장 물이 오늘따라 차가워서 20분만 했다. 샤워실에 사람이 많아서 한참 기다렸다.\n\n"
            "퇴근길에 서점에 들러 요리책을 한 권 샀다. 주말에 파스타를 만들어 볼 생각이다.\n\n"
            "동생이 다음 달에 이사를 도와 달라고 연락했다.")
    old, new, result = add_both(memory, second=(NEW[0], page))
    assert len(new.passages) >= 3 and old.id in new.links  # linked, as the model said
    assert result.updates == [] and old.updated_by == []


def test_a_newer_note_is_never_updated_by_an_older_one(memory, fake_llm):
    replaces_first(fake_llm)
    newer_first = (NEW[0], OLD[1])  # the candidate is dated after the note being linked
    old, new, result = add_both(memory, first=newer_first, second=(OLD[0], NEW[1]))
    assert result.updates == [] and old.updated_by == []


def test_no_shared_subject_word_records_nothing(memory, fake_llm):
    replaces_first(fake_llm)
    old, new, result = add_both(memory, first=OTHER)
    assert result.updates == [] and old.updated_by == []


def test_a_long_entry_records_the_passage_that_updates(memory, fake_llm):
    replaces_first(fake_llm)
    long = ("아침에 비가 와서 버스를 탔다. 회사에서는 분기 보고서를 마무리하느라 오전 내내 정신이 없었다. "
            "점심은 팀 사람들이랑 김치찌개를 먹었다. 수영장을 회사 옆 올림픽수영장으로 바꿨다, 점심시간에 갈 수 "
            "있어서. 저녁에는 소파에 누워서 빌려 온 책을 조금 읽다가 일찍 잤다.")
    old, new, result = add_both(memory, second=(NEW[0], long))
    assert len(new.passages) >= 3
    (entry,) = old.updated_by
    assert entry["passage"] == old.id and entry["by"].startswith(new.id + "-p")
    updating = next(p for p in new.passages if f"{new.id}-p{p.index}" == entry["by"])
    assert "올림픽수영장" in updating.text


def test_show_and_links_show_the_typed_link_both_ways(memory, fake_llm, zk):
    replaces_first(fake_llm)
    old, new, _ = add_both(memory)
    shown = zk("show", old.id[:8], "--json", check=True).json()
    assert shown["updated_by"] == [{"passage": old.id, "by": new.id, "on": ["수영장"]}]
    code, out, _ = zk("show", old.id[:8])
    assert code == 0 and "updated by" in out and "updates" in out
    tree = zk("links", new.id[:8], "--json", check=True).json()
    assert [n["updated_by"] for n in tree["links"]] == [[{"passage": old.id, "by": new.id, "on": ["수영장"]}]]
    code, out, _ = zk("links", new.id[:8])
    assert code == 0 and "updates" in out


def test_revert_and_removing_the_newer_note_undo_it(memory, fake_llm):
    replaces_first(fake_llm)
    old, new, _ = add_both(memory)
    reverted = memory.revert(old.id)
    assert reverted.updated_by == []
    memory.revert(old.id)  # a revert is a version too: the update comes back
    assert memory.store.get(old.id).updated_by == [{"passage": old.id, "by": new.id, "on": ["수영장"]}]
    memory.remove(new.id)
    assert memory.store.get(old.id).updated_by == []


def test_now_answers_from_the_passage_that_updates_even_when_it_ranks_low(memory, fake_llm):
    replaces_first(fake_llm)
    old, new, _ = add_both(memory)
    answer = ask_through(memory, "지금 다니는 수영장 어디야?")
    assert "올림픽수영장" in answer.text and "구민체육센터" not in answer.text
    assert answer.cited_ids[0] == new.id  # the headline's: the passage that updates (others are shown below)


def test_a_store_from_before_opens_with_no_updates(zk_home, embedder, fake_llm):
    memory = Memory(zk_home, llm=fake_llm, embedder=embedder)
    note = memory.add(OLD[1], at=OLD[0])
    memory.store.table.drop_columns(["updated_by"])
    meta = json.loads((zk_home / "meta.json").read_text())
    (zk_home / "meta.json").write_text(json.dumps({**meta, "schema_version": 4}))
    again = Memory(zk_home, llm=fake_llm, embedder=embedder)
    assert again.store.get(note.id).updated_by == [] and again.store.get(note.id).content == OLD[1]


def test_a_backup_keeps_the_typed_links(memory, fake_llm, zk, tmp_path, monkeypatch):
    replaces_first(fake_llm)
    old, new, _ = add_both(memory)
    backup = tmp_path / "backup.jsonl"
    zk("export", "--all", "-o", str(backup), check=True)
    monkeypatch.setenv("ZK_HOME", str(tmp_path / "restored"))
    zk("import", str(backup), check=True)
    shown = zk("show", old.id[:8], "--json", check=True).json()
    assert shown["updated_by"] == [{"passage": old.id, "by": new.id, "on": ["수영장"]}]


OLD_PAGE = ("2026-03-02T21:00", "퇴근하고 동생이랑 떡볶이를 먹었다. 매운 걸 먹으니 스트레스가 풀렸다. "
            "요즘 다니는 수영장은 동네 구민체육센터다. 한 달 4만 원이고 저녁 반이다. "
            "밤에는 엄마랑 통화했다. 여수는 벌써 따뜻하다고 했다. 주말에는 강아지를 데리고 갑천에 갈 생각이다.")
NEW_PAGE = ("2026-06-10T21:00", "아침에 비가 와서 버스를 탔다. 회사에서는 분기 보고서를 마무리하느라 오전 내내 "
            "정신이 없었다. 점심은 팀 사람들이랑 김치찌개를 먹었다. 수영장을 회사 옆 올림픽수영장으로 바꿨다, "
            "점심시간에 갈 수 있어서. 저녁에는 소파에 누워서 빌려 온 책을 조금 읽다가 일찍 잤다.")


def test_search_shows_the_newer_value_right_after_the_passage_it_updates(memory, fake_llm, zk):
    replaces_first(fake_llm)
    old, new, _ = add_both(memory, first=OLD_PAGE, second=NEW_PAGE)
    (record,) = old.updated_by
    hits = memory.search("구민체육센터 한 달 얼마였지?", 1, budget_tokens=700)  # one hit: the old entry
    assert hits[0].note.id == old.id and "구민체육센터" in " ".join(p.text for p in hits[0].passages)
    newer = hits[1]  # at once, before the plain links that come after every direct hit
    assert (newer.note.id, newer.via, newer.updates) == (new.id, old.id, True)
    assert [f"{new.id}-p{p.index}" for p in newer.passages] == [record["by"]]
    assert "올림픽수영장" in newer.passages[0].text
    shown = zk("search", "구민체육센터 한 달 얼마였지?", "-k", "1", "--json", check=True).json()
    assert [(r["id"], r["via"], r["updates"]) for r in shown[:2]] == [(old.id, None, False), (new.id, old.id, True)]
    code, out, _ = zk("search", "구민체육센터 한 달 얼마였지?", "-k", "1")
    assert code == 0 and f"updates {old.id[:8]}" in out


def test_a_hit_on_another_passage_of_the_updated_entry_brings_no_newer_value(memory, fake_llm):
    replaces_first(fake_llm)
    old, new, _ = add_both(memory, first=OLD_PAGE, second=NEW_PAGE)
    hits = memory.search("동생이랑 떡볶이 먹은 날", budget_tokens=700)
    old_hit = next(h for h in hits if h.note.id == old.id)
    assert old_hit.passages and all("수영장" not in p.text for p in old_hit.passages)
    assert not any(h.updates for h in hits)


# -- the change-word path on pages (2026-12-05): what the newer sentence is about, not a word shared by chance --


def test_again_says_it_happened_again_not_that_a_value_changed(memory, fake_llm):
    ridden = ("2026-03-02T21:00", "I ride the bike to the clinic every morning, twenty minutes along the river.")
    again = ("2026-05-11T21:00", "The bike chain came off again this morning, right at the bridge.")
    old, new, result = add_both(memory, first=ridden, second=again)  # the scripted model replaces nothing
    assert result.updates == [] and old.updated_by == []


def test_words_that_name_no_thing_join_no_passages():
    from zettel_amem.amem.supersede import names_a_thing, subject_words

    words = subject_words("Mrs. Kim gave me a basket later, like always, and we cried.")
    assert {"basket", "kim"} <= words and not words & {"gave", "later", "like", "cried", "always"}
    assert names_a_thing("bed") and names_a_thing("헬스장") and not names_a_thing("했다")
    # a Korean verb form names no thing, whatever its stem ("보인다고" is no "보인"): two notes quoting
    # "보인다고" or "가자고" share no subject
    korean = subject_words("엄마 눈이 잘 보인다고, 주말에 한강 공원에 가자고 하셨다. 피곤해서 일찍 올라가서 잤다.")
    assert {"엄마", "한강", "공원"} <= korean and not korean & {"보인", "가자", "피곤", "올라가서", "올라가"}


LAMP_PAGE = ("2026-02-01T22:00", "책상 스탠드가 너무 어두워서 밤에 번역 원고를 볼 때마다 눈이 아프다. "
             "주말에 조명 가게에 가 봐야겠다.\n\n동생이 이번 학기 기숙사 방을 배정받았다고 전화했다. "
             "룸메이트는 아직 모른다고.\n\n저녁은 냉동 만두. 장 보러 갈 힘이 없었다.")
CAFE_PAGE = ("2026-02-10T22:00", "동네 카페는 점심시간 앞뒤로 자리가 없다. 그래서 요즘은 오전에만 간다.\n\n"
             "번역 마감이 금요일이라 오늘은 열 쪽을 넘겼다. 허리가 뻐근해서 스트레칭을 한참 했다.\n\n"
             "엄마가 김장 김치를 두 통이나 보내 주셨다. 냉장고가 꽉 찼다.")
DESK_PAGE = ("2026-03-05T22:00", "오늘 드디어 스탠드를 밝은 LED로 바꿨고 서랍 앞뒤 칸도 정리했다.\n\n"
             "번역 원고는 절반을 넘겼다. 편집자님이 다음 주 화요일까지 1차 원고를 달라고 하셨다.\n\n"
             "동생이 룸메이트랑 벌써 친해졌단다. 같은 과라서 시간표도 비슷하다고.")


def test_a_word_shared_by_chance_with_a_page_on_another_subject_records_nothing(memory, fake_llm):
    """"앞뒤" stands in the changing sentence and in the café passage: the lamp passage is what the change is
    about (closest older passage), so the café is not updated; before, the rare shared word was enough."""
    for at, text in (LAMP_PAGE, CAFE_PAGE):
        memory.add(text, at=at)
    memory.process_pending()
    new = memory.add(DESK_PAGE[1], at=DESK_PAGE[0])
    memory.process(new.id)
    lamp, cafe = sorted(memory.store.notes(), key=lambda n: n.at)[:2]
    assert cafe.updated_by == [] and [e["on"] for e in lamp.updated_by] == [["스탠드"]]


def test_a_page_updates_a_passage_of_a_page_that_is_not_among_its_nearest_pages(memory, fake_llm):
    """The link call sees the pages nearest the new page as a whole; the changing passage's own nearest
    pages are candidates too (here the one link candidate is a page on the other subjects)."""
    memory.settings.link_candidates = 1
    decoy = ("2026-02-20T22:00", "번역 원고는 3분의 1을 넘겼다. 편집자님이 다음 주까지 1차 원고 일정을 알려 "
             "달라고 하셨다.\n\n동생이 룸메이트랑 벌써 친해졌다고 한다. 같은 과라서 시간표도 비슷하다고.\n\n"
             "오늘은 일찍 자야겠다.")
    for at, text in (LAMP_PAGE, CAFE_PAGE, decoy):
        memory.add(text, at=at)
    memory.process_pending()
    new = memory.add(DESK_PAGE[1], at=DESK_PAGE[0])
    result = memory.process(new.id)
    lamp = next(n for n in memory.store.notes() if n.at.startswith("2026-02-01"))
    assert [e["on"] for e in lamp.updated_by] == [["스탠드"]] and result.updates == [lamp.id]
    ((candidate, _),) = memory.pipeline.link_candidates(memory.store.get(new.id, with_vector=True))
    assert candidate.id != lamp.id  # it came through the changing passage's own neighbours


def test_now_alone_says_no_value_changed_but_from_now_on_does():
    """#60: a bare "이제" is "now" ("단풍이 이제 막 들기 시작했다", "이제 다 안다"), as English "now" is no cue;
    "이제는" and "이제부터" set a new state against the old one."""
    from zettel_amem.amem.supersede import says_change

    assert not says_change("황톳길 단풍이 이제 막 들기 시작했다.")
    assert not says_change("버스에 타는 사람들 얼굴을 이제 다 안다.")
    assert says_change("이제는 버스로 출근한다.") and says_change("이제부터 적금은 25만 원이다.")
    assert says_change("적금 자동이체를 40만 원에서 25만 원으로 줄였다.")


def test_an_event_stays_true_and_is_never_updated_but_a_value_or_a_state_is():
    from zettel_amem.amem.supersede import states_a_value

    for event in ("Garam and Soyeon went to look at wedding halls in Yuseong this week.",
                  "어제 퇴근길에 자전거 뒷바퀴가 펑크 났다.", "오늘 주노랑 계족산 황톳길을 처음 걸었다."):
        assert not states_a_value(event), event
    for state in ("Weighed myself this morning: 82 kg.", "I live in a studio on Maple Street.",
                  "적금은 한 달에 30만 원씩 넣고 있다.", "요즘 점심은 구내식당에서 먹었다.",
                  "The transfer went out as planned, and I'm keeping it that way.", "나는 늘 버스를 탔다."):
        assert states_a_value(state), state


def test_a_change_word_does_not_update_an_older_note_that_told_an_event(memory, fake_llm):
    event = ("2026-02-03T21:00", "어제 퇴근길에 자전거 뒷바퀴가 펑크 났다.")
    newer = ("2026-04-12T21:00", "자전거 앞뒤 타이어를 펑크 방지 타이어로 바꿨다.")
    old, new, result = add_both(memory, first=event, second=newer)
    assert result.updates == [] and old.updated_by == []


def test_a_change_word_updates_an_older_note_that_told_a_state(memory, fake_llm):
    old, new, result = add_both(memory, first=("2026-02-04T21:00", "자전거 타이어는 요즘 일반 타이어다."),
                                second=("2026-04-13T21:00", "자전거 타이어를 펑크 방지 타이어로 바꿨다."))
    assert result.updates == [old.id]  # the same change word, the same words, but a state: updated


def test_the_models_word_does_not_make_a_one_off_event_update_a_value(memory, fake_llm):
    """The model named the older note as replaced, but the newer note tells a one-off event on the same
    subject: nothing the older one stated has a new value (bench/updates.py's short pairs: the model's
    `replaces` gave 3 of 10 such false alarms)."""
    replaces_first(fake_llm)
    party = ("2026-03-09T21:00", "The neighbours on Maple Street had a loud party until two.")
    old, new, result = add_both(memory, first=("2026-02-01T21:00", "I live in a studio on Maple Street."),
                                second=party)
    assert result.updates == [] and old.updated_by == [] and old.id in new.links  # still linked
    _, _, moved = add_both(memory, first=("2026-02-02T21:00", "Tuesday evenings I take pottery at the centre."),
                           second=("2026-07-07T21:00", "Pottery moved to Thursday evenings this term."))
    assert len(moved.updates) == 1  # a change word: updated
