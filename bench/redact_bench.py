"""Redaction throughput, the same text through detect-secrets, and growth on hostile input.

    .venv/bin/python bench/redact_bench.py [--mb 20] [--seed 0]
        [--detect-secrets /tmp/ds-venv/bin/python] [--ds-mb 2] [--adversarial-max-kb 1000]
        [--pasted-mb 3] [--pasted-only]

1. Throughput: transcript-like messages (prompts and replies with prose, inline code,
   code fences, shell commands, paths, URLs, package specs, shas; an e-mail or private
   host in ~1 message in 25, a credential of a random family in a random surrounding in
   ~1 in 40), redacted one message at a time — as `kb ingest` does — in one process.
   MB/s is of CPU time (the machine may be shared) with wall time next to it.
2. For scale, the reference pipeline's pass (its 19 regexes one after another, no
   prefilter) over a quarter of the same messages.
3. detect-secrets (optional): the python of a venv that has detect-secrets installed
   (never a project dependency) scans the first `--ds-mb` MB of the same messages,
   written one message per line, in-process with its default plugins; import time excluded.
4. Pasted text, by kind: a question with what users paste under it — 2–40 KB of server
   output (access logs, application logs with request ids and upstream addresses, `kubectl
   get pods -o wide`, sshd lines from journalctl: an address on most lines), an `env` dump,
   a JSON API response, a Node stack trace, a diff, minified JavaScript.
5. Hostile input from 10 KB up to `--adversarial-max-kb`: `a@a@…`, `////…`, `"\\\\…`,
   base64 runs and more; linear growth means ×10 input ≈ ×10 time.

1 MB = 1,000,000 bytes of UTF-8.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbtools.redact import Redactor  # noqa: E402
from tests.testing.secrets import SECRET_FAMILIES, SURROUNDINGS, make_secret, plant  # noqa: E402

WORDS = (
    "the a to of and in is it for this that we should run test fix update file function module config value "
    "error build install package import return class async await cache index parse output input user session "
    "model request response commit branch merge review lint hook check schema field record ledger source "
    "candidate manifest note page raw evidence snapshot hash digest stream worker process thread queue retry "
    "timeout latency memory budget limit flag option default override environment variable path folder "
    "because so then now first next after before instead also still only already again maybe probably"
).split()
VERBS = "added fixed renamed removed moved refactored tested checked updated rewrote split merged".split()
IDENTS = "parse_manifest load_config redact_text run_lint SourceUnit LedgerRow build_index shingle".split()
FILES = (
    "src/app/main.py",
    "kbtools/ingest/pipeline.py",
    "tests/test_cli.py",
    "package.json",
    "README.md",
    "src/components/Header.tsx",
    "Cargo.toml",
    "docs/setup.md",
)
PUBLIC = (
    "https://docs.python.org/3/library/re.html",
    "https://github.com/pre-commit/pre-commit",
    "https://www.rfc-editor.org/rfc/rfc8259",
    "/usr/bin/env python3",
    "/etc/hosts",
    "astro@latest",
    "vitest@3",
    "react@18.2.0",
    "max_tokens=4096",
    "tokens_saved=42 token_count=10",
)
USERS = ("alice", "bob", "chen", "dmitri", "eve")
FENCES = (
    "```python\ndef load(path: Path) -> dict:\n    with path.open() as fh:\n        return json.load(fh)\n```",
    "```sh\n$ pytest -q tests/\n3 passed in 0.41s\n```",
    "```ts\nexport function slug(s: string): string {\n  return s.toLowerCase().replace(/\\s+/g, '-');\n}\n```",
    '```json\n{"name": "wiki", "version": "1.4.2", "private": true, "scripts": {"test": "vitest"}}\n```',
)


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randrange(6, 22))]
    if rng.random() < 0.4:
        words.insert(rng.randrange(len(words)), f"`{rng.choice(IDENTS)}`")
    if rng.random() < 0.2:
        words.insert(rng.randrange(len(words)), rng.choice(VERBS))
    return " ".join(words).capitalize() + rng.choice(".?.!.")


def _detail(rng: random.Random) -> str:
    user = rng.choice(USERS)
    choice = rng.randrange(7)
    if choice == 0:
        return f"`{rng.choice(FILES)}`:{rng.randrange(1, 400)}"
    if choice == 1:
        return f"/home/{user}/projects/wiki/{rng.choice(FILES)}"
    if choice == 2:
        return rng.choice(PUBLIC)
    if choice == 3:
        return rng.choice(FENCES)
    if choice == 4:
        return f"commit {rng.getrandbits(160):040x}"
    if choice == 5:
        return f"~/.config/{rng.choice(IDENTS).lower()}/settings.json"
    return f"$ git log --oneline -3\n{rng.getrandbits(28):07x} {rng.choice(VERBS)} {rng.choice(IDENTS)}"


def message(rng: random.Random) -> str:
    parts = [_sentence(rng) for _ in range(rng.randrange(1, 4) if rng.random() < 0.4 else rng.randrange(3, 14))]
    for _ in range(rng.randrange(0, 4)):
        parts.insert(rng.randrange(len(parts) + 1), _detail(rng))
    if rng.random() < 0.04:
        parts.append(rng.choice([f"ping {rng.choice(USERS)}@example.com", "db.internal:5432", "10.0.3.7"]))
    if rng.random() < 0.025:
        family = rng.choice(sorted(SECRET_FAMILIES))
        secret = make_secret(family, rng)
        parts.append(plant(secret, rng.choice(sorted(SURROUNDINGS)), name=SECRET_FAMILIES[family].name))
    return "\n\n".join(parts)


_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
_ROUTES = ("/api/v1/items", "/api/v1/orders", "/healthz", "/static/app.js", "/login", "/v2/search")


def _address(rng: random.Random) -> str:
    if rng.random() < 0.5:  # a cluster's pod and service addresses, a LAN
        return rng.choice(["10.42.{}.{}", "10.0.{}.{}", "172.18.{}.{}", "192.168.{}.{}"]).format(
            rng.randrange(256), rng.randrange(1, 255)
        )
    return ".".join(str(rng.randrange(1, 224) if i == 0 else rng.randrange(256)) for i in range(4))


def _log_line(rng: random.Random, kind: int, n: int) -> str:
    stamp = f"2026-06-08T23:{n // 60 % 60:02d}:{n % 60:02d}.{rng.randrange(1000):03d}Z"
    route = f"{rng.choice(_ROUTES)}/{rng.randrange(1, 99999)}"
    if kind == 0:
        return (
            f'{_address(rng)} - - [08/Jun/2026:23:{n // 60 % 60:02d}:{n % 60:02d} +0000] "GET {route} HTTP/1.1" '
            f'{rng.choice([200, 200, 304, 404, 502])} {rng.randrange(80, 90000)} "-" "{_AGENT}"'
        )
    if kind == 1:
        return (
            f"{stamp} {rng.choice(['INFO ', 'WARN ', 'ERROR'])} [worker-{rng.randrange(8)}] "
            f"request_id={rng.getrandbits(128):032x} method=POST path={route} status={rng.choice([200, 500])} "
            f"duration_ms={rng.random() * 900:.1f} upstream={_address(rng)}:8080"
        )
    if kind == 2:
        return (
            f"api-{rng.getrandbits(36):09x}-{rng.getrandbits(25):05x}   1/1   Running   {rng.randrange(4)}   "
            f"{rng.randrange(1, 30)}d   {_address(rng)}   node-{rng.randrange(6)}   <none>   <none>"
        )
    if kind == 3:
        return (
            f"Jun 08 23:{n // 60 % 60:02d}:{n % 60:02d} web-{rng.randrange(4)} sshd[{rng.randrange(900, 65000)}]: "
            f"Failed password for invalid user {rng.choice(USERS)} from {_address(rng)} port "
            f"{rng.randrange(1024, 65535)} ssh2"
        )
    return f'  File "/app/src/{rng.choice(IDENTS).lower()}.py", line {rng.randrange(1, 900)}, in handle'


def log_message(rng: random.Random) -> str:
    """A question with a log pasted under it (one or two kinds of line, as one program writes them)."""
    kinds = rng.sample(range(5), rng.choice([1, 1, 2]))
    lines, size, target = [], 0, rng.randrange(2_000, 40_000)
    while size < target:
        lines.append(_log_line(rng, rng.choice(kinds), len(lines)))
        size += len(lines[-1]) + 1
    return f"{_sentence(rng)} Here is the output:\n\n" + "\n".join(lines)


_ENV_NAMES = (
    "PATH HOME SHELL LANG TERM HOSTNAME PWD NODE_ENV DATABASE_URL REDIS_URL LOG_LEVEL PORT AWS_REGION "
    "AWS_PROFILE GIT_AUTHOR_NAME EDITOR PAGER XDG_RUNTIME_DIR SSH_AUTH_SOCK KUBECONFIG GOPATH VIRTUAL_ENV "
    "PYTHONPATH CI GITHUB_ACTIONS RUNNER_OS JAVA_HOME"
).split()


def env_message(rng: random.Random) -> str:
    """The output of `env`: names of every kind, values that are paths, URLs, ports, words."""
    user = rng.choice(USERS)
    values = (
        f"/home/{user}/.local/bin:/usr/local/bin:/usr/bin",
        "en_US.UTF-8",
        "production",
        "postgres://app@db:5432/app",
        "us-east-1",
        "/usr/lib/jvm/java-21",
        f"/home/{user}/.kube/config",
    )
    lines = [
        f"{rng.choice(_ENV_NAMES)}{rng.choice(['', '', '_1', '_DEV'])}={rng.choice([*values, str(rng.randrange(65535))])}"
        for _ in range(rng.randrange(30, 300))
    ]
    return "My environment:\n" + "\n".join(lines)


def json_message(rng: random.Random) -> str:
    """A JSON API response, indented: ids, counts, URLs, logins, shas."""
    items = [
        {
            "id": rng.getrandbits(40),
            "name": rng.choice(WORDS),
            "token_count": rng.randrange(9999),
            "created_at": "2026-06-08T23:46:08Z",
            "url": f"https://api.example.com/v1/items/{rng.randrange(99999)}",
            "owner": {"login": rng.choice(USERS), "node_id": f"MDQ6VXNlcj{rng.getrandbits(40):x}"},
            "sha": f"{rng.getrandbits(160):040x}",
            "tags": [rng.choice(WORDS) for _ in range(3)],
        }
        for _ in range(rng.randrange(20, 200))
    ]
    return f"{_sentence(rng)}\n```json\n{json.dumps({'items': items, 'next': None}, indent=2)}\n```"


def stack_message(rng: random.Random) -> str:
    user = rng.choice(USERS)
    frames = [
        f"    at {rng.choice(IDENTS)}.{rng.choice(WORDS)} (/home/{user}/work/app/node_modules/{rng.choice(WORDS)}"
        f"/dist/index.js:{rng.randrange(9999)}:{rng.randrange(99)})"
        for _ in range(rng.randrange(20, 200))
    ]
    return "It crashes:\n" + "\n".join(["TypeError: Cannot read properties of undefined", *frames])


def diff_message(rng: random.Random) -> str:
    lines = [
        "diff --git a/src/app.py b/src/app.py",
        "index 3b18e51..a9c2f04 100644",
        "--- a/src/app.py",
        "+++ b/src/app.py",
    ]
    for hunk in range(rng.randrange(5, 60)):
        lines.append(f"@@ -{hunk * 20},7 +{hunk * 20},8 @@ def handler_{hunk}(request):")
        lines += [rng.choice("+- ") + "    " + " ".join(rng.choices(IDENTS + WORDS, k=8)) for _ in range(8)]
    return "Apply this:\n" + "\n".join(lines)


def minified_message(rng: random.Random) -> str:
    alphabet = string.ascii_letters + "(){};=.,:\"'+-*/ 0123456789"
    return "".join(rng.choices(alphabet, k=rng.randrange(5_000, 60_000)))


PASTED = {
    "server logs": log_message,
    "`env` dump": env_message,
    "JSON API response": json_message,
    "stack trace": stack_message,
    "diff": diff_message,
    "minified JS": minified_message,
}


def corpus_of(make: Callable[[random.Random], str], total_bytes: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    messages: list[str] = []
    size = 0
    while size < total_bytes:
        text = make(rng)
        messages.append(text)
        size += len(text.encode("utf-8"))
    return messages


def mb(messages: Sequence[str]) -> float:
    return sum(len(m.encode("utf-8")) for m in messages) / 1e6


def throughput(messages: list[str]) -> dict[str, float]:
    redactor = Redactor()
    for text in messages[:200]:  # warm caches
        redactor.redact(text)
    cpu, wall = time.process_time(), time.perf_counter()
    labelled = sum(1 for text in messages if redactor.redact(text).labels)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    size = mb(messages)
    return {
        "mb": size,
        "messages": len(messages),
        "redacted_messages": labelled,
        "cpu_s": cpu,
        "wall_s": wall,
        "mb_per_cpu_s": size / cpu,
        "mb_per_wall_s": size / wall,
    }


# The reference pipeline's pass, for scale: its 19 regexes applied one after another over the
# whole text, no prefilter (anchor §4.1, translated to Python `re`).
_VAL = r"""\s*[:=]\s*(?:"(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*'|[^\s,;]+)"""
_SEGP = r"""[^\s"'`)\]}>,;]+"""
_SEGW = r"""[^\s"'`)\]}>,;\\]+"""
_DELIM = r"""(^|[\s"'`(=\[{,:])"""
REFERENCE_PASS = [
    (re.compile(r"-----BEGIN [^-]*PRIVATE KEY-----[\s\S]*?-----END [^-]*PRIVATE KEY-----"), "<REDACTED_TOKEN>"),
    (re.compile(r"\b[A-Z][A-Z0-9+.-]*://[^\s/@:]*:[^\s/@]+@[^\s]+", re.I), "<REDACTED_PASSWORD>"),
    (re.compile(r"git@[^\s:]+:[^\s]+"), "<PRIVATE_REPOSITORY>"),
    (re.compile(r"""["']?\b[A-Z0-9_]*api[_-]?key[A-Z0-9_]*\b["']?""" + _VAL, re.I), "api_key=<REDACTED_API_KEY>"),
    (re.compile(r"\b(?:sk-[A-Za-z0-9_-]{16,}|AKIA[A-Z0-9]{16})\b"), "<REDACTED_API_KEY>"),
    (re.compile(r"\b(?:Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{12,}"), "<REDACTED_TOKEN>"),
    (re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9_]{16,}|xox[baprs]-[A-Za-z0-9-]{16,})\b"), "<REDACTED_TOKEN>"),
    (
        re.compile(r"""["']?\b[A-Z0-9_]*(?:token|authorization|cookie|secret(?:[_-]?key)?)\b["']?""" + _VAL, re.I),
        "token=<REDACTED_TOKEN>",
    ),
    (
        re.compile(r"""["']?\b[A-Z0-9_]*(?:password|passwd)[A-Z0-9_]*\b["']?""" + _VAL, re.I),
        "password=<REDACTED_PASSWORD>",
    ),
    (re.compile(r"\b[A-Z0-9._%+-]+@[A-Z0-9.-]+\.[A-Z]{2,}\b", re.I), "<PRIVATE_EMAIL>"),
    (re.compile(r"\b[A-Z0-9._-]+@[A-Z0-9_-]+\b", re.I), "<PRIVATE_EMAIL>"),
    (
        re.compile(
            r"\b(?:(?:10|127)(?:\.\d{1,3}){3}|192\.168(?:\.\d{1,3}){2}|172\.(?:1[6-9]|2\d|3[01])(?:\.\d{1,3}){2}"
            r"|(?<![0-9A-F:])::1(?![0-9A-F:])|(?:F[CD][0-9A-F]{2}|FE[89AB][0-9A-F])(?::[0-9A-F]{0,4}){1,7}"
            r"|localhost|(?:[A-Z0-9-]+\.)+(?:internal|local|lan|corp))\b",
            re.I,
        ),
        "<PRIVATE_HOST>",
    ),
    (re.compile(r"\\\\" + _SEGW + r"\\" + _SEGW + r"(?:\\" + _SEGW + r")*"), "<PRIVATE_PATH>"),
    (re.compile(r"\b[A-Z]:\\" + _SEGW + r"(?:\\" + _SEGW + r")*", re.I), "<PRIVATE_PATH>"),
    (re.compile(r"/(?:home|Users)/[A-Za-z0-9._-]+(?:/" + _SEGP[:-1] + r"*)?", re.M), "<PRIVATE_PATH>"),
    (re.compile(r"~/" + _SEGP, re.M), "<PRIVATE_PATH>"),
    (re.compile(r"\bfile:(?:/{1,3}|~/)" + _SEGP, re.M), "file:<PRIVATE_PATH>"),
    (re.compile(_DELIM + r"~/" + _SEGP, re.M), "\\g<1><PRIVATE_PATH>"),
    (re.compile(_DELIM + r"/(?!/)" + _SEGP, re.M), "\\g<1><PRIVATE_PATH>"),
]


def reference_pass(messages: list[str]) -> dict[str, float]:
    cpu = time.process_time()
    for text in messages:
        for pattern, replacement in REFERENCE_PASS:
            text = pattern.sub(replacement, text)
    cpu = time.process_time() - cpu
    size = mb(messages)
    return {"mb": size, "cpu_s": cpu, "mb_per_cpu_s": size / cpu}


_DS_SCRIPT = """
import json, sys, time
from detect_secrets.settings import default_settings
from detect_secrets.core.scan import scan_file
with default_settings():
    t, c = time.process_time(), time.perf_counter()
    found = list(scan_file(sys.argv[1]))
    print(json.dumps({"cpu_s": time.process_time() - t, "wall_s": time.perf_counter() - c, "findings": len(found)}))
"""


def detect_secrets(python: str, messages: list[str]) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "transcript.txt"
        path.write_text("\n".join(m.replace("\n", " ") for m in messages) + "\n", encoding="utf-8")
        out = subprocess.run([python, "-c", _DS_SCRIPT, str(path)], check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    size = mb(messages)
    return {"mb": size, **result, "mb_per_cpu_s": size / result["cpu_s"]}


ADVERSARIAL = {
    "a@a@…": "a@",
    "////…": "/",
    '"\\\\…': None,  # a quote then backslashes
    "base64 run": "QUJDRGVmZ2hpams0NTY3",
    "token=token=…": "token=",
    "BEGIN PRIVATE KEY headers": "-----BEGIN RSA PRIVATE KEY-----\n",
    "fd00:fd00:…": "fd00:",
    "a.local.a.local…": "a.local.",
    "\\\\\\\\x\\\\…": "\\\\x",
    "https://u:p@…": "https://u:p@",
    "<token><token>…": "<token>",
    '"token", "token", …': '"token", ',
    "password: password: …": "password: ",
    "====…": "=",
}


def adversarial(max_kb: int) -> list[tuple[str, list[tuple[int, float]]]]:
    redactor = Redactor()
    sizes = [10_000]
    while sizes[-1] * 10 <= max_kb * 1000:
        sizes.append(sizes[-1] * 10)
    rows = []
    for name, unit in ADVERSARIAL.items():
        timings = []
        for size in sizes:
            text = '"' + "\\" * (size - 1) if unit is None else (unit * (size // len(unit) + 1))[:size]
            started = time.process_time()
            redactor.redact(text)
            timings.append((size, time.process_time() - started))
        rows.append((name, timings))
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="redact_bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=20.0, help="throughput corpus size (default 20)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--detect-secrets", metavar="PYTHON", help="python of a venv with detect-secrets")
    parser.add_argument("--ds-mb", type=float, default=2.0, help="MB given to detect-secrets (default 2)")
    parser.add_argument("--adversarial-max-kb", type=int, default=1000)
    parser.add_argument("--pasted-mb", type=float, default=3.0, help="MB of each kind of pasted text (default 3)")
    parser.add_argument("--pasted-only", action="store_true", help="only the pasted text, by kind")
    args = parser.parse_args(argv)

    print("| pasted text | MB | messages | CPU s | MB/s per core |\n| --- | --- | --- | --- | --- |")
    for kind, make in PASTED.items():
        got = throughput(corpus_of(make, int(args.pasted_mb * 1e6), args.seed))
        print(f"| {kind} | {got['mb']:.1f} | {got['messages']} | {got['cpu_s']:.2f} | {got['mb_per_cpu_s']:.1f} |")
    print()
    if args.pasted_only:
        return 0

    messages = corpus_of(message, int(args.mb * 1e6), args.seed)
    ours = throughput(messages)
    print(
        f"kb redact: {ours['mb']:.1f} MB, {ours['messages']} messages ({ours['redacted_messages']} with a "
        f"redaction): {ours['cpu_s']:.2f} s CPU, {ours['wall_s']:.2f} s wall → "
        f"{ours['mb_per_cpu_s']:.1f} MB/s per core (CPU), {ours['mb_per_wall_s']:.1f} MB/s wall"
    )
    subset = messages[: max(1, len(messages) // 4)]
    ref = reference_pass(subset)
    print(
        f"reference-style pass (19 regexes in sequence, no prefilter): {ref['mb']:.1f} MB in "
        f"{ref['cpu_s']:.2f} s CPU → {ref['mb_per_cpu_s']:.1f} MB/s; kb redact ×{ours['mb_per_cpu_s'] / ref['mb_per_cpu_s']:.1f}"
    )
    if args.detect_secrets:
        subset: list[str] = []
        while mb(subset) < args.ds_mb and len(subset) < len(messages):
            subset.append(messages[len(subset)])
        ds = detect_secrets(args.detect_secrets, subset)
        ours_subset = throughput(subset)
        print(
            f"detect-secrets: {ds['mb']:.1f} MB: {ds['cpu_s']:.2f} s CPU ({ds['findings']} findings) → "
            f"{ds['mb_per_cpu_s']:.2f} MB/s; kb redact on the same: {ours_subset['mb_per_cpu_s']:.1f} MB/s → "
            f"×{ours_subset['mb_per_cpu_s'] / ds['mb_per_cpu_s']:.0f}"
        )
    rows = adversarial(args.adversarial_max_kb)
    print("\n| hostile input | " + " | ".join(f"{s // 1000} KB" for s, _ in rows[0][1]) + " | growth per ×10 |")
    print("| --- | " + " | ".join("---" for _ in rows[0][1]) + " | --- |")
    for name, timings in rows:
        growth = [b / a if a > 0 else float("nan") for (_, a), (_, b) in zip(timings, timings[1:])]
        cells = " | ".join(f"{t * 1000:.1f} ms" for _, t in timings)
        print(f"| `{name}` | {cells} | {', '.join(f'×{g:.1f}' for g in growth)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
