"""How fast the viewer is: ``show --html`` and ``serve``'s page of 100,000 items; 10,000 in Chromium.

Usage (from the repository root)::

    python benchmarks/viewer.py                    # prints the figures, writes benchmarks/output/viewer.json
    python benchmarks/viewer.py --update-results   # ... into benchmarks/results/viewer.json
    python benchmarks/viewer.py --quick            # small sizes, one repetition: checks that it runs

What is measured (the items are ``benchmarks/items.py``'s realistic 300-600 byte items):

* **show --html**: ``python -m jsonl_session show ID --html -o FILE`` as a subprocess, whole
  command (start-up included): wall time, and peak RSS (the child's ``VmHWM``). Targets: under
  5 s, and a peak within 50 MB of a bare import for 100,000 items (the page streams).
* **serve page open**: a real ``jsonl-session serve`` of a folder holding the 100,000-item
  session (with its ``.times``, written by the ``--baseline`` version if given) under several
  names (hard links, made before the server starts, so its folder watch's first look is not
  counted); the time from sending
  ``GET /session?id=...`` to the last byte of the page, read by a client in this process. *Cold*:
  a name no page has open yet (the session's follower indexes the file, then the page is read
  once: items, turns, times); *warm*: the same page again while the session is kept (the page's
  one read alone). Also the server's CPU time for each page (``/proc/PID/stat``), which the
  machine's load moves much less than the wall time. ``--baseline DIR`` times another
  checkout's ``serve`` (``PYTHONPATH=DIR``) in the same interleaved rounds, for a before/after
  ratio from one run. Reads per page are counted, not timed, by tests/serve/test_page_reads.py.
* **page ready**: the page of a 10,000-item session opened from the file in headless Chromium
  (Debian's ``chromium``, through Playwright): the time from navigation start to the page being
  usable (the first screenfuls drawn, search and filters working: the ``jsonl-session-ready``
  performance mark the page's script sets), as the browser's own clock reports it. Target:
  under 1 s.
* **deep link**: the same page opened at ``#L9999``: navigation start to item 9,999 drawn,
  focused and scrolled below the header (the ``jsonl-session-target`` mark). Target: under 1 s.
* **jump to newest**: on the page opened at the top, a click on "newest" (what End does) until
  the frame after it: item 10,000 is drawn at the bottom of the page. Target: under 0.5 s.
* **DOM size**: elements in the page and items drawn, at the top, after the jump and after a
  scroll through 400 frames of 150 px (the most seen); the p95 frame interval of that scroll.
  The page is virtualised, so these stay the same whatever the session's size.

Medians of the repetitions. The machine is shared and noisy: run it on a quiet machine for the
committed results.
"""

from __future__ import annotations

import argparse
import http.client
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import orjson
import outputs  # benchmarks/outputs.py
from items import sample

TARGETS = {
    "show_html_seconds": 5.0,
    "show_html_peak_mb": 70.0,
    "page_ready_ms": 1000.0,
    "deep_link_ms": 1000.0,
    "jump_newest_ms": 500.0,
}

_FRAMES = "new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
_DOM = "({ elements: document.getElementsByTagName('*').length, drawn: jsonlSession.stats().drawn })"
_JUMP = """async () => {
    const start = performance.now();
    document.getElementById('newest').click();
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const box = document.getElementById('L' + jsonlSession.stats().items).getBoundingClientRect();
    return { ms: performance.now() - start, visible: box.bottom <= innerHeight && box.top >= 0 };
}"""
_SCROLL = """async () => {
    scrollTo(0, 0);
    const gaps = [];
    let most = { elements: 0, drawn: 0 };
    let before = performance.now();
    for (let i = 0; i < 400; i++) {
        scrollBy(0, 150);
        await new Promise((done) => requestAnimationFrame(done));
        const now = performance.now();
        gaps.push(now - before);
        before = now;
        const elements = document.getElementsByTagName('*').length;
        if (elements > most.elements) most = { elements, drawn: jsonlSession.stats().drawn };
    }
    gaps.sort((a, b) => a - b);
    return { p95: gaps[Math.floor(gaps.length * 0.95)], most };
}"""


def write_session(folder: Path, session_id: str, count: int) -> Path:
    path = folder / f"{session_id}.jsonl"
    path.write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in sample(count)))
    return path


_SHOW_HTML = """
import sys
from jsonl_session.cli.commands import main
code = main(sys.argv[1:])
with open("/proc/self/status") as status:
    print(next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")), file=sys.stderr)
sys.exit(code)
"""


def show_html(folder: Path, session_id: str, out: Path) -> tuple[float, float]:
    """One ``show --html`` run: (seconds, peak RSS in MB) of the child process.

    The peak is the child's ``VmHWM``, read by the child itself: ``ru_maxrss`` from ``wait4``
    also counts the parent's memory the child had before ``exec`` (a fork of this process,
    which holds the 100,000 items it wrote), which made a streaming page look like 157 MB.
    """
    command = [
        sys.executable,
        "-c",
        _SHOW_HTML,
        "show",
        session_id,
        "--html",
        "-o",
        str(out),
        "--dir",
        str(folder),
    ]
    start = time.perf_counter()
    completed = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - start
    if completed.returncode != 0:
        raise SystemExit(f"show --html failed: {completed.stderr.decode()}")
    return seconds, int(completed.stderr.decode().strip().splitlines()[-1]) / 1024  # KB on Linux


def start_serve(folder: Path, pythonpath: Path | None) -> tuple[subprocess.Popen[str], str, int]:
    """A real ``serve`` of ``folder`` on a free port (``pythonpath``: another checkout's code)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(pythonpath or HERE.parent)
    process = subprocess.Popen(
        [sys.executable, "-m", "jsonl_session", "serve", "--dir", str(folder), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert process.stdout is not None
    url = urlsplit(process.stdout.readline().strip())
    if url.hostname is None or url.port is None:
        process.kill()
        raise SystemExit("serve did not start")
    return process, url.hostname, url.port


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) the process has used so far, in ms (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def open_page_ms(host: str, port: int, session_id: str, pid: int) -> tuple[float, float]:
    """Milliseconds from sending the page's request to its last byte, and the server's CPU time for it."""
    connection = http.client.HTTPConnection(host, port, timeout=300)
    try:
        cpu = cpu_ms(pid)
        start = time.perf_counter()
        connection.request("GET", f"/session?id={session_id}")
        response = connection.getresponse()
        body = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        cpu = cpu_ms(pid) - cpu
    finally:
        connection.close()
    if response.status != 200 or b'"live":{"events"' not in body:  # the whole page, to its end
        raise SystemExit(f"page of {session_id}: HTTP {response.status}")
    return elapsed, cpu


def serve_page_open(folder: Path, session_id: str, rounds: int, baseline: Path | None) -> dict[str, Any]:
    """Cold and warm page opens of the session (hard-linked under a new name per round), interleaved
    with ``baseline``'s server if given."""
    source = folder / f"{session_id}.jsonl"
    for n in range(rounds):
        for suffix in ("", ".times"):
            os.link(f"{source}{suffix}", folder / f"open{n}.jsonl{suffix}")
    servers = {"now": start_serve(folder, None)}
    if baseline is not None:
        servers["before"] = start_serve(folder, baseline)
    keys = [
        f"{name}_{kind}_{clock}" for name in servers for kind in ("cold", "warm") for clock in ("ms", "cpu")
    ]
    times: dict[str, list[float]] = {key: [] for key in keys}
    order = outputs.random_order("viewer")
    try:
        for n in range(rounds):
            for name in order(servers):
                process, host, port = servers[name]
                for kind in ("cold", "warm"):
                    wall, cpu = open_page_ms(host, port, f"open{n}", process.pid)
                    times[f"{name}_{kind}_ms"].append(wall)
                    times[f"{name}_{kind}_cpu"].append(cpu)
    finally:
        for process, _, _ in servers.values():
            process.terminate()
            process.wait(timeout=30)
            assert process.stdout is not None
            process.stdout.close()
    result: dict[str, Any] = {"page_open_mb": round(source.stat().st_size / 1024 / 1024, 1)}
    for key, values in times.items():
        name, kind, clock = key.split("_")
        prefix = "page_open" if name == "now" else "page_open_before"
        result[f"{prefix}_{kind}_{clock}_ms" if clock == "cpu" else f"{prefix}_{kind}_ms"] = round(
            statistics.median(values)
        )
        result[f"{prefix}_{kind}_{clock}_runs_ms" if clock == "cpu" else f"{prefix}_{kind}_runs_ms"] = [
            round(value) for value in values
        ]
    if baseline is not None:
        for kind in ("cold", "warm"):
            for clock in ("", "_cpu"):
                result[f"page_open_{kind}{clock}_vs_before"] = round(
                    result[f"page_open_{kind}{clock}_ms"] / result[f"page_open_before_{kind}{clock}_ms"], 2
                )
    return result


def page_ms(page_url: str, repetitions: int) -> dict[str, Any]:
    """Page ready, deep link and jump times, and the DOM size, each page load fresh.

    The first load warms the browser's caches and is not counted.
    """
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None:
        raise SystemExit("chromium is not installed (Debian: apt-get install chromium)")
    ready, deep, jump, dom, scroll = [], [], [], [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            for repetition in range(repetitions + 1):
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                page.goto(page_url)
                page.wait_for_selector("body[data-ready=true]", timeout=60_000)
                page.evaluate(_FRAMES)
                mark = page.evaluate("() => performance.getEntriesByName('jsonl-session-ready')[0].startTime")
                at_top = page.evaluate(_DOM)
                jumped = page.evaluate(_JUMP)
                if not jumped["visible"]:
                    raise SystemExit("jump to newest: the newest item is not in view")
                after_jump = page.evaluate(_DOM)
                scrolled = page.evaluate(_SCROLL)
                page.close()

                page = browser.new_page(viewport={"width": 1100, "height": 900})
                page.goto(page_url + "#L9999")
                page.wait_for_selector("body[data-ready=true]", timeout=60_000)
                target = page.evaluate(
                    "() => performance.getEntriesByName('jsonl-session-target')[0]?.startTime ?? -1"
                )
                landed = page.evaluate(
                    "(() => { const box = document.getElementById('L9999').getBoundingClientRect();"
                    " const header = document.querySelector('header.top').getBoundingClientRect();"
                    " return box.top >= header.bottom - 1 && box.top < innerHeight; })()"
                )
                if target < 0 or not landed:
                    raise SystemExit("deep link: item 9,999 was not reached below the header")
                page.close()
                if repetition:
                    ready.append(float(mark))
                    deep.append(float(target))
                    jump.append(float(jumped["ms"]))
                    dom.append(max((at_top, after_jump, scrolled["most"]), key=lambda d: d["elements"]))
                    scroll.append(float(scrolled["p95"]))
        finally:
            browser.close()
    most = max(dom, key=lambda d: d["elements"])
    return {
        "page_ready_ms": round(statistics.median(ready), 1),
        "page_ready_max_ms": round(max(ready), 1),
        "deep_link_ms": round(statistics.median(deep), 1),
        "deep_link_max_ms": round(max(deep), 1),
        "jump_newest_ms": round(statistics.median(jump), 1),
        "jump_newest_max_ms": round(max(jump), 1),
        "dom_elements_max": most["elements"],
        "items_drawn_max": most["drawn"],
        "scroll_frame_p95_ms": round(statistics.median(scroll), 1),
    }


_WRITE_TIMED = """
import sys
sys.path.insert(0, sys.argv[3])
from items import sample
from jsonl_session import JSONLSession
session = JSONLSession("big", sys.argv[1], timestamps=True)
items = sample(int(sys.argv[2]))
for start in range(0, len(items), 100):
    session.add_items_sync(items[start : start + 100])
"""


def write_timed_session(folder: Path, count: int, code: Path | None) -> None:
    """Session ``big`` as an agent writes it (with its ``.times``), 100 items per ``add_items``.

    Written by ``code`` (a checkout; this one by default): with ``--baseline``, by the older
    version, whose ``.times`` both read, so both servers match every item's time.
    """
    env = dict(os.environ, PYTHONPATH=str(code or HERE.parent))
    command = [sys.executable, "-c", _WRITE_TIMED, str(folder), str(count), str(HERE)]
    subprocess.run(command, env=env, check=True)


def measure(
    html_items: int, page_items: int, repetitions: int, *, baseline: Path | None, only_serve: bool
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="jsonl-session-viewer-bench-") as scratch:
        folder = Path(scratch)
        served = folder / "served"
        write_timed_session(served, html_items, baseline)
        opens = serve_page_open(served, "big", repetitions, baseline)
        if only_serve:
            return {"page_open_items": html_items, **opens, "repetitions": repetitions}
        write_session(folder, "big", html_items)
        runs = [show_html(folder, "big", folder / "big.html") for _ in range(repetitions)]
        html_size = (folder / "big.html").stat().st_size
        write_session(folder, "page", page_items)
        show_html(folder, "page", folder / "page.html")
        page = page_ms((folder / "page.html").as_uri(), repetitions)
    return {
        "show_html_items": html_items,
        "show_html_seconds": round(statistics.median(seconds for seconds, _ in runs), 3),
        "show_html_peak_mb": round(statistics.median(peak for _, peak in runs), 1),
        "show_html_output_mb": round(html_size / 1024 / 1024, 1),
        "page_open_items": html_items,
        **opens,
        "page_items": page_items,
        **page,
        "repetitions": repetitions,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    outputs.add_options(parser, quick="10,000 items for both, one repetition")
    parser.add_argument("--repetitions", type=int, default=5, help="runs of each measurement (default 5)")
    parser.add_argument(
        "--baseline", type=Path, help="a checkout of another version: its serve is timed in the same rounds"
    )
    parser.add_argument("--serve-only", action="store_true", help="only the serve page opens")
    args = parser.parse_args(argv)
    items, repetitions = (10_000, 1) if args.quick else (100_000, args.repetitions)
    result = measure(items, 10_000, repetitions, baseline=args.baseline, only_serve=args.serve_only)
    result.update(
        when=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        python=platform.python_version(),
        machine=f"{platform.machine()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}",
        targets=TARGETS,
    )
    for name, value in result.items():
        print(f"{name:>22}: {value}")
    print(f"written to {outputs.write_json(args, 'viewer.json', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
