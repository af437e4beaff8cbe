"""Rich rendering of the tiers for people: sessions, episodes, the entity graph (render.py has the notes)."""

from __future__ import annotations

from rich.panel import Panel
from rich.table import Table
from rich.tree import Tree

from ..core.models import Note
from ..core.text import one_line
from .render import console, err_console, escape


def sessions_table(sessions: list[dict]) -> None:
    table = Table()
    for name in ("session", "title", "turns", "from", "to", "speakers", "episode"):
        table.add_column(name, no_wrap=name in ("session", "from", "to"))
    for s in sessions:
        episode = s.get("episode")
        summary = "" if not episode else (escape(one_line(episode["abstract"], 50)) if episode["abstract"]
                                          else f"[dim]{episode['status']}[/]")
        table.add_row(f"[bold cyan]{s['session_id']}[/]", escape(one_line(str(s.get('title') or ''), 40)),
                      str(s["turns"]), str(s["first_at"])[:16].replace("T", " "),
                      str(s["last_at"])[:16].replace("T", " "), escape(", ".join(s.get("speakers") or [])), summary)
    console.print(table)


def session_view(turns: list[Note]) -> None:
    first = turns[0]
    console.print(f"[bold]session {first.session_id}[/] {escape(first.source or '')} — {len(turns)} turn(s)")
    for turn in turns:
        speaker = f"[bold]{escape(turn.speaker)}:[/] " if turn.speaker else ""
        console.print(f"[cyan]{turn.short_id}[/] [dim]{turn.at[:16].replace('T', ' ')}[/] {speaker}"
                      f"{escape(turn.content)}")


def episodes_table(hints, title: str | None = "episodes") -> None:
    table = Table(title=title)
    table.add_column("id", style="bold cyan", no_wrap=True)
    table.add_column("score", justify="right")
    table.add_column("date", style="dim", no_wrap=True)
    table.add_column("abstract")
    for hint in hints:
        table.add_row(hint.episode.id[:9], f"{hint.score:.3f}", hint.episode.start[:10],
                      escape(hint.episode.abstract))
    console.print(table)


def episode_view(episode, turns: list[Note]) -> None:
    head = (f"[bold cyan]{episode.id}[/] [dim]{episode.start[:16].replace('T', ' ')} – "
            f"{episode.end[:16].replace('T', ' ')}[/]  {escape(episode.title)}  ({episode.turns} turns, "
            f"{episode.status})")
    body = "\n".join(f"• {escape(line)}" for line in episode.summary.splitlines() if line.strip())
    console.print(Panel(body or "[dim](no summary yet)[/]", title=head, title_align="left"))
    console.print(f"[dim]raw turns: zk show {episode.session_id}[/]")


def graph_tree(view: dict) -> Tree:
    def label(node: dict) -> str:
        aliases = f" [dim](also {escape(', '.join(node['aliases']))})[/]" if node["aliases"] else ""
        return f"[bold]{escape(node['name'])}[/] [magenta]{node['type']}[/]{aliases}"

    def grow(branch: Tree, node: dict) -> None:
        for rel in node["relations"]:
            arrow = "→" if rel["direction"] == "out" else "←"
            span = (f"since {rel['valid_from'][:10]}" if rel["current"]
                    else f"[red]{rel['valid_from'][:10]} – {rel['invalid_from'][:10]}[/]")
            style = "" if rel["current"] else "[strike]"
            close = "" if rel["current"] else "[/strike]"
            undo = "" if rel["current"] else f" · ended by a newer fact; undo: zk graph --restore {rel['id'][:8]}"
            branch.add(f"{arrow} {style}{escape(rel['predicate'])} [bold]{escape(rel['other'])}[/]{close} "
                       f"[dim]{span} · {rel['episode'][:9]}{undo}[/]")
        for child in node["connected"]:
            grow(branch.add(label(child)), child)

    title = label(view["entity"]) + (f" [dim]as of {view['at'][:10]}[/]" if view.get("at") else "")
    tree = Tree(title)
    grow(tree, view["entity"])
    if not view["entity"]["relations"]:
        tree.add("[dim]no relations" + (" at that time" if view.get("at") else "") + "[/]")
    return tree


def entities_table(rows: list[dict]) -> None:
    table = Table(title="entities")
    for name in ("name", "type", "same as", "episodes"):
        table.add_column(name)
    for row in rows:
        same = "" if not row["merged_into"] else f"{escape(row['canonical'])} [dim]({escape(row['merge_reason'])})[/]"
        table.add_row(escape(row["name"]), row["type"], same, str(len(row["episodes"])))
    console.print(table)


def episode_summary(results) -> None:
    done = sum(1 for r in results if not r.error)
    calls = sum(r.llm_calls for r in results)
    facts = sum(r.relations for r in results)
    console.print(f"episodes: [green]{done} summarised[/], {calls} LLM call(s), {facts} fact(s), "
                  f"{sum(r.invalidated for r in results)} superseded, {sum(r.merged for r in results)} merged")
    for r in results:
        if r.error:
            err_console.print(f"[yellow]episode {r.id[:9]} stays pending:[/] {escape(r.error)}")
