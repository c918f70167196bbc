// jsonl-session transcript page. Everything from the session is untrusted: it is only ever put
// into the page with textContent / createTextNode, never as HTML. Items are rendered lazily,
// PAGE at a time as the reader scrolls, so a 100,000-item page opens as fast as a short one.
"use strict";
(() => {
  const PAGE = 150;
  const TEXT_LIMIT = 4000;
  const FOLD_CHARS = 600;
  const FOLD_LINES = 12;
  const TONES = new Set(["user", "assistant", "system", "tool", "output", "reasoning", "handoff", "other", "invalid"]);

  const data = JSON.parse(document.getElementById("session-data").textContent);
  const list = document.getElementById("items");
  const sentinel = document.getElementById("more");
  const search = document.getElementById("search");
  const kindsBox = document.getElementById("kinds");
  const counter = document.getElementById("count");

  let items = data.items;
  let haystacks = [];
  let query = "";
  let visible = [];
  let shown = 0;
  const hidden = new Set();
  const cards = new Map();

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function haystack(index) {
    let text = haystacks[index];
    if (text === undefined) {
      const view = items[index];
      text = [view.kind, view.title, view.text, view.ref, ...view.blocks.map((b) => b.text)].join("\n").toLowerCase();
      haystacks[index] = text;
    }
    return text;
  }

  function matches(index) {
    return !hidden.has(items[index].kind) && (!query || haystack(index).includes(query));
  }

  // Text with the search term marked: text nodes and <mark> elements, never markup.
  function marked(parent, text) {
    if (!query) {
      parent.append(text);
      return;
    }
    const lower = text.toLowerCase();
    let at = 0;
    for (let found = lower.indexOf(query); found >= 0; found = lower.indexOf(query, at)) {
      parent.append(text.slice(at, found), el("mark", "", text.slice(found, found + query.length)));
      at = found + query.length;
    }
    parent.append(text.slice(at));
  }

  function prose(text) {
    const node = el("div", "text");
    if (text.length <= TEXT_LIMIT) {
      marked(node, text);
      return node;
    }
    marked(node, text.slice(0, TEXT_LIMIT) + "…");
    const more = el("button", "all", ` show all ${text.length.toLocaleString()} characters`);
    more.type = "button";
    more.addEventListener("click", () => {
      node.replaceChildren();
      marked(node, text);
    });
    node.append(more);
    return node;
  }

  function block(part) {
    const lines = part.text.split("\n").length;
    const details = el("details");
    const size = part.text.length > 1024 ? `${(part.text.length / 1024).toFixed(1)} KB` : `${part.text.length} chars`;
    details.append(el("summary", "", `${part.caption} · ${lines} line${lines === 1 ? "" : "s"} · ${size}`));
    const fill = () => {
      if (details.childElementCount === 1) {
        const pre = el("pre");
        marked(pre, part.text);
        details.append(pre);
      }
    };
    // Long parts start folded and are only put in the page when opened.
    if (part.text.length <= FOLD_CHARS && lines <= FOLD_LINES) {
      details.open = true;
      fill();
    } else {
      details.addEventListener("toggle", fill);
    }
    return details;
  }

  function card(index) {
    const view = items[index];
    const number = Number.isInteger(view.number) ? view.number : 0;
    const node = el("article", "item tone-" + (TONES.has(view.tone) ? view.tone : "other"));
    node.id = "L" + number;
    const head = el("header");
    const link = el("a", "num", String(number));
    link.href = "#L" + number;
    link.title = "line " + number + " of the file";
    head.append(link, el("span", "title", view.title));
    if (view.ref) head.append(el("span", "ref", view.ref));
    node.append(head);
    if (view.text) node.append(prose(view.text));
    for (const part of view.blocks) node.append(block(part));
    cards.set(index, node);
    return node;
  }

  function renderMore() {
    const end = Math.min(visible.length, shown + PAGE);
    const batch = document.createDocumentFragment();
    for (; shown < end; shown++) batch.append(card(visible[shown]));
    list.append(batch);
    updateCount();
    // A short page may leave the sentinel in view: the observer would not fire again.
    if (shown < visible.length && sentinel.getBoundingClientRect().top < innerHeight + 800) {
      requestAnimationFrame(renderMore);
    }
  }

  function refilter() {
    visible = [];
    for (let i = 0; i < items.length; i++) if (matches(i)) visible.push(i);
    list.replaceChildren();
    cards.clear();
    shown = 0;
    if (!visible.length) list.append(el("p", "empty", items.length ? "No item matches." : "No items yet."));
    renderMore();
  }

  function updateCount() {
    const total = items.length.toLocaleString();
    counter.textContent = visible.length === items.length
      ? `${total} item${items.length === 1 ? "" : "s"}`
      : `${visible.length.toLocaleString()} of ${total} items match`;
  }

  function updateKinds() {
    const counts = new Map();
    for (const view of items) counts.set(view.kind, (counts.get(view.kind) || 0) + 1);
    kindsBox.replaceChildren();
    for (const [kind, count] of counts) {
      const button = el("button", "kind", kind);
      button.type = "button";
      button.dataset.kind = kind;
      button.setAttribute("aria-pressed", String(!hidden.has(kind)));
      button.append(el("span", "n", count.toLocaleString()));
      button.addEventListener("click", () => {
        if (hidden.has(kind)) hidden.delete(kind);
        else hidden.add(kind);
        button.setAttribute("aria-pressed", String(!hidden.has(kind)));
        refilter();
      });
      kindsBox.append(button);
    }
  }

  function goTo(number) {
    const index = items.findIndex((view) => view.number === number);
    if (index < 0) return;
    if (!matches(index)) {
      hidden.clear();
      query = search.value = "";
      updateKinds();
      refilter();
    }
    const position = visible.indexOf(index);
    while (shown <= position) renderMore();
    cards.get(index).scrollIntoView({ block: "center" });
  }

  function fromHash() {
    const match = /^#L(\d+)$/.exec(location.hash);
    if (match) goTo(Number(match[1]));
  }

  new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting) && shown < visible.length) renderMore();
  }, { rootMargin: "800px" }).observe(sentinel);

  let typing = 0;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      query = search.value.trim().toLowerCase();
      refilter();
    }, 120);
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "/" && document.activeElement !== search) {
      event.preventDefault();
      search.focus();
    }
  });
  addEventListener("hashchange", fromHash);

  updateKinds();
  refilter();
  fromHash();
  document.body.dataset.ready = "true";
  performance.mark("jsonl-session-ready"); // benchmarks/viewer.py reads it

  // -- live: changes from the server, as server-sent events ----------------------------------
  if (!data.live) return;
  const status = document.getElementById("live");
  const log = document.getElementById("changes");

  function note(kind, text) {
    const entry = el("li", kind, `${new Date().toLocaleTimeString()} ${text}`);
    log.prepend(entry);
    while (log.childElementCount > 8) log.lastChild.remove();
  }

  function nearBottom() {
    return innerHeight + scrollY >= document.body.scrollHeight - 120;
  }

  function replaceAll(views) {
    items = views;
    haystacks = [];
    updateKinds();
    refilter();
  }

  function appended(views) {
    const follow = nearBottom();
    for (const view of views) {
      const index = items.push(view) - 1;
      if (!matches(index)) continue;
      visible.push(index);
      if (shown === visible.length - 1) {
        const placeholder = list.querySelector(".empty");
        if (placeholder) placeholder.remove();
        list.append(card(index));
        shown++;
      }
    }
    updateKinds();
    updateCount();
    if (follow && views.length) scrollTo(0, document.body.scrollHeight);
  }

  function removed(count) {
    const keep = Math.max(0, items.length - count);
    for (let index = keep; index < items.length; index++) {
      const node = cards.get(index);
      if (node) node.remove();
      cards.delete(index);
    }
    items.length = keep;
    haystacks.length = Math.min(haystacks.length, keep);
    while (visible.length && visible[visible.length - 1] >= keep) visible.pop();
    shown = Math.min(shown, visible.length);
    updateKinds();
    updateCount();
  }

  function first(views) {
    return views.length ? views[0].number : items.length + 1;
  }

  const handlers = {
    reset(change) {
      replaceAll(change.items);
    },
    appended(change) {
      const from = first(change.items);
      note("appended", change.count === 1 ? `item ${from} appended` : `${change.count} items appended (from ${from})`);
      appended(change.items);
    },
    removed(change) {
      const from = items.length - change.count + 1;
      note("removed", change.count === 1 ? `item ${from} removed` : `${change.count} items removed (from ${from})`);
      removed(change.count);
    },
    cleared(change) {
      note("cleared", `session cleared (${change.count} item${change.count === 1 ? "" : "s"} removed)`);
      replaceAll([]);
    },
    replaced(change) {
      note("replaced", `session rewritten: now ${change.count} item${change.count === 1 ? "" : "s"}`);
      replaceAll(change.items);
    },
    deleted() {
      note("deleted", "session file deleted");
      replaceAll([]);
    },
    problem(change) {
      note("problem", String(change.message));
    },
  };

  const source = new EventSource(data.live.events);
  source.addEventListener("change", (event) => {
    const change = JSON.parse(event.data);
    if (Object.hasOwn(handlers, change.kind)) handlers[change.kind](change);
    document.body.dataset.version = String(change.version);
  });
  source.addEventListener("open", () => {
    status.className = "live on";
    status.lastChild.textContent = "live";
  });
  source.addEventListener("error", () => {
    status.className = "live";
    status.lastChild.textContent = "reconnecting…";
  });
})();
