"""The secrets scanner finds a planted key of each kind, with file:line, and redaction replaces them in place.

Planted keys are assembled at run time from pieces, so no literal key sits in the repository
(and GitHub push protection has nothing to object to).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from jsonl_session import JSONLSession, LockTimeout, MalformedLineError
from jsonl_session.core.locking import FileHandle
from jsonl_session.tools.secrets import mask, redact_session, redact_text, scan_file, scan_text

REPO = Path(__file__).resolve().parents[2]
ALNUM = "A1b2C3d4E5f6G7h8J9k0"  # 20 chars with digits, the shape real tokens have


def planted() -> dict[str, str]:
    """One fake secret of each kind the scanner promises to find."""
    pem_body = "MIIEow" + "IBAAKCAQEA" + ALNUM * 3
    return {
        "openai-key": "sk-" + "proj-" + ALNUM * 4,
        "openai-legacy": "sk-" + ALNUM * 2 + "T3Blbk" + "FJ" + ALNUM[:8],
        "anthropic-key": "sk-" + "ant-" + "api03-" + ALNUM * 4,
        "aws-access-key-id": "AK" + "IA" + "Q3EGXMPL7EXAMPL3",
        "aws-secret-access-key": "wJalr" + "XUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY",
        "github-token": "gh" + "p_" + ALNUM + "abcdefghij0123456789",
        "github-pat": "github" + "_pat_" + ALNUM + "_" + ALNUM,
        "slack-token": "xo" + "xb-" + "1234567890-" + ALNUM,
        "bearer-token": "eyJhbGciOiJIUzI1NiJ9." + ALNUM + "." + ALNUM,
        "private-key": "-----BEGIN RSA "
        + "PRIVATE KEY-----\n"
        + pem_body
        + "\n-----END RSA PRIVATE KEY-----",
    }


KIND_OF = {"openai-legacy": "openai-key", "github-pat": "github-token"}


def texts() -> dict[str, str]:
    """Each planted secret in the sentence a conversation would carry it in."""
    keys = planted()
    return {
        name: (
            f"aws_secret_access_key = {secret}"
            if name == "aws-secret-access-key"
            else f"Authorization: Bearer {secret}"
            if name == "bearer-token"
            else f"here is my key: {secret} thanks"
        )
        for name, secret in keys.items()
    }


def write_session(path: Path, items: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(item) + b"\n" for item in items))


@pytest.mark.parametrize("name", sorted(planted()))
def test_scan_file_finds_each_kind_with_its_line_and_never_prints_the_secret(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / "leaky.jsonl"
    write_session(
        path,
        [
            {"role": "user", "content": "hello"},
            {"role": "user", "content": texts()[name]},
            {"role": "assistant", "content": "noted"},
        ],
    )

    findings = scan_file(path)

    assert [(f.path, f.line, f.kind) for f in findings] == [(path, 2, KIND_OF.get(name, name))]
    secret = planted()[name]
    assert secret not in findings[0].excerpt
    assert str(findings[0]).startswith(f"{path}:2: {KIND_OF.get(name, name)} ")


def test_secret_in_a_function_calls_json_arguments_is_found(tmp_path: Path) -> None:
    path = tmp_path / "tool.jsonl"
    arguments = orjson.dumps({"headers": {"Authorization": "Bearer " + planted()["bearer-token"]}}).decode()
    write_session(
        path, [{"type": "function_call", "call_id": "call_1", "name": "fetch", "arguments": arguments}]
    )

    assert [(f.line, f.kind) for f in scan_file(path)] == [(1, "bearer-token")]


def test_malformed_lines_such_as_a_merge_conflict_are_scanned_too(tmp_path: Path) -> None:
    path = tmp_path / "conflicted.jsonl"
    key = planted()["openai-key"]
    path.write_text(
        '{"role":"user","content":"hi"}\n'
        "<<<<<<< HEAD\n"
        f'{{"role":"user","content":"key {key}"\n'  # a half-edited line: not JSON
        "=======\n"
        f"raw paste {planted()['github-token']}\n"
        ">>>>>>> branch\n",
        encoding="utf-8",
    )

    assert [(f.line, f.kind) for f in scan_file(path)] == [(3, "openai-key"), (5, "github-token")]


def test_invalid_utf8_does_not_stop_the_scan(tmp_path: Path) -> None:
    path = tmp_path / "binary.jsonl"
    path.write_bytes(b"\xff\xfe garbage " + planted()["aws-access-key-id"].encode() + b"\n")

    assert [(f.line, f.kind) for f in scan_file(path)] == [(1, "aws-access-key-id")]


def test_several_secrets_on_one_line_are_each_reported_in_order() -> None:
    keys = planted()
    text = f"{keys['github-token']} and {keys['anthropic-key']} and {keys['openai-key']}"

    assert [kind for kind, _, _ in scan_text(text)] == ["github-token", "anthropic-key", "openai-key"]


@pytest.mark.parametrize(
    "text",
    [
        "We use sk-learn-compatible-estimators-for-everything here",
        "the bearer internationalization-department-office approved",
        '{"id":"msg_0123456789abcdef0123456789abcdef","call_id":"call_AbC123xYz456"}',
        "AKIA is how AWS key ids start; AKIA123 is too short",
        "-----BEGIN PUBLIC KEY----- is fine to share",
        "[REDACTED:openai-key] and Bearer [REDACTED:bearer-token]",
        "ghp_short and xoxb-1 and sk-ant-",
    ],
)
def test_ordinary_text_is_not_flagged(text: str) -> None:
    assert scan_text(text) == []


def test_the_shipped_example_sessions_contain_no_secrets() -> None:
    files = sorted([*(REPO / "sessions").glob("*.jsonl"), *(REPO / "examples").rglob("*.jsonl")])

    assert files, "the repository ships example sessions"
    assert [finding for path in files for finding in scan_file(path)] == []


def test_mask_shows_a_short_prefix_and_the_length_only() -> None:
    secret = planted()["openai-key"]

    assert mask(secret) == f"{secret[:6]}… ({len(secret)} chars)"
    assert mask("abcd") == "a… (4 chars)"


def test_redact_text_replaces_only_the_secret() -> None:
    token = planted()["bearer-token"]

    assert redact_text(f"Authorization: Bearer {token}\nok") == (
        "Authorization: Bearer [REDACTED:bearer-token]\nok",
        [("bearer-token", token)],
    )


def test_redact_session_replaces_every_secret_in_place_and_reports_file_and_line(sessions_dir: Path) -> None:
    session = JSONLSession("leaky", sessions_dir)
    keys = planted()
    items = [
        {"role": "user", "content": "hello wörld"},
        {"role": "user", "content": texts()["openai-key"]},
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [{"type": "input_text", "text": texts()["private-key"]}],
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "fine", "annotations": []}]},
    ]
    session.add_items_sync(items)
    session.path.write_bytes(session.path.read_bytes().replace(b"\n", b"\n\n", 1))  # a hand-added blank line

    findings = redact_session(session)

    assert [(f.path, f.line, f.kind) for f in findings] == [
        (session.path, 3, "openai-key"),
        (session.path, 4, "private-key"),
    ]
    assert all(keys[f.kind] not in f.excerpt for f in findings)
    after = session.get_items_sync()
    assert after[0] == items[0] and after[3] == items[3]
    assert after[1]["content"] == "here is my key: [REDACTED:openai-key] thanks"
    assert after[2]["output"][0]["text"] == "here is my key: [REDACTED:private-key] thanks"
    assert keys["openai-key"].encode() not in session.path.read_bytes()
    assert scan_file(session.path) == []


def test_redact_session_leaves_a_clean_file_untouched(sessions_dir: Path) -> None:
    session = JSONLSession("clean", sessions_dir)
    session.add_items_sync([{"role": "user", "content": "nothing secret"}])
    before = os.stat(session.path)

    assert redact_session(session) == []

    after = os.stat(session.path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_redact_session_refuses_a_malformed_file_and_leaves_it_byte_identical(sessions_dir: Path) -> None:
    session = JSONLSession("broken", sessions_dir)
    sessions_dir.mkdir()
    content = f'{{"role":"user","content":"{planted()["openai-key"]}"}}\n<<<<<<< HEAD\n'.encode()
    session.path.write_bytes(content)

    with pytest.raises(MalformedLineError) as raised:
        redact_session(session)

    assert raised.value.line == 2
    assert session.path.read_bytes() == content


def test_redact_session_waits_for_the_session_lock(sessions_dir: Path) -> None:
    session = JSONLSession("busy", sessions_dir, lock_timeout=0.2)
    session.add_items_sync([{"role": "user", "content": texts()["github-token"]}])
    content = session.path.read_bytes()
    other_writer = FileHandle(session.path)
    with other_writer.locked(write=True, create=False, timeout=1.0):
        with pytest.raises(LockTimeout):
            redact_session(session)
        assert session.path.read_bytes() == content
    other_writer.close()

    assert [f.kind for f in redact_session(session)] == ["github-token"]


def hook_entry() -> tuple[list[str], str]:
    """The shipped pre-commit hook's command and file pattern (the file is simple YAML)."""
    fields = dict(
        line.strip().lstrip("- ").split(": ", 1)
        for line in (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8").splitlines()
        if ": " in line and not line.lstrip().startswith("#")
    )
    return fields["entry"].split(), fields["files"]


def test_the_pre_commit_hook_fails_on_a_planted_key_and_passes_on_the_shipped_sessions(
    tmp_path: Path,
) -> None:
    entry, files = hook_entry()
    assert entry == ["jsonl-session", "check", "--secrets"]
    assert re.search(files, "sessions/chat.jsonl") and not re.search(files, "notes.txt")
    command = [sys.executable, "-m", "jsonl_session", *entry[1:]]  # what the jsonl-session script runs
    leaky = tmp_path / "leaky.jsonl"
    write_session(
        leaky, [{"role": "user", "content": "ok"}, {"role": "user", "content": texts()["anthropic-key"]}]
    )
    shipped = [str(path) for path in sorted((REPO / "sessions").glob("*.jsonl"))]

    caught = subprocess.run([*command, str(leaky), *shipped], capture_output=True, text=True, check=False)
    clean = subprocess.run([*command, *shipped], capture_output=True, text=True, check=False)

    assert caught.returncode == 1
    assert caught.stdout.startswith(f"{leaky}:2: anthropic-key: ")
    assert planted()["anthropic-key"] not in caught.stdout + caught.stderr
    assert (clean.returncode, clean.stdout) == (0, "")


@pytest.mark.parametrize("label", ["", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA "])
def test_every_pem_private_key_label_is_found_whole_even_with_json_escaped_newlines(label: str) -> None:
    block = f"-----BEGIN {label}PRIVATE KEY-----\\n{ALNUM * 3}\\n-----END {label}PRIVATE KEY-----"
    line = '{"output":"' + block + '","type":"function_call_output"}'

    assert scan_text(line) == [("private-key", line.index("-----BEGIN"), line.index(block) + len(block))]


def test_a_private_key_header_without_its_end_is_still_found() -> None:
    assert [kind for kind, _, _ in scan_text("pasted: -----BEGIN OPENSSH PRIVATE KEY-----\nb3Blb")] == [
        "private-key"
    ]


def test_redacting_a_session_that_does_not_exist_creates_nothing(sessions_dir: Path) -> None:
    session = JSONLSession("typo", sessions_dir)

    assert redact_session(session) == []
    assert not session.path.exists()


def test_redacted_items_keep_the_time_they_were_added(sessions_dir: Path) -> None:
    """Redaction changes what an item says, not when it was said: no re-stamp with the redaction's time."""
    import zlib
    from datetime import datetime, timezone

    from cli_helpers import run

    secret = planted()["openai-key"]
    session = JSONLSession("s", sessions_dir)
    session.add_items_sync(
        [
            {"role": "user", "content": f"my key is {secret}"},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": f"and again {secret}, twice: {secret}"},
            {"role": "user", "content": f"once more {secret}"},
            {"role": "assistant", "content": "Stop pasting keys."},
        ]
    )
    # each item added on its own day of 2020 (the sidecar's format: docs/format.md, ".times")
    days = [1_577_836_800_000 + n * 86_400_000 for n in range(5)]
    lines = session.path.read_bytes().splitlines()
    times = session.path.with_name("s.jsonl.times")
    times.write_bytes(b"".join(b"%013d %08x\n" % (ms, zlib.crc32(line)) for ms, line in zip(days, lines)))
    expected = [datetime.fromtimestamp(ms / 1000, timezone.utc) for ms in days]
    assert [when for _, when in session.get_items_with_times_sync()] == expected

    assert run(sessions_dir, "redact", "s").code == 0
    after = session.get_items_with_times_sync()
    assert secret not in orjson.dumps([item for item, _ in after]).decode()
    assert [when for _, when in after] == expected
