"""A small running journal and hypothesis strategies shared by the feature tests (revert, rm, backup,
pipeline, render)."""

from __future__ import annotations

from hypothesis import strategies as st

# Each note shares a word that names one thing with another ("Yeouido", "loop", "knee": in at most 4 notes),
# which an evolution's clause must name (the grounded contract, amem/refine.py)
RUNS = ["I run 10 km on the Yeouido loop every weekend.", "Entered the autumn 10 km race on the Yeouido loop.",
        "My knee hurts after Saturday's run on the Yeouido loop.", "Doctor: no running for two weeks, rest the knee.",
        "Ran 3 km slowly today; the knee held up."]


def add_all(memory, texts):
    """Add and process each text, one a day from 2026-03-01; their ids."""
    ids = []
    for day, text in enumerate(texts, 1):
        note = memory.add(text, f"2026-03-{day:02d}T08:00")
        memory.process(note.id)
        ids.append(note.id)
    return ids


def ask_through(memory, question: str):
    """memory.ask with its streamed pieces read to the end (the answer's fields are final then)."""
    answer = memory.ask(question)
    "".join(answer.pieces)
    return answer


def real_journal(tmp_path_factory, embedder, name: str):
    """A Memory in a fresh home on the real bundled 0.5B model and `embedder`, answering journal questions
    from the notes (the tests' config turns that path off: conftest.py)."""
    from zettel_amem.backends.llm.llama import load_llm
    from zettel_amem.memory import Memory

    memory = Memory(tmp_path_factory.mktemp(name), llm=load_llm("qwen2.5-0.5b"), embedder=embedder)
    memory.settings.answer_journal = True
    return memory


def add_dated(memory, entries: list[tuple[str, str]]) -> None:
    """Add each (timestamp, text) without processing: the journal-answer path needs no LLM step."""
    for at, text in entries:
        memory.add(text, at=at)


def snapshot(memory):
    return {n.id: (n.content, n.context, n.tags, n.keywords, n.links, n.version)
            for n in memory.store.notes()}


# Terminal control: OSC titles, CSI clears and colours, the 8-bit CSI, DCS, BEL, BS, hyperlinks, CR, DEL, NEL, RLO.
ESCAPES = st.sampled_from(["\x1b]0;pwned\x07", "\x1b[2J", "\x1b[31m", "\x9b2J", "\x1bP+q\x1b\\", "\x07", "\x08",
                           "\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "\r", "\x7f", "\x85", "\u202e"])


TEXT_WITH_ESCAPES = st.lists(st.one_of(st.text(min_size=1, max_size=20), ESCAPES), min_size=1, max_size=6).map(
    "".join)
