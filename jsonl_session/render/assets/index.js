// jsonl-session index page: the sessions of a folder, most recently active first (as `ls`
// lists them), kept up to date as they change. Session ids and notes are untrusted text: textContent only, links built by encoding.
"use strict";
(() => {
  const data = JSON.parse(document.getElementById("index-data").textContent);
  const body = document.getElementById("sessions");
  const counter = document.getElementById("count");

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function size(bytes) {
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }

  function render(sessions) {
    body.replaceChildren();
    for (const session of sessions) {
      const row = el("tr");
      row.dataset.id = session.id;
      const name = el("td");
      const link = el("a", "", session.id);
      link.href = "session?id=" + encodeURIComponent(session.id);
      name.append(link);
      const notes = el("td");
      for (const text of session.notes) notes.append(el("span", "note", text));
      const title = el("td", session.default_title ? "session-title default" : "session-title", session.title || "");
      if (session.default_title) title.title = "No title set: the first user message";
      const tags = el("td");
      for (const tag of session.tags) tags.append(el("span", "tag", tag), " ");
      const active = new Date(session.last_activity);
      row.append(
        name,
        title,
        el("td", "", session.owner || ""),
        tags,
        el("td", "n", session.items.toLocaleString()),
        el("td", "n", size(session.size)),
        el("td", "when", isNaN(active) ? "" : active.toLocaleString()),
        notes,
      );
      body.append(row);
    }
    counter.textContent = `${sessions.length} session${sessions.length === 1 ? "" : "s"} in ${data.folder}`;
    if (!sessions.length) {
      const row = el("tr");
      const cell = el("td", "empty", "No sessions yet: they appear here as they are written.");
      cell.colSpan = 8;
      row.append(cell);
      body.append(row);
    }
  }

  render(data.sessions);
  document.body.dataset.ready = "true";

  // Any change in the folder: fetch the list again, at most every half second.
  let waiting = false;
  let again = false;
  async function refresh() {
    if (waiting) {
      again = true;
      return;
    }
    waiting = true;
    try {
      const response = await fetch(data.api, { cache: "no-store" });
      if (response.ok) render(await response.json());
    } finally {
      setTimeout(() => {
        waiting = false;
        if (again) {
          again = false;
          refresh();
        }
      }, 500);
    }
  }
  const source = new EventSource(data.events);
  source.addEventListener("change", refresh);
  source.addEventListener("open", refresh);
})();
