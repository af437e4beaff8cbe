"""`zk graph --html FILE`: notes, their links and the entity graph as one self-contained, offline page.

The page inlines vis-network (vendored in `vendor/`, Apache-2.0 OR MIT) and the data as JSON, so it
opens from disk with no network. Notes are dots (coloured by the model's first tag, your first #tag, or
the notebook: a menu chooses), entities are diamonds; note links are arrows, a note that names an entity
(or one of its merged names) is joined to it by a thin line, and relations between entities are labelled
arrows. A search box highlights and focuses matching nodes; a click shows the whole note.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html import escape
from pathlib import Path

from ..core.models import Entity, Note, Relation
from ..core.text import clip, nfc, one_line

VENDOR = Path(__file__).resolve().parents[1] / "vendor" / "vis-network.min.js"


def graph_data(notes: list[Note], entities: list[Entity], relations: list[Relation]) -> dict:
    """Nodes and edges as the page uses them (also what a test can count)."""
    ids = {n.id for n in notes}
    nodes = [{"id": n.id, "kind": "note", "label": clip(one_line(n.content), 28), "text": n.content,
              "at": n.at[:16].replace("T", " "), "tags": n.tags, "user_tags": n.user_tags,
              "notebook": n.notebook, "context": n.context, "keywords": n.keywords} for n in notes]
    edges = [{"from": n.id, "to": t, "kind": "link"} for n in notes for t in n.links if t in ids]
    canonical = {e.id: e for e in entities}

    def root(entity: Entity) -> Entity:
        seen: set[str] = set()
        while entity.merged_into in canonical and entity.id not in seen:
            seen.add(entity.id)
            entity = canonical[entity.merged_into]  # type: ignore[index]
        return entity

    names: dict[str, set[str]] = {}
    for entity in entities:
        names.setdefault(root(entity).id, set()).add(nfc(entity.name).casefold())
    texts = {n.id: nfc(n.content).casefold() for n in notes}
    for entity in entities:
        if entity.merged_into:
            continue
        nodes.append({"id": "entity:" + entity.id, "kind": "entity", "label": entity.name, "type": entity.type,
                      "notebook": entity.notebook,
                      "also": sorted(e.name for e in entities if e.merged_into and root(e).id == entity.id)})
        wanted = [name for name in names.get(entity.id, ()) if len(name) >= 2]
        edges += [{"from": "entity:" + entity.id, "to": note_id, "kind": "mention"}
                  for note_id, text in texts.items() if any(name in text for name in wanted)]
    for rel in relations:
        subject, obj = canonical.get(rel.subject), canonical.get(rel.object)
        if subject and obj and rel.invalid_from is None:
            edges.append({"from": "entity:" + root(subject).id, "to": "entity:" + root(obj).id, "kind": "relation",
                          "label": rel.predicate})
    return {"nodes": nodes, "edges": edges, "notes": len(notes),
            "entities": sum(1 for e in entities if not e.merged_into),
            "links": sum(1 for e in edges if e["kind"] == "link")}


# Inside <script type="application/json"> the HTML parser looks only for `</script` (and `<!--`, which
# changes how it finds that end); the page's JSON.parse must still read the text. JSON's own \uXXXX
# escapes for `<`, `>` and `&` satisfy both, and U+2028/2029 are escaped for any reader that takes the
# block as JavaScript.
_SCRIPT_SAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028",
                0x2029: "\\u2029"}
_SLOTS = re.compile(r"__(TITLE|CSP|SCRIPT|LIBRARY|DATA)__")


def _json_for_script(data: dict) -> str:
    """JSON that is inert inside its <script type="application/json"> element: no `<`, `>` or `&` at all."""
    return json.dumps(data, ensure_ascii=False).translate(_SCRIPT_SAFE)


def _content_security_policy(scripts: list[str]) -> str:
    """No network at all (no fetch, image, font, frame, form or base URL); only the page's own two
    scripts run, named by their hashes, so markup that somehow got into the page could not run."""
    hashes = " ".join("'sha256-" + base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode() + "'"
                      for s in scripts)
    return (f"default-src 'none'; script-src {hashes}; style-src 'unsafe-inline'; img-src data: blob:; "
            "connect-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; frame-src 'none'; "
            "worker-src 'none'; form-action 'none'; base-uri 'none'")


def render_page(data: dict, title: str) -> str:
    """The page in one pass over the fixed template: each slot is filled once, and nothing inserted is
    read again, so a note or notebook named `__DATA__` or `__LIBRARY__` stays text."""
    library = VENDOR.read_text(encoding="utf-8").replace("</script", "<\\/script")
    values = {"TITLE": escape(title, quote=True), "LIBRARY": library, "SCRIPT": _PAGE_SCRIPT,
              "DATA": _json_for_script(data),
              "CSP": _content_security_policy([library, _PAGE_SCRIPT])}  # no `"`, `<` or `&` in it
    return _SLOTS.sub(lambda slot: values[slot.group(1)], _PAGE)


_PAGE = """<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="__CSP__">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>__TITLE__</title>
<style>
  html, body { margin: 0; height: 100%; font-family: system-ui, "Noto Sans CJK KR", "Apple SD Gothic Neo", sans-serif; }
  #bar { position: absolute; top: 0; left: 0; right: 0; height: 44px; display: flex; gap: 12px; align-items: center;
         padding: 0 12px; background: #f6f6f4; border-bottom: 1px solid #ddd; z-index: 2; font-size: 14px; }
  #bar input { width: 240px; padding: 5px 8px; }
  #count { color: #555; margin-left: auto; }
  #graph { position: absolute; top: 45px; left: 0; right: 0; bottom: 0; }
  #note { position: absolute; right: 12px; top: 56px; width: 340px; max-height: 70%; overflow: auto; display: none;
          background: #fff; border: 1px solid #ccc; border-radius: 6px; padding: 10px 12px; z-index: 3;
          box-shadow: 0 2px 8px rgba(0,0,0,.15); font-size: 14px; }
  #note pre { white-space: pre-wrap; font-family: inherit; margin: 6px 0; }
  #note .meta { color: #666; font-size: 12px; }
  #note button { float: right; }
</style>
</head>
<body>
<div id="bar">
  <strong>__TITLE__</strong>
  <input id="search" type="search" placeholder="search notes and entities / 검색">
  <label>colour by <select id="colour">
    <option value="tags">model tag</option><option value="user_tags">your #tag</option>
    <option value="notebook">notebook</option></select></label>
  <span id="count" data-nodes="0"></span>
</div>
<div id="graph"></div>
<div id="note"><button id="close">×</button><div id="note-body"></div></div>
<script>__LIBRARY__</script>
<script type="application/json" id="data">__DATA__</script>
<script>__SCRIPT__</script>
</body>
</html>
"""

_PAGE_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("data").textContent);
  var palette = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                 "#9c755f", "#bab0ac"];
  function colourFor(node, by) {
    if (node.kind === "entity") return "#555555";
    var key = by === "notebook" ? node.notebook : (node[by] && node[by][0]) || "";
    if (!key) return "#c9c9c9";
    var h = 0;
    for (var i = 0; i < key.length; i++) h = (h * 31 + key.charCodeAt(i)) >>> 0;
    return palette[h % palette.length];
  }
  function visNode(node, by) {
    var entity = node.kind === "entity";
    return {id: node.id, label: node.label, shape: entity ? "diamond" : "dot", size: entity ? 12 : 9,
            color: colourFor(node, by), font: {size: entity ? 13 : 11, color: entity ? "#222" : "#333"},
            title: entity ? node.label + " (" + node.type + ")" : node.at + "  " + node.label};
  }
  var byId = {};
  data.nodes.forEach(function (n) { byId[n.id] = n; });
  var nodes = new vis.DataSet(data.nodes.map(function (n) { return visNode(n, "tags"); }));
  var edges = new vis.DataSet(data.edges.map(function (e, i) {
    if (e.kind === "link") return {id: i, from: e.from, to: e.to, arrows: "to", color: {color: "#7a7a7a"}};
    if (e.kind === "relation") return {id: i, from: e.from, to: e.to, arrows: "to", label: e.label, dashes: true,
                                       font: {size: 10, color: "#666"}, color: {color: "#999"}};
    return {id: i, from: e.from, to: e.to, color: {color: "#d8d8d8"}, width: 0.5};
  }));
  var network = new vis.Network(document.getElementById("graph"), {nodes: nodes, edges: edges}, {
    physics: {stabilization: {iterations: 300}, barnesHut: {springLength: 110}},
    interaction: {hover: true, tooltipDelay: 120}});
  var count = document.getElementById("count");
  count.dataset.nodes = String(nodes.length);
  count.textContent = data.notes + " notes, " + data.entities + " entities, " + data.links + " links";
  document.getElementById("colour").addEventListener("change", function (ev) {
    nodes.update(data.nodes.map(function (n) { return {id: n.id, color: colourFor(n, ev.target.value)}; }));
  });
  function text(tag, value, cls) {
    var el = document.createElement(tag);
    el.textContent = value;
    if (cls) el.className = cls;
    return el;
  }
  function show(id) {
    var node = byId[id], box = document.getElementById("note-body");
    if (!node) return;
    box.innerHTML = "";
    if (node.kind === "entity") {
      box.appendChild(text("h3", node.label));
      box.appendChild(text("div", node.type + (node.also.length ? " · also " + node.also.join(", ") : ""), "meta"));
    } else {
      box.appendChild(text("div", node.at + " · " + node.id.slice(0, 8) + " · " + node.notebook, "meta"));
      box.appendChild(text("pre", node.text));
      if (node.user_tags.length) box.appendChild(text("div", "your tags: #" + node.user_tags.join(" #"), "meta"));
      if (node.tags.length) box.appendChild(text("div", "model tags: " + node.tags.join(", "), "meta"));
      if (node.context) box.appendChild(text("div", node.context, "meta"));
    }
    document.getElementById("note").style.display = "block";
  }
  network.on("click", function (params) { if (params.nodes.length) show(params.nodes[0]); });
  document.getElementById("close").onclick = function () { document.getElementById("note").style.display = "none"; };
  document.getElementById("search").addEventListener("input", function (ev) {
    var q = ev.target.value.trim().toLowerCase(), hits = [];
    data.nodes.forEach(function (n) {
      var hay = (n.label + " " + (n.text || "") + " " + (n.user_tags || []).join(" ")).toLowerCase();
      if (q && hay.indexOf(q) >= 0) hits.push(n.id);
    });
    nodes.update(data.nodes.map(function (n) {
      var dim = q && hits.indexOf(n.id) < 0;
      return {id: n.id, opacity: dim ? 0.15 : 1, borderWidth: hits.indexOf(n.id) >= 0 ? 3 : 1};
    }));
    if (hits.length) { network.selectNodes(hits); network.fit({nodes: hits, animation: false}); }
    else network.unselectAll();
  });
})();
"""
