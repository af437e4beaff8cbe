"""ChatGPT's conversations.json export: each conversation's current thread, in order."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .detect import BY_KEYS, Probe, has_mapping
from .turns import (
    Item,
    ParseProblem,
    Turn,
    content_text,
    load_json_document,
    maybe_datetime,
    record_turn,
    scalar,
)


def _chatgpt_thread(mapping: dict[str, Any], current: Any) -> list[str]:
    """Node ids from the root to `current` (the branch the user last saw)."""
    if not isinstance(current, str) or current not in mapping:
        # No usable current_node: start at a root and always take the newest child.
        roots = [k for k, v in mapping.items() if not isinstance(v, dict) or v.get("parent") not in mapping]
        if not roots:
            return []
        current = roots[0]
        seen = {current}
        while True:
            node = mapping.get(current)
            children = node.get("children") if isinstance(node, dict) else None
            nxt = [c for c in children or [] if isinstance(c, str) and c in mapping and c not in seen]
            if not nxt:
                break
            current = nxt[-1]
            seen.add(current)
    path: list[str] = []
    seen_back: set[str] = set()
    node_id: Any = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen_back:
        seen_back.add(node_id)  # guard against parent cycles in a damaged export
        path.append(node_id)
        node = mapping[node_id]
        node_id = node.get("parent") if isinstance(node, dict) else None
    path.reverse()
    return path


def _chatgpt_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if not isinstance(content, dict):
        return ""
    parts = content.get("parts")
    if isinstance(parts, list):
        return content_text(parts).strip()
    text = content.get("text")
    return text.strip() if isinstance(text, str) else ""


def parse_chatgpt(data: bytes, default_session: str) -> Iterator[Item]:
    doc = load_json_document(data)
    if isinstance(doc, ParseProblem):
        yield doc
        return
    if isinstance(doc, dict) and isinstance(doc.get("conversations"), list):
        doc = doc["conversations"]
    conversations = doc if isinstance(doc, list) else [doc]
    for record, conv in enumerate(conversations, start=1):
        if not isinstance(conv, dict) or not isinstance(conv.get("mapping"), dict):
            yield ParseProblem(None, "no 'mapping' object; conversation skipped", record)
            continue
        title = scalar(conv.get("title"))
        conv_time = maybe_datetime(conv.get("create_time"))
        key = scalar(conv.get("id")) or scalar(conv.get("conversation_id"))
        if not key:
            stamp = scalar(conv.get("create_time"))
            key = f"{title}@{stamp}" if title or stamp else f"{default_session}#{record}"
        mapping: dict[str, Any] = conv["mapping"]
        index = 0
        thread = _chatgpt_thread(mapping, conv.get("current_node"))
        if not thread and mapping:  # every node has a parent in the mapping: a cycle, no root to start at
            yield ParseProblem(None, f"conversation {title or key!r}: its messages form a cycle with no first "
                               "message and no current_node; conversation skipped", record)
            continue
        for node_id in thread:
            message = mapping[node_id].get("message") if isinstance(mapping[node_id], dict) else None
            if not isinstance(message, dict):
                continue
            author = message.get("author")
            author = author if isinstance(author, dict) else {}
            role = scalar(author.get("role")) or "unknown"
            metadata = message.get("metadata")
            if role == "system" or (
                isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation")
            ):
                continue
            text = _chatgpt_text(message)
            if not text:
                continue
            meta = {"role": role, "message_id": scalar(message.get("id")) or node_id}
            at = maybe_datetime(message.get("create_time")) or conv_time
            item = record_turn(Turn(text, scalar(author.get("name")) or role, at, key, title, index, None, meta),
                                record)
            yield item
            index += isinstance(item, Turn)


def detect(probe: Probe) -> int | None:
    """A conversation with its node tree (`mapping`), or a cut document with the tree's key names."""
    if (rank := probe.shaped(has_mapping)) is not None:
        return rank
    if "mapping" in probe.keys and {"current_node", "author", "parent", "children"} & probe.keys:
        return BY_KEYS
    return None
