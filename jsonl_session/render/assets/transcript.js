// jsonl-session transcript page. Everything from the session is untrusted: it is only ever put
// into the page with textContent / createTextNode, never as HTML, and no link is made from it.
//
// Virtualised: only the items near the viewport are in the page (between two spacers whose
// heights stand for the others: measured heights where an item was drawn, estimates elsewhere),
// so a 100,000-item session opens, scrolls and jumps as fast as a short one and the DOM stays
// small. Search, filters, #L links and "find" (Ctrl+F focuses the search; Enter goes to the
// next match) work on the data, over all items; see docs/viewer.md.
"use strict";
(() => {
  const TEXT_LIMIT = 4000; // characters of a text drawn before "show all"
  const BLOCK_LIMIT = 20000; // characters of a folded-open block drawn before "show all"
  const FOLD_CHARS = 600;
  const FOLD_LINES = 12;
  const WRAP_LIMIT = 100000; // longer texts never wrap anywhere (page.css: Chromium's line breaker)
  const MAX_CARDS = 200; // whatever the viewport, at most this many items are in the page
  const TONES = new Set(["user", "assistant", "system", "tool", "output", "reasoning", "handoff", "other", "invalid"]);
  // The words users know, for the item types whose raw name is jargon (the raw one is on hover).
  const WORDS = { function_call: "tool call", function_call_output: "tool output", invalid: "unreadable line" };

  const data = JSON.parse(document.getElementById("session-data").textContent);
  const $ = (id) => document.getElementById(id);
  const list = $("items");
  const topSpace = $("top-space");
  const bottomSpace = $("bottom-space");
  const emptyNote = $("empty");
  const header = document.querySelector("header.top");
  const search = $("search");
  const kindsBox = $("kinds");
  const counter = $("count");
  const alertBox = $("alert");

  let items = data.items;
  // When each item was added, by line number ([number, ms since 1970] pairs; core/item_times.py).
  const times = new Map(data.times || []);
  let haystacks = [];
  let query = "";
  let visible = []; // indices into items of the items that pass the filters, in order
  const hidden = new Set();
  const kindButtons = new Map();

  // -- geometry: heights (measured or guessed) and their prefix sums over `visible` ------------
  let heights = []; // by item index: measured height (px, margin included), or undefined
  let guesses = []; // by item index: estimated height
  let offsets = new Float64Array(1); // offsets[p]: top of visible[p] within the list
  let dirty = true;
  let first = 0; // the drawn items are visible[first .. last)
  let last = 0;
  const cards = new Map(); // item index -> its article, for the drawn ones
  let clearance = 0; // the sticky header's height (0 when it does not stick)
  let charsPerRow = 90;

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function word(kind) {
    return Object.hasOwn(WORDS, kind) ? WORDS[kind] : kind;
  }

  function rows(text) {
    let count = 0;
    for (let start = 0; ; ) {
      const end = text.indexOf("\n", start);
      const length = (end < 0 ? text.length : end) - start;
      count += Math.max(1, Math.ceil(length / charsPerRow));
      if (end < 0 || count > 400) return count;
      start = end + 1;
    }
  }

  function folded(part) {
    return part.text.length > FOLD_CHARS || part.text.split("\n", FOLD_LINES + 1).length > FOLD_LINES;
  }

  function guess(index) {
    let height = guesses[index];
    if (height === undefined) {
      const view = items[index];
      height = 42;
      if (view.text) height += 22.5 * rows(view.text.length > TEXT_LIMIT ? view.text.slice(0, TEXT_LIMIT) : view.text);
      for (const part of view.blocks) {
        height += 24;
        if (!folded(part)) height += 22 + 18 * part.text.split("\n").length;
      }
      guesses[index] = height;
    }
    return height;
  }

  function heightAt(position) {
    const index = visible[position];
    const height = heights[index];
    return height === undefined ? guess(index) : height;
  }

  function layout() {
    if (!dirty) return;
    offsets = new Float64Array(visible.length + 1);
    for (let p = 0; p < visible.length; p++) offsets[p + 1] = offsets[p] + heightAt(p);
    dirty = false;
  }

  function positionAt(y) {
    let low = 0;
    let high = visible.length - 1;
    if (high < 0) return 0;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if (offsets[middle] <= y) low = middle;
      else high = middle - 1;
    }
    return low;
  }

  function positionOf(index) {
    let low = 0;
    let high = visible.length - 1;
    while (low <= high) {
      const middle = (low + high) >> 1;
      if (visible[middle] === index) return middle;
      if (visible[middle] < index) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  function listTop() {
    return topSpace.getBoundingClientRect().top + scrollY;
  }

  // -- text ---------------------------------------------------------------------------------

  function haystack(index) {
    let text = haystacks[index];
    if (text === undefined) {
      const view = items[index];
      text = [word(view.kind), view.kind, view.title, view.text, view.ref, ...view.blocks.map((b) => b.text)]
        .join("\n")
        .toLowerCase();
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

  // Message text: ``` fences become code blocks and `spans` code, as text (never HTML).
  function inline(parent, text) {
    const parts = text.split(/`([^`\n]+)`/);
    for (let i = 0; i < parts.length; i++) {
      if (i % 2) {
        const code = el("code");
        marked(code, parts[i]);
        parent.append(code);
      } else if (parts[i]) {
        marked(parent, parts[i]);
      }
    }
  }

  function formatted(parent, text) {
    const lines = text.split("\n");
    let prose = [];
    const flush = () => {
      if (prose.length) inline(parent, prose.join("\n"));
      prose = [];
    };
    for (let i = 0; i < lines.length; i++) {
      const open = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/.exec(lines[i]);
      if (!open) {
        prose.push(lines[i]);
        continue;
      }
      const fence = open[1];
      let end = i + 1;
      while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
      flush();
      const pre = el("pre", "code");
      if (open[2]) pre.append(el("span", "lang", open[2]));
      const code = el("code");
      marked(code, lines.slice(i + 1, end).join("\n"));
      pre.append(code);
      parent.append(pre);
      i = end; // the closing fence (or the end)
    }
    flush();
  }

  // A long text or block shows its start; "show all" draws the rest, moves focus to it, and
  // becomes "show less", which folds it back (focus stays on the button).
  function foldable(node, text, limit, fill) {
    const more = el("button", "all");
    more.type = "button";
    let whole = false;
    const draw = () => {
      node.replaceChildren();
      fill(node, whole ? text : text.slice(0, limit) + "…");
      more.textContent = whole ? "show less" : `show all ${text.length.toLocaleString()} characters`;
      more.setAttribute("aria-expanded", String(whole));
    };
    more.addEventListener("click", () => {
      whole = !whole;
      draw();
      if (whole) {
        node.tabIndex = -1;
        node.focus();
      } else if (more.getBoundingClientRect().top < clearance) {
        more.scrollIntoView({ block: "center" });
      }
      settle(node);
    });
    draw();
    return more;
  }

  function prose(view) {
    const node = el("div", "text");
    if (view.text.length > WRAP_LIMIT) node.classList.add("huge");
    const fill = view.tone === "invalid" ? marked : formatted;
    if (view.text.length <= TEXT_LIMIT) {
      fill(node, view.text);
      return [node];
    }
    return [node, foldable(node, view.text, TEXT_LIMIT, fill)];
  }

  function block(part, number) {
    const lines = part.text.split("\n").length;
    const details = el("details");
    const size = part.text.length > 1024 ? `${(part.text.length / 1024).toFixed(1)} KB` : `${part.text.length} chars`;
    details.append(el("summary", "", `${part.caption} · ${lines} line${lines === 1 ? "" : "s"} · ${size}`));
    const fill = () => {
      if (details.childElementCount > 1) return;
      const pre = el("pre");
      pre.dataset.label = `${part.caption} of line ${number}`;
      if (part.text.length > WRAP_LIMIT) pre.classList.add("huge");
      if (part.text.length <= BLOCK_LIMIT) {
        marked(pre, part.text);
        details.append(pre);
      } else {
        details.append(pre, foldable(pre, part.text, BLOCK_LIMIT, marked));
      }
    };
    // Long parts start folded and are only put in the page when opened.
    if (!folded(part)) {
      details.open = true;
      fill();
    }
    details.addEventListener("toggle", () => {
      fill();
      settle(details);
    });
    return details;
  }

  function card(index) {
    const view = items[index];
    const number = Number.isInteger(view.number) ? view.number : 0;
    const node = el("article", "item tone-" + (TONES.has(view.tone) ? view.tone : "other"));
    node.id = "L" + number;
    node.tabIndex = -1;
    const head = el("header");
    const link = el("a", "num", String(number));
    link.href = "#L" + number;
    link.title = "line " + number + " of the file";
    link.setAttribute("aria-label", "line " + number);
    const title = el("span", "title", view.title);
    const raw = view.kind === "handoff" ? (view.blocks[0] && view.blocks[0].caption === "output" ? "function_call_output" : "function_call") : view.kind;
    if (raw !== view.title) title.title = "type: " + raw;
    head.append(link, title);
    if (view.ref) head.append(el("span", "ref", view.ref));
    if (times.has(number)) head.append(addedAt(times.get(number)));
    node.append(head);
    if (view.text) node.append(...prose(view));
    for (const part of view.blocks) node.append(block(part, number));
    return node;
  }

  // When the item was added: a short label (date and minute, local time), the full time on
  // hover, and for screen readers "added" before it.
  function addedAt(ms) {
    const when = new Date(ms);
    const node = el("time", "at");
    node.dateTime = when.toISOString();
    node.title = "added " + when.toLocaleString();
    node.append(el("span", "sr", "added "), when.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" }));
    return node;
  }

  // A block that scrolls (a long word, a tall output) is a focusable, labelled region, so a
  // keyboard can scroll it; one that does not is left alone (no useless tab stop).
  function regions(root) {
    for (const node of root.querySelectorAll(".text, pre")) {
      const scrolls = node.scrollWidth > node.clientWidth + 1 || node.scrollHeight > node.clientHeight + 1;
      if (scrolls && node.getAttribute("role") !== "region") {
        node.tabIndex = 0;
        node.setAttribute("role", "region");
        const article = node.closest("article");
        node.setAttribute("aria-label", node.dataset.label || `text of ${article ? article.id.replace("L", "line ") : "item"}, scrolls`);
      } else if (!scrolls && node.getAttribute("role") === "region") {
        node.removeAttribute("role");
        node.removeAttribute("aria-label");
        if (document.activeElement !== node) node.removeAttribute("tabindex");
      }
    }
  }

  // -- drawing ------------------------------------------------------------------------------

  function measure() {
    const nodes = list.children;
    if (!nodes.length || !cards.size) return;
    const bottom = list.offsetHeight;
    for (let i = 0; i < nodes.length; i++) {
      const node = nodes[i];
      const next = i + 1 < nodes.length ? nodes[i + 1].offsetTop : bottom;
      const height = next - node.offsetTop;
      const index = Number(node.dataset.index);
      if (height > 0 && heights[index] !== height) {
        heights[index] = height;
        dirty = true;
      }
    }
  }

  function spacers() {
    layout();
    topSpace.style.height = offsets[first] + "px";
    bottomSpace.style.height = offsets[visible.length] - offsets[last] + "px";
  }

  function draw(from, to) {
    const old = [first, last];
    const kept = Math.max(from, old[0]) < Math.min(to, old[1]);
    for (const [index, node] of cards) {
      const position = positionOf(index);
      if (!kept || position < from || position >= to) {
        node.remove();
        cards.delete(index);
      }
    }
    const make = (start, end) => {
      const batch = document.createDocumentFragment();
      for (let p = start; p < end; p++) {
        const index = visible[p];
        const node = card(index);
        node.dataset.index = String(index);
        cards.set(index, node);
        batch.append(node);
      }
      return batch;
    };
    if (!kept) {
      list.append(make(from, to));
    } else {
      list.prepend(make(from, old[0] > from ? old[0] : from));
      list.append(make(Math.max(old[1], from), to));
    }
    first = from;
    last = to;
  }

  // The drawn range for the viewport, with a screenful or so above and below; the focused
  // item stays drawn while it is near (Tab goes on from it).
  function wanted(viewTop, viewBottom) {
    const margin = Math.max(600, innerHeight);
    let from = positionAt(Math.max(0, viewTop - margin));
    let to = Math.min(visible.length, positionAt(viewBottom + margin) + 1);
    const focused = document.activeElement && document.activeElement.closest && document.activeElement.closest("article.item");
    if (focused && cards.has(Number(focused.dataset.index))) {
      const position = positionOf(Number(focused.dataset.index));
      if (position >= 0 && Math.max(to, position + 1) - Math.min(from, position) <= MAX_CARDS) {
        from = Math.min(from, position);
        to = Math.max(to, position + 1);
      }
    }
    if (to - from > MAX_CARDS) to = from + MAX_CARDS;
    return [from, to];
  }

  // Draw what the viewport needs, keeping the first item in view where it is on screen.
  function update(force) {
    measure();
    layout();
    const top = listTop();
    const viewTop = scrollY - top;
    const viewBottom = viewTop + innerHeight;
    const slack = Math.max(300, innerHeight / 2);
    if (
      !force &&
      (first === 0 || viewTop - slack >= offsets[first]) &&
      (last === visible.length || viewBottom + slack <= offsets[last]) &&
      viewBottom >= offsets[first] &&
      viewTop <= offsets[last]
    ) {
      return;
    }
    let anchor = null;
    let anchorTop = 0;
    for (const node of list.children) {
      const rect = node.getBoundingClientRect();
      if (rect.bottom > clearance) {
        anchor = node;
        anchorTop = rect.top;
        break;
      }
    }
    const [from, to] = wanted(viewTop, viewBottom);
    if (force || from !== first || to !== last) draw(from, to);
    measure();
    spacers();
    if (anchor && anchor.isConnected) {
      const moved = anchor.getBoundingClientRect().top - anchorTop;
      if (Math.abs(moved) >= 1) scrollBy(0, moved);
    }
    regions(list);
    emptyNote.hidden = visible.length > 0;
  }

  // A drawn item changed height (a block opened, "show all"): measure it again.
  function settle(node) {
    measure();
    spacers();
    regions(node.closest("article") || list);
  }

  // Scroll so the item at `position` is at the top, just below the header, drawn and measured.
  function reveal(position, end) {
    layout();
    const screenful = Math.ceil(innerHeight / 40) + 2;
    const from = Math.max(0, end ? position - screenful : position - 2);
    const to = Math.min(visible.length, end ? position + 1 : position + screenful);
    draw(from, to);
    measure();
    spacers();
    const node = cards.get(visible[position]);
    const y = end
      ? document.documentElement.scrollHeight
      : position === 0
        ? 0
        : node.getBoundingClientRect().top + scrollY - clearance - 8;
    scrollTo({ top: y, behavior: "instant" });
    update(true);
    if (end) scrollTo({ top: document.documentElement.scrollHeight, behavior: "instant" });
    update(false);
    return cards.get(visible[position]);
  }

  function jump(position, { end = false, focus = true, target = false } = {}) {
    if (!visible.length) return null;
    position = Math.max(0, Math.min(visible.length - 1, position));
    const node = reveal(position, end);
    if (node) {
      for (const old of list.querySelectorAll(".target")) old.classList.remove("target");
      if (target) node.classList.add("target");
      if (focus) node.focus({ preventScroll: true });
    }
    return node;
  }

  function refilter() {
    // Keep the reader's place: the first item in view, or the next one that still shows.
    let keep = -1;
    if (scrollY > listTop() - clearance) {
      for (const node of list.children) {
        if (node.getBoundingClientRect().bottom > clearance) {
          keep = Number(node.dataset.index);
          break;
        }
      }
    }
    visible = [];
    matchAt = -1;
    for (let i = 0; i < items.length; i++) if (matches(i)) visible.push(i);
    for (const node of cards.values()) node.remove();
    cards.clear();
    first = last = 0;
    dirty = true;
    emptyNote.textContent = items.length ? "No item matches." : "No items yet.";
    emptyNote.hidden = visible.length > 0;
    if (keep >= 0 && visible.length) {
      let position = 0;
      while (position < visible.length - 1 && visible[position] < keep) position++;
      reveal(position, false);
    } else {
      update(true);
    }
    updateCount();
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
    for (const [kind, button] of kindButtons) {
      if (!counts.has(kind)) {
        button.remove();
        kindButtons.delete(kind);
        if (hidden.delete(kind)) dirty = true;
      }
    }
    for (const [kind, count] of counts) {
      let button = kindButtons.get(kind);
      if (!button) {
        button = el("button", "kind");
        button.type = "button";
        button.dataset.kind = kind;
        if (word(kind) !== kind) button.title = "type: " + kind;
        button.append(word(kind), " ", el("span", "n"));
        button.addEventListener("click", () => {
          if (hidden.has(kind)) hidden.delete(kind);
          else hidden.add(kind);
          button.setAttribute("aria-pressed", String(!hidden.has(kind)));
          refilter();
        });
        kindsBox.append(button);
        kindButtons.set(kind, button);
      }
      button.setAttribute("aria-pressed", String(!hidden.has(kind)));
      button.lastChild.textContent = count.toLocaleString();
      // Read as "tool call, 2 items" (the pressed state says whether they show).
      button.setAttribute("aria-label", `${word(kind)}, ${count.toLocaleString()} item${count === 1 ? "" : "s"}`);
    }
  }

  function goToNumber(number) {
    const index = items.findIndex((view) => view.number === number);
    if (index < 0) return null;
    if (!matches(index)) {
      hidden.clear();
      query = search.value = "";
      updateKinds();
      refilter();
    }
    return jump(positionOf(index), { target: true });
  }

  function fromHash() {
    const match = /^#L(\d+)$/.exec(location.hash);
    if (match && goToNumber(Number(match[1]))) performance.mark("jsonl-session-target");
  }

  // The position of the first item in view (below the header).
  function current() {
    for (const node of list.children) {
      if (node.getBoundingClientRect().bottom > clearance + 10) return positionOf(Number(node.dataset.index));
    }
    return 0;
  }

  // Enter in the search: the next match (the first in view, the first time), Shift+Enter the previous.
  let matchAt = -1;
  function nextMatch(step) {
    if (!query || !visible.length) return;
    const position = matchAt < 0 || matchAt >= visible.length
      ? (step > 0 ? current() : (current() - 1 + visible.length) % visible.length)
      : (matchAt + step + visible.length) % visible.length;
    matchAt = position;
    const found = jump(position, { focus: false, target: true });
    if (found) counter.textContent = `match ${(position + 1).toLocaleString()} of ${visible.length.toLocaleString()} (line ${items[visible[position]].number})`;
  }

  function measureHeader() {
    const sticky = getComputedStyle(header).position === "sticky";
    clearance = sticky ? header.offsetHeight : 0;
    document.documentElement.style.setProperty("--header-h", clearance + "px");
  }

  let width = 0;
  function resized() {
    measureHeader();
    const now = list.clientWidth;
    if (now && now !== width) {
      width = now;
      charsPerRow = Math.max(20, Math.floor((now - 30) / 7.6));
      heights = [];
      guesses = [];
      dirty = true;
    }
    update(true);
  }

  // -- events -------------------------------------------------------------------------------

  let frame = 0;
  addEventListener("scroll", () => {
    if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        update(false);
      });
    }
  }, { passive: true });
  new ResizeObserver(() => resized()).observe(header);
  addEventListener("resize", () => resized());

  let typing = 0;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      query = search.value.trim().toLowerCase();
      refilter();
    }, 120);
  });
  search.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      clearTimeout(typing);
      const now = search.value.trim().toLowerCase();
      if (now !== query) {
        query = now;
        refilter();
      }
      nextMatch(event.shiftKey ? -1 : 1);
    }
  });
  $("oldest").addEventListener("click", () => jump(0));
  $("newest").addEventListener("click", () => jump(visible.length - 1, { end: true }));
  const wrap = $("wrap");
  try {
    if (localStorage.getItem("jsonl-session-wrap") === "1") document.body.classList.add("wrap");
  } catch {
    // no storage (a file:// page in some browsers): the toggle still works for this page
  }
  wrap.setAttribute("aria-pressed", String(document.body.classList.contains("wrap")));
  wrap.addEventListener("click", () => {
    const on = document.body.classList.toggle("wrap");
    wrap.setAttribute("aria-pressed", String(on));
    try {
      localStorage.setItem("jsonl-session-wrap", on ? "1" : "0");
    } catch {
      // see above
    }
    heights = [];
    dirty = true;
    update(true);
  });

  document.addEventListener("keydown", (event) => {
    const typingIn = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (event.key === "/" && !typingIn) {
      event.preventDefault();
      search.focus();
    } else if ((event.ctrlKey || event.metaKey) && !event.altKey && event.key.toLowerCase() === "f" && document.activeElement !== search) {
      // Find: the browser's own find sees only the items drawn; the search sees them all.
      // A second Ctrl+F (from the search box) is the browser's.
      event.preventDefault();
      search.focus();
      search.select();
    } else if ((event.key === "Home" || event.key === "End") && !typingIn && !event.ctrlKey && !event.metaKey && !event.altKey && !event.shiftKey) {
      if (event.target.closest && event.target.closest("pre, .text, details[open] pre")) return; // it scrolls itself
      event.preventDefault();
      if (event.key === "Home") jump(0);
      else jump(visible.length - 1, { end: true });
    }
  });
  // Tab / Shift+Tab never leave a focused element under the sticky header.
  document.addEventListener("focusin", (event) => {
    if (!clearance || header.contains(event.target)) return;
    const rect = event.target.getBoundingClientRect();
    if (rect.top < clearance + 4) scrollBy(0, rect.top - clearance - 8);
  });
  addEventListener("hashchange", fromHash);

  function problems() {
    const bad = items.filter((view) => view.kind === "invalid");
    if (!bad.length) return "";
    const lines = bad.slice(0, 5).map((view) => view.number).join(", ");
    const one = bad.length === 1;
    return (
      `${one ? "Line" : `${bad.length.toLocaleString()} lines:`} ${lines}${bad.length > 5 ? ", …" : ""} ` +
      `${one ? "is not a valid item" : "are not valid items"}; shown flagged below, with every other item.`
    );
  }

  function showAlert(message) {
    alertBox.replaceChildren();
    const text = [message, problems()].filter(Boolean).join(" ");
    alertBox.hidden = !text;
    if (!text) return;
    alertBox.append(text);
    const bad = items.find((view) => view.kind === "invalid");
    if (bad) {
      const go = el("button", "tool", `go to line ${bad.number}`);
      go.type = "button";
      go.addEventListener("click", () => goToNumber(bad.number));
      alertBox.append(go);
    }
  }

  // -- about: the session's title, tags and owner, and its turns (history/page_data.py) ------
  const about = data.about || null;
  const turnsPanel = $("turns");

  function size(bytes) {
    if (bytes < 1024) return `${bytes} B`;
    if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
    return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
  }

  function showAbout() {
    const box = $("about");
    if (!about) return;
    const title = about.title || about.default_title;
    if (title) {
      const shown = el("span", about.title ? "about-title" : "about-title default", title);
      if (!about.title) {
        shown.prepend(el("span", "sr", "untitled, first message: "));
        shown.title = "No title set: the first user message";
      }
      box.append(shown);
    }
    if (about.tags && about.tags.length) {
      const tags = el("span", "tags");
      tags.append(el("span", "label", "tags "));
      for (const tag of about.tags) tags.append(el("span", "tag", tag));
      box.append(tags);
    }
    if (about.owner) box.append(el("span", "owner", "owner " + about.owner));
    for (const [key, value] of Object.entries(about.extra || {})) {
      box.append(el("span", "extra", `${key} ${typeof value === "string" ? value : JSON.stringify(value)}`));
    }
    if (about.problem) box.append(el("span", "extra", `title, tags and owner unreadable: ${about.problem}`));
    box.hidden = !box.childElementCount;
  }

  // One row per turn: its first item (a link), items, bytes, the context so far, the input its
  // runs recorded, its largest tool outputs (links to their lines) and the question. Built when
  // the panel is first opened: a long session has thousands of turns.
  function turnsTable(turns) {
    const scroller = el("div", "turns-scroll");
    scroller.tabIndex = 0;
    scroller.setAttribute("role", "region");
    scroller.setAttribute("aria-label", "Turns table, scrolls");
    const table = el("table");
    table.append(el("caption", "sr", "Each turn's size, the context it leaves and its largest tool outputs"));
    const head = el("tr");
    const columns = [["turn", ""], ["items", "n"], ["size", "n"], ["context", "n"], ["input tokens", "n"], ["largest tool outputs", ""], ["question", ""]];
    for (const [name, className] of columns) {
      const cell = el("th", className, name);
      cell.scope = "col";
      head.append(cell);
    }
    const thead = el("thead");
    thead.append(head);
    const body = el("tbody");
    for (const turn of turns) {
      const row = el("tr");
      const first = el("td");
      const link = el("a", "", `turn ${turn.turn}`);
      link.href = "#L" + turn.first_line;
      link.title = `line ${turn.first_line}`;
      first.append(link);
      const largest = el("td", "largest");
      for (const output of turn.largest) {
        const go = el("a", "", `${output.tool || output.type} ${size(output.bytes)}`);
        go.href = "#L" + output.line;
        go.title = `line ${output.line} (${output.type})`;
        largest.append(go, " ");
      }
      row.append(
        first,
        el("td", "n", turn.items.toLocaleString()),
        el("td", "n", size(turn.bytes)),
        el("td", "n", `~${turn.context_tokens.toLocaleString()} tok`),
        el("td", "n", turn.input_tokens === null ? "–" : turn.input_tokens.toLocaleString()),
        largest,
        el("td", "question", turn.text),
      );
      body.append(row);
    }
    table.append(thead, body);
    scroller.append(table);
    return scroller;
  }

  function showTurns() {
    const turns = about && about.turns;
    if (!turns || !turns.length) return;
    const summary = el("summary", "", `Turns: ${turns.length.toLocaleString()}, context ~${about.context_tokens.toLocaleString()} tokens`);
    summary.append(el("span", "stale", ""));
    turnsPanel.append(summary);
    turnsPanel.hidden = false;
    turnsPanel.addEventListener("toggle", () => {
      if (turnsPanel.open && turnsPanel.childElementCount === 1) turnsPanel.append(turnsTable(turns));
      update(true);
    });
    // A link to the line already in the address bar: hashchange will not fire, so go there now.
    turnsPanel.addEventListener("click", (event) => {
      const link = event.target.closest && event.target.closest("a[href^='#L']");
      if (link && link.getAttribute("href") === location.hash) {
        event.preventDefault();
        goToNumber(Number(location.hash.slice(2)));
      }
    });
  }

  function turnsChanged() {
    const stale = turnsPanel.querySelector(".stale");
    if (stale) stale.textContent = " (as the page opened: reload for the newest turns)";
  }

  showAbout();
  showTurns();
  measureHeader();
  width = list.clientWidth;
  charsPerRow = Math.max(20, Math.floor((width - 30) / 7.6));
  updateKinds();
  refilter();
  showAlert(data.live ? data.live.problem : "");
  document.body.dataset.ready = "true";
  performance.mark("jsonl-session-ready"); // benchmarks/viewer.py reads it
  fromHash();

  // For tests and benchmarks: how many items exist, pass the filters, and are drawn.
  window.jsonlSession = { stats: () => ({ items: items.length, visible: visible.length, drawn: cards.size }) };

  // -- live: changes from the server, as server-sent events ----------------------------------
  if (!data.live) return;
  const status = $("live");
  const latest = $("latest");
  const log = $("changes");
  const older = $("history");
  let problem = data.live.problem || "";
  let open = null; // null: connecting for the first time

  // Green "live" only while the stream is open and the session reads.
  function showStatus() {
    if (problem) {
      status.className = "live failed";
      status.lastChild.textContent = "not live: cannot read the session";
    } else {
      status.className = open ? "live on" : "live";
      status.lastChild.textContent = open ? "live" : open === null ? "connecting…" : "reconnecting…";
    }
  }

  function note(kind, text) {
    const stamped = `${new Date().toLocaleTimeString()} ${text}`;
    latest.className = "latest " + kind;
    latest.textContent = stamped;
    log.prepend(el("li", kind, stamped));
    while (log.childElementCount > 20) log.lastChild.remove();
    older.hidden = log.childElementCount < 2;
  }

  function nearBottom() {
    return innerHeight + scrollY >= document.documentElement.scrollHeight - 120;
  }

  function replaceAll(views) {
    items = views;
    haystacks = [];
    heights = [];
    guesses = [];
    updateKinds();
    refilter();
  }

  function appended(views) {
    const follow = nearBottom() && items.length > 0;
    for (const view of views) {
      const index = items.push(view) - 1;
      if (matches(index)) visible.push(index);
    }
    dirty = true;
    updateKinds();
    updateCount();
    if (follow && visible.length) jump(visible.length - 1, { end: true, focus: false });
    else update(true);
  }

  function removed(count) {
    const keep = Math.max(0, items.length - count);
    const lastLine = keep ? items[keep - 1].number : 0;
    for (const number of [...times.keys()]) if (number > lastLine) times.delete(number); // new lines get these numbers
    items.length = keep;
    haystacks.length = Math.min(haystacks.length, keep);
    while (visible.length && visible[visible.length - 1] >= keep) visible.pop();
    for (const [index, node] of cards) {
      if (index >= keep) {
        node.remove();
        cards.delete(index);
      }
    }
    first = Math.min(first, visible.length);
    last = Math.min(last, visible.length);
    dirty = true;
    updateKinds();
    updateCount();
    update(true);
  }

  function settled(message) {
    problem = message || "";
    showAlert(problem);
    showStatus();
  }

  function firstNumber(views) {
    return views.length ? views[0].number : items.length + 1;
  }

  const handlers = {
    reset(change) {
      replaceAll(change.items);
      settled(change.problem);
    },
    appended(change) {
      const from = firstNumber(change.items);
      note("appended", change.count === 1 ? `item ${from} appended` : `${change.count} items appended (from ${from})`);
      appended(change.items);
      settled("");
    },
    removed(change) {
      const from = items.length - change.count + 1;
      note("removed", change.count === 1 ? `item ${from} removed` : `${change.count} items removed (from ${from})`);
      removed(change.count);
      settled("");
    },
    cleared(change) {
      times.clear();
      note("cleared", `session cleared (${change.count} item${change.count === 1 ? "" : "s"} removed)`);
      replaceAll([]);
      settled("");
    },
    replaced(change) {
      times.clear(); // the lines moved: their times are no longer known here (reload for them)
      note("replaced", `session rewritten: now ${change.count} item${change.count === 1 ? "" : "s"}`);
      replaceAll(change.items);
      settled("");
    },
    deleted() {
      times.clear();
      note("deleted", "session file deleted");
      replaceAll([]);
      settled("");
    },
    problem(change) {
      note("problem", String(change.message));
      if (Array.isArray(change.items) && change.items.length) replaceAll(change.items);
      settled(String(change.message));
    },
  };

  const source = new EventSource(data.live.events);
  source.addEventListener("change", (event) => {
    const change = JSON.parse(event.data);
    if (Object.hasOwn(handlers, change.kind)) handlers[change.kind](change);
    if (change.kind !== "reset" && change.kind !== "problem") turnsChanged();
    document.body.dataset.version = String(change.version);
  });
  source.addEventListener("open", () => {
    open = true;
    showStatus();
  });
  source.addEventListener("error", () => {
    open = false;
    showStatus();
  });
  showStatus();
})();
