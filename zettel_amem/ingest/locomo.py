"""The LoCoMo benchmark format: samples of numbered sessions with their date and turns."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .detect import BY_KEYS, Probe
from .turns import (
    Item,
    ParseProblem,
    Turn,
    load_json_document,
    maybe_datetime,
    record_turn,
    scalar,
)

_SESSION_RE = re.compile(r"session_(\d+)")


def parse_locomo(data: bytes, default_session: str) -> Iterator[Item]:
    doc = load_json_document(data)
    if isinstance(doc, ParseProblem):
        yield doc
        return
    samples = doc if isinstance(doc, list) else [doc]
    for record, sample in enumerate(samples, start=1):
        conv = sample.get("conversation") if isinstance(sample, dict) else None
        if not isinstance(conv, dict):
            yield ParseProblem(None, "no 'conversation' object; sample skipped", record)
            continue
        sample_id = scalar(sample.get("sample_id")) or f"{default_session}-{record}"
        speakers = [s for s in (scalar(conv.get("speaker_a")), scalar(conv.get("speaker_b"))) if s]
        numbered = sorted(
            (int(m[1]), value)
            for k, value in conv.items()
            if (m := _SESSION_RE.fullmatch(k)) and isinstance(value, list)
        )
        for number, turns in numbered:
            raw_time = conv.get(f"session_{number}_date_time")
            at = maybe_datetime(raw_time)
            key = f"{sample_id}/session_{number}"
            title = f"{' & '.join(speakers)}, session {number}" if speakers else f"session {number}"
            index = 0
            for t in turns:
                if not isinstance(t, dict):
                    yield ParseProblem(None, f"{key}: a turn is not a JSON object; skipped", record)
                    continue
                text = (scalar(t.get("text")) or "").strip()
                caption = (scalar(t.get("blip_caption")) or "").strip()
                if caption:
                    text = f"{text} [image: {caption}]".lstrip()
                if not text:
                    continue
                meta = {"sample_id": sample_id}
                if (dia_id := scalar(t.get("dia_id"))) is not None:
                    meta["dia_id"] = dia_id
                if at is None and isinstance(raw_time, str):
                    meta["date_time"] = raw_time
                item = record_turn(Turn(text, scalar(t.get("speaker")), at, key, title, index, None, meta), record)
                yield item
                index += isinstance(item, Turn)


def _is_sample(obj: dict) -> bool:
    return isinstance(obj.get("conversation"), dict) and (
        "qa" in obj or "sample_id" in obj or "speaker_a" in obj["conversation"])


def detect(probe: Probe) -> int | None:
    """A sample (a `conversation` with its speakers or questions), or a cut one by its key names."""
    if (rank := probe.shaped(_is_sample)) is not None:
        return rank
    keys = probe.keys
    if "conversation" in keys and {"qa", "sample_id", "speaker_a", "session_1"} & keys:
        return BY_KEYS
    if "qa" in keys and {"question", "evidence"} <= keys:
        return BY_KEYS
    return None
