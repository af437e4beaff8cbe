"""Tests for zettel_amem.ingest.parsers: every format, encodings, detection, streaming."""

from __future__ import annotations

import io
import json
import os
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zettel_amem.ingest import parsers
from zettel_amem.ingest import turns as reading
from zettel_amem.ingest.parsers import (
    FORMATS,
    ParseProblem,
    Turn,
    detect_format,
    parse,
    parse_datetime,
    peek_head,
)

BOM = b"\xef\xbb\xbf"


def run(
    source: Path | io.BytesIO | bytes, fmt: str, session: str = "s"
) -> tuple[list[Turn], list[ParseProblem]]:
    if isinstance(source, bytes):
        source = io.BytesIO(source)
    items = list(parse(source, fmt, default_session=session))
    turns = [x for x in items if isinstance(x, Turn)]
    problems = [x for x in items if isinstance(x, ParseProblem)]
    assert len(turns) + len(problems) == len(items)
    return turns, problems


def local(dt: datetime) -> datetime:
    """What an aware datetime becomes: local wall-clock time without tzinfo."""
    return dt.astimezone().replace(tzinfo=None)


# --------------------------------------------------------------------------- parse_datetime


def test_parse_datetime_variants() -> None:
    assert parse_datetime("2026-03-29 09:15") == datetime(2026, 3, 29, 9, 15)
    assert parse_datetime("2026-03-29T09:15:30.25") == datetime(2026, 3, 29, 9, 15, 30, 250000)
    assert parse_datetime("2026-03-29") == datetime(2026, 3, 29)
    utc = datetime(2026, 3, 29, 0, 15, tzinfo=UTC)
    assert parse_datetime("2026-03-29T00:15:00Z") == local(utc)
    assert parse_datetime("2026-03-29T09:15:00+09:00") == local(utc)
    assert parse_datetime("2026-03-29T09:15:00+0900") == local(utc)
    assert parse_datetime(1_700_000_000) == datetime.fromtimestamp(1_700_000_000)
    assert parse_datetime(1_700_000_000.5) == datetime.fromtimestamp(1_700_000_000.5)
    assert parse_datetime("1700000000") == datetime.fromtimestamp(1_700_000_000)
    assert parse_datetime(1_700_000_000_000) == datetime.fromtimestamp(1_700_000_000)  # milliseconds
    assert parse_datetime("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_datetime("12:06 am on 11 November, 2022") == datetime(2022, 11, 11, 0, 6)
    assert parse_datetime("12:30 pm on 1 Jan, 2024") == datetime(2024, 1, 1, 12, 30)
    for v in ("13:00 pm on 8 May, 2023", "1:56 pm on 8 Mai, 2023"):
        with pytest.raises(ValueError):
            parse_datetime(v)


@pytest.mark.parametrize(
    "garbage",
    ["", "yesterday", "2026-13-01", "2026-02-30 10:00", "2026-03-29 25:00", "nan", "inf", True, 10**400],
)
def test_parse_datetime_garbage(garbage: object) -> None:
    with pytest.raises(ValueError):
        parse_datetime(garbage)  # type: ignore[arg-type]


def test_unknown_format_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        parse(io.BytesIO(b""), "csv", default_session="s")
    for fmt in FORMATS:
        with pytest.raises(OSError):
            list(parse(tmp_path / "missing.txt", fmt, default_session="s"))


# --------------------------------------------------------------------------- text


def test_text_speakers_timestamps_korean(tmp_path: Path) -> None:
    content = (
        "[2026-03-29 09:15] Alice: hi there\n"
        "\n"
        "2026-03-29 09:16 민수: 안녕하세요, 반가워요 😀\n"
        "just a line without speaker\n"
        "see http://example.com: the docs\n"
        "Note: 10:30 meeting\n"
        "The long explanation of the whole thing is this: nothing\n"
        "   \n"
        "Bob:no space means no speaker\n"
    )
    path = tmp_path / "chat.txt"
    path.write_bytes(content.encode("utf-8"))
    turns, problems = run(path, "text", "chat")
    assert problems == []
    assert [(t.speaker, t.text, t.line, t.index) for t in turns] == [
        ("Alice", "hi there", 1, 0),
        ("민수", "안녕하세요, 반가워요 😀", 3, 1),
        (None, "just a line without speaker", 4, 2),
        (None, "see http://example.com: the docs", 5, 3),
        ("Note", "10:30 meeting", 6, 4),
        (None, "The long explanation of the whole thing is this: nothing", 7, 5),
        (None, "Bob:no space means no speaker", 9, 6),
    ]
    assert turns[0].at == datetime(2026, 3, 29, 9, 15)
    assert turns[1].at == datetime(2026, 3, 29, 9, 16)
    assert turns[2].at is None
    assert {t.session_key for t in turns} == {"chat"}
    # Korean kept byte-exact.
    assert turns[1].text.encode("utf-8") == "안녕하세요, 반가워요 😀".encode()


def test_text_bom_crlf_invalid_utf8_and_nul() -> None:
    data = (
        BOM
        + b"Alice: one\r\nBob: caf\xc3\xa9\r\nbad \xff\xfe bytes\r\n"
        + b"nul\x00here\r\n\r\n\xea\xb9\x80: \xed\x95\x9c"
    )
    turns, problems = run(data, "text")
    assert [(t.speaker, t.text, t.line) for t in turns] == [
        ("Alice", "one", 1),
        ("Bob", "café", 2),
        ("김", "한", 6),
    ]
    assert [p.line for p in problems] == [3, 4]
    assert "invalid UTF-8" in problems[0].message
    assert "NUL" in problems[1].message


def test_text_truncated_multibyte_at_end_is_reported() -> None:
    turns, problems = run("가나: 다".encode() + b"\n" + "라".encode()[:2], "text")
    assert [t.text for t in turns] == ["다"]
    assert [p.line for p in problems] == [2]


def test_overlong_line_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reading, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(reading, "_CHUNK", 256)
    data = b"A: first\n" + b"x" * 5000 + b"\nB: last\n" + b"y" * 3000
    turns, problems = run(data, "text")
    assert [(t.text, t.line) for t in turns] == [("first", 1), ("last", 3)]
    assert [p.line for p in problems] == [2, 4]


# --------------------------------------------------------------------------- jsonl


def test_jsonl_messages(tmp_path: Path) -> None:
    lines = [
        json.dumps(
            {"role": "user", "content": "안녕, 세상", "timestamp": "2026-03-29T09:15:00Z"}, ensure_ascii=False
        ),
        json.dumps({"role": "assistant", "name": "Claude", "content": [{"type": "text", "text": "a"}, "b"]}),
        "",
        '{"role": "assistant", "content": "broken", ',
        json.dumps({"role": "assistant", "content": None, "tool_calls": [{"id": "x"}]}),
        json.dumps({"role": "tool", "content": "   "}),
        json.dumps({"role": "user", "content": "later", "created_at": 1_700_000_000, "session": "other"}),
        "[1, 2]",
        json.dumps({"role": "user", "content": "when?", "time": "not a time"}),
        json.dumps([{"role": "user", "content": "x1"}, {"role": "user", "content": "x2"}]),
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    turns, problems = run(path, "jsonl", "t")
    assert [(t.speaker, t.text, t.session_key, t.index, t.line) for t in turns] == [
        ("user", "안녕, 세상", "t", 0, 1),
        ("Claude", "a\nb", "t", 1, 2),
        ("user", "later", "other", 0, 7),
        ("user", "when?", "t", 2, 9),
        ("user", "x1", "t", 3, 10),
        ("user", "x2", "t", 4, 10),
    ]
    assert turns[0].at == local(datetime(2026, 3, 29, 9, 15, tzinfo=UTC))
    assert turns[0].meta["role"] == "user"
    assert turns[1].meta["role"] == "assistant"
    assert turns[2].at == datetime.fromtimestamp(1_700_000_000)
    assert turns[3].at is None and turns[3].meta["timestamp"] == "not a time"
    assert [p.line for p in problems] == [4, 8, 8]
    assert problems[0].message.startswith("not valid JSON:")
    assert "expected a JSON object" in problems[1].message


def test_jsonl_bom_crlf_invalid_bytes_and_escapes() -> None:
    data = (
        BOM
        + b'{"role":"user","content":"\xec\x95\x88\xeb\x85\x95"}\r\n'
        + b'{"role":"user","content":"bad \xc3"}\r\n'
        + b'{"role":"user","content":"lone \\ud800 surrogate"}\r\n'
        + b'{"role":"user","content":"nul \\u0000 escape"}\r\n'
        + b'{"role":"user","content":"ok"}'
    )
    turns, problems = run(data, "jsonl")
    assert [(t.text, t.line) for t in turns] == [("안녕", 1), ("ok", 5)]
    assert [p.line for p in problems] == [2, 3, 4]
    assert "invalid UTF-8" in problems[0].message


def test_jsonl_whole_file_array(tmp_path: Path) -> None:
    msgs = [
        {"role": "system", "content": "be nice"},
        {"role": "user", "content": "질문", "conversation_id": "c1"},
        "oops",
        {"role": "assistant", "content": [{"type": "text", "text": "답"}], "conversation_id": "c1"},
    ]
    path = tmp_path / "a.json"
    path.write_text(json.dumps(msgs, indent=2, ensure_ascii=False), encoding="utf-8-sig")
    turns, problems = run(path, "jsonl")
    assert [(t.speaker, t.text, t.session_key, t.index, t.line) for t in turns] == [
        ("system", "be nice", "s", 0, None),
        ("user", "질문", "c1", 0, None),
        ("assistant", "답", "c1", 1, None),
    ]
    assert [(p.line, p.record) for p in problems] == [(None, 3)]  # the 3rd element of the array


def test_jsonl_broken_array_is_one_problem() -> None:
    data = b'[\n  {"role": "user", "content": "a"},\n  {"role": "user" "content": "b"}\n]\n'
    turns, problems = run(data, "jsonl")
    assert turns == []
    assert len(problems) == 1 and problems[0].line == 3
    assert problems[0].message.startswith("not valid JSON")


def test_jsonl_broken_first_line_falls_back_to_lines() -> None:
    data = b'[oops\n{"role": "user", "content": "a"}\n{"role": "user", "content": "b"}\n'
    turns, problems = run(data, "jsonl")
    assert [(t.text, t.line) for t in turns] == [("a", 2), ("b", 3)]
    assert [p.line for p in problems] == [1]


# --------------------------------------------------------------------------- chatgpt


def chatgpt_export() -> list[dict]:
    def node(
        nid: str, parent: str | None, children: list[str], role: str | None, parts: list, t: float | None
    ):
        message = None
        if role is not None:
            message = {
                "id": nid,
                "author": {"role": role, "name": None},
                "create_time": t,
                "content": {"content_type": "text", "parts": parts},
            }
        return {"id": nid, "message": message, "parent": parent, "children": children}

    mapping = {
        "root": node("root", None, ["sys"], None, [], None),
        "sys": node("sys", "root", ["u1"], "system", ["You are ChatGPT"], None),
        "u1": node("u1", "sys", ["a1"], "user", ["첫 질문"], 1_700_000_000.0),
        "a1": node("a1", "u1", ["u2-old", "u2-new"], "assistant", ["first answer"], 1_700_000_010.0),
        "u2-old": node("u2-old", "a1", ["a2-old"], "user", ["original question"], 1_700_000_020.0),
        "a2-old": node("a2-old", "u2-old", [], "assistant", ["old answer"], 1_700_000_030.0),
        "u2-new": node("u2-new", "a1", ["a2-empty"], "user", ["edited question"], 1_700_000_040.0),
        "a2-empty": node("a2-empty", "u2-new", ["a2-new"], "assistant", [""], 1_700_000_045.0),
        "a2-new": node("a2-new", "a2-empty", [], "assistant", ["new ", "answer"], None),
    }
    return [
        {
            "title": "테스트 대화",
            "create_time": 1_699_999_999.0,
            "mapping": mapping,
            "current_node": "a2-new",
            "id": "conv-1",
        },
        {"title": "no mapping here"},
        {
            "title": "Untitled",
            "create_time": 1_700_100_000.0,
            "mapping": {
                "r": node("r", None, ["m"], None, [], None),
                "m": node("m", "r", [], "user", ["hello"], None),
            },
            "current_node": "gone",
        },
    ]


def test_chatgpt_follows_current_node(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt_export(), ensure_ascii=False), encoding="utf-8")
    turns, problems = run(path, "chatgpt")
    first = [t for t in turns if t.session_key == "conv-1"]
    assert [(t.speaker, t.text, t.index) for t in first] == [
        ("user", "첫 질문", 0),
        ("assistant", "first answer", 1),
        ("user", "edited question", 2),
        ("assistant", "new \nanswer", 3),
    ]
    assert all(t.session_title == "테스트 대화" for t in first)
    assert first[0].at == datetime.fromtimestamp(1_700_000_000)
    assert first[3].at == datetime.fromtimestamp(1_699_999_999)  # falls back to the conversation time
    assert first[0].meta == {"role": "user", "message_id": "u1"}
    assert [(p.line, p.record) for p in problems] == [(None, 2)]  # the 2nd conversation, not line 2
    # No id and a dangling current_node: fallback key, walk from the root.
    third = [t for t in turns if t.session_title == "Untitled"]
    assert [t.text for t in third] == ["hello"]
    assert third[0].session_key == "Untitled@1700100000.0"


def test_chatgpt_bad_documents() -> None:
    _, problems = run(b'[{"title": "x", "mapping": {}', "chatgpt")
    assert len(problems) == 1 and problems[0].message.startswith("not valid JSON")
    _, problems = run(b'[{"title": "\xff"}]', "chatgpt")
    assert len(problems) == 1 and "invalid UTF-8" in problems[0].message
    turns, problems = run(BOM + json.dumps(chatgpt_export()).encode().replace(b"\n", b"\r\n"), "chatgpt")
    assert len(turns) == 5 and len(problems) == 1


# --------------------------------------------------------------------------- locomo


def locomo_doc() -> list[dict]:
    conv: dict[str, object] = {"speaker_a": "Caroline", "speaker_b": "민수"}
    for n in (10, 2, 9, 1):
        conv[f"session_{n}_date_time"] = f"1:{n:02d} pm on 8 May, 2023"
        conv[f"session_{n}"] = [
            {"speaker": "Caroline", "dia_id": f"D{n}:1", "text": f"hello {n}"},
            {
                "speaker": "민수",
                "dia_id": f"D{n}:2",
                "text": "안녕 😀",
                "img_url": ["u"],
                "blip_caption": "a cat",
            },
        ]
    conv["session_11_date_time"] = "2:00 pm on 9 May, 2023"  # a date without a session
    conv["session_3"] = [{"speaker": "Caroline", "dia_id": "D3:1", "text": "no date"}]
    return [
        {"sample_id": "conv-26", "conversation": conv, "qa": [{"question": "q", "answer": "a"}]},
        {"sample_id": "broken"},
    ]


def test_locomo_sessions_ordered_numerically(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(locomo_doc(), ensure_ascii=False), encoding="utf-8")
    turns, problems = run(path, "locomo")
    keys = list(dict.fromkeys(t.session_key for t in turns))
    assert keys == [f"conv-26/session_{n}" for n in (1, 2, 3, 9, 10)]
    s10 = [t for t in turns if t.session_key == "conv-26/session_10"]
    assert [(t.speaker, t.text, t.index, t.meta["dia_id"]) for t in s10] == [
        ("Caroline", "hello 10", 0, "D10:1"),
        ("민수", "안녕 😀 [image: a cat]", 1, "D10:2"),
    ]
    assert s10[0].meta["sample_id"] == "conv-26"
    assert all(t.at == datetime(2023, 5, 8, 13, 10) for t in s10)
    assert [t.at for t in turns if t.session_key == "conv-26/session_3"] == [None]
    assert [(p.line, p.record) for p in problems] == [(None, 2)]


# --------------------------------------------------------------------------- markdown


def write_vault(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "hidden.md").write_text("ignored", encoding="utf-8")
    (root / "b.md").write_text(
        "---\ntitle: Bee: the note\ndate: 2026-03-29 09:15\ntags: [work, 메모]\n---\n"
        "# Heading\n\nFirst paragraph\nstill first.\n\n\nSecond 한국어 paragraph.\n\n"
        "```\ncode\n\nstill code\n```\n\n## Trailing heading\n",
        encoding="utf-8",
    )
    (root / "sub" / "a.md").write_bytes(
        BOM
        + b"---\r\naliases:\r\n  - one\r\n  - 'two'\r\ncreated: 2025-01-02\r\n---\r\nBody \xff\r\n\r\nok\r\n"
    )
    (root / "notes.txt").write_text("not markdown", encoding="utf-8")


def test_markdown_directory(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    write_vault(root)
    turns, problems = run(root, "markdown")
    assert sorted({t.session_key for t in turns}) == ["b.md", "sub/a.md"]
    b = [t for t in turns if t.session_key == "b.md"]
    assert [(t.text, t.line, t.index) for t in b] == [
        ("# Heading\n\nFirst paragraph\nstill first.", 6, 0),
        ("Second 한국어 paragraph.", 12, 1),
        ("```\ncode\n\nstill code\n```", 14, 2),
        ("## Trailing heading", 20, 3),
    ]
    assert all(t.speaker is None and t.at == datetime(2026, 3, 29, 9, 15) for t in b)
    assert b[0].session_title == "Bee: the note"
    assert b[0].meta == {"title": "Bee: the note", "date": "2026-03-29 09:15", "tags": "work,메모"}
    a = [t for t in turns if t.session_key == "sub/a.md"]
    assert [(t.text, t.line) for t in a] == [("ok", 9)]
    assert a[0].meta == {"created": "2025-01-02", "aliases": "one,two"}
    assert a[0].at == datetime(2025, 1, 2)
    assert [(p.line, "sub/a.md" in p.message, "invalid UTF-8" in p.message) for p in problems] == [
        (7, True, True)
    ]
    # Order: files sorted by relative path.
    assert turns[0].session_key == "b.md"


def test_markdown_single_file_and_stream(tmp_path: Path) -> None:
    path = tmp_path / "plain.md"
    path.write_text("# 제목\n\n본문 ---\n\n---\nnot front matter\n", encoding="utf-8")
    stamp = 1_700_000_000
    os.utime(path, (stamp, stamp))
    turns, problems = run(path, "markdown")
    assert problems == []
    assert [t.text for t in turns] == ["# 제목\n\n본문 ---", "---\nnot front matter"]
    assert turns[0].session_key == "plain.md" and turns[0].session_title == "제목"
    assert turns[0].at == datetime.fromtimestamp(stamp)
    turns, _ = run(path.read_bytes(), "markdown", "stdin")
    assert turns[0].session_key == "stdin" and turns[0].at is None


# --------------------------------------------------------------------------- detection


def test_detect_format(tmp_path: Path) -> None:
    (tmp_path / "vault").mkdir()
    assert detect_format(tmp_path / "vault", b"") == "markdown"
    assert detect_format(Path("x.md"), b"Alice: hi") == "markdown"
    cases = {
        "text": [b"Alice: hi\nBob: yo\n", b"[2026-03-29 09:15] Alice: hi\n", b"", "민수: 안녕".encode()],
        "jsonl": [
            b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n',
            b'[{"role": "user", "content": "hi"}]',
            b'[\n  {\n    "role": "user",\n    "content": "hi"\n',  # truncated pretty array
        ],
        "chatgpt": [json.dumps(chatgpt_export()).encode()],
        "locomo": [json.dumps(locomo_doc()).encode(), json.dumps(locomo_doc()[0]).encode()],
    }
    for expected, heads in cases.items():
        for head in heads:
            for variant in (head, BOM + head, head.replace(b"\n", b"\r\n")):
                assert detect_format(None, variant) == expected, variant[:60]
                assert detect_format(Path("input.json"), variant) == expected


def test_detect_format_on_truncated_large_documents() -> None:
    big_conv = chatgpt_export()[0]
    big_conv["mapping"]["u1"]["message"]["content"]["parts"] = ["x" * 100_000]
    head = json.dumps([big_conv]).encode()[: parsers.HEAD_SIZE]
    assert detect_format(None, head) == "chatgpt"
    qa = [{"question": "q" * 100, "answer": "a", "evidence": ["D1:1"], "category": 1}] * 1000
    rest = {k: v for k, v in locomo_doc()[0].items() if k != "qa"}
    sample = {"qa": qa, **rest}  # a real export lists "qa" first
    head = json.dumps([sample]).encode()[: parsers.HEAD_SIZE]
    assert b'"conversation"' not in head
    assert detect_format(None, head) == "locomo"
    head = b"".join(json.dumps({"role": "user", "content": "y" * 50}).encode() + b"\n" for _ in range(2000))
    assert detect_format(None, head[: parsers.HEAD_SIZE]) == "jsonl"


def test_peek_head_replays_stream() -> None:
    data = b"Alice: hi\n" * 20_000
    head, stream = peek_head(io.BytesIO(data), 1000)
    assert head == data[:1000]
    assert detect_format(None, head) == "text"
    turns, _ = run(stream, "text")  # type: ignore[arg-type]
    assert len(turns) == 20_000


# --------------------------------------------------------------------------- streaming


class CountingReader(io.RawIOBase):
    """A generator-backed binary stream that records how many bytes were handed out."""

    def __init__(self, lines: int, make_line: object) -> None:
        super().__init__()
        self.total = 0
        self.read_bytes = 0
        self._gen = (make_line(i) for i in range(lines))  # type: ignore[operator]
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: memoryview) -> int:  # type: ignore[override]
        while len(self._buf) < len(b):
            nxt = next(self._gen, None)
            if nxt is None:
                break
            self.total += len(nxt)
            self._buf += nxt
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        self.read_bytes += n
        return n


@pytest.mark.parametrize("fmt", ["text", "jsonl"])
def test_streams_without_reading_everything(fmt: str) -> None:
    def make_line(i: int) -> bytes:
        if fmt == "text":
            return f"Alice: 메시지 {i} {'x' * 80}\n".encode()
        return (
            json.dumps({"role": "user", "content": f"메시지 {i} {'x' * 80}"}, ensure_ascii=False).encode()
            + b"\n"
        )

    lines = 50_000  # about 5 MB
    reader = CountingReader(lines, make_line)
    items = parse(reader, fmt, default_session="big")  # type: ignore[arg-type]
    first = next(items)
    assert isinstance(first, Turn) and first.text.startswith("메시지 0")
    assert reader.read_bytes < 1024 * 1024
    count = 1 + sum(1 for _ in items)
    assert count == lines
    assert reader.read_bytes == reader.total > 4 * 1024 * 1024


# --------------------------------------------------------------------------- property test

# Fragments that steer random input towards the interesting paths of every parser.
FUZZ_TOKENS = [b"{", b"}", b"[", b"]", b'"role"', b'"content"', b'"mapping"', b'"conversation"', b":", b",",
               b'"x"', b"\n", b"\r\n", BOM, b"\xff", b"\x00", b"\\ud800", b"Alice: ", b"2026-03-29 09:15 ",
               b"1e999", b"null", b"---", b"```"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=400),
        st.lists(
            st.sampled_from(FUZZ_TOKENS),
            max_size=40,
        ).map(b"".join),
    )
)
def test_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    for fmt in FORMATS:
        for item in parse(io.BytesIO(data), fmt, default_session="fuzz"):
            assert isinstance(item, (Turn, ParseProblem))
            if isinstance(item, Turn):
                item.text.encode("utf-8")  # always storable
                assert "\x00" not in item.text and item.text == item.text.strip() and item.text
    detect_format(None, data)


def test_aware_offsets_convert_to_local() -> None:
    kst = timezone(timedelta(hours=9))
    turns, _ = run(b"[2026-03-29 09:15+09:00] Alice: hi\n", "text")
    assert turns[0].at == local(datetime(2026, 3, 29, 9, 15, tzinfo=kst))
