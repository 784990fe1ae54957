"""Ids, clocks, session sizes and file writing shared by the agent writers."""

from __future__ import annotations

import json
import math
import os
import random
import string
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from corpus.model import SessionContext
from corpus.shapes import DEFAULT, Shape
from corpus.vocab import PEOPLE, PROJECTS

# Sessions start between this instant and ~150 days later.
EPOCH_MS = int(datetime(2026, 3, 2, tzinfo=UTC).timestamp() * 1000)
SPAN_MS = 150 * 86_400_000
BASE62 = string.digits + string.ascii_uppercase + string.ascii_lowercase

MIN_SESSION = 8_000


def dumps(obj: object) -> str:
    """Compact JSON, as the agents write it (non-ASCII kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def base62(rng: random.Random, n: int) -> str:
    return "".join(rng.choices(BASE62, k=n))


def uuid4(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def uuid7(rng: random.Random, ms: int) -> str:
    value = (ms & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rng.getrandbits(12) << 64 | 0b10 << 62 | rng.getrandbits(62)
    return str(uuid.UUID(int=value))


def session_size(rng: random.Random, remaining: int, shape: Shape = DEFAULT) -> tuple[int, bool]:
    """Target bytes of the next session and whether it is a heavy one.

    Long-tailed like real stores (by default most sessions 20–200 KB, about 3 %
    several MB; see corpus.shapes); never more than a sixth of what is left so
    small corpora still hold several sessions per agent.
    """
    heavy = rng.random() < shape.heavy_p
    size = rng.uniform(*shape.heavy_bytes) if heavy else rng.lognormvariate(math.log(shape.median_bytes), shape.sigma)
    cap = max(MIN_SESSION * 2, remaining // 6)
    size = int(min(cap, max(MIN_SESSION, size)))
    if remaining - size < MIN_SESSION:
        size = remaining
    return size, heavy and size > 800_000


def new_context(rng: random.Random, provider: str, model: str, heavy: bool) -> SessionContext:
    person = rng.choice(PEOPLE)
    project = rng.choice(PROJECTS)
    r = rng.random()
    if r < 0.75:
        cwd = f"{person.home}/src/{project.name}"
    elif r < 0.95:
        cwd = f"{person.home}/work/{project.name}"
    else:
        cwd = f"/tmp/{project.name}-scratch"
    start = EPOCH_MS + rng.randrange(SPAN_MS)
    return SessionContext(person, project, cwd, start, provider, model, clock_ms=start, heavy=heavy)


def fixed_mtime(path: Path, ms: int) -> None:
    """Stamp the file with its last event time, so reruns produce the same tree."""
    os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))


def write_lines(path: Path, lines: list[str], mtime_ms: int) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.write_bytes(data)
    fixed_mtime(path, mtime_ms)
    return len(data)


def write_in_time_order(path: Path, entries: list[tuple[int, str]]) -> int:
    """(ms, line) entries written oldest first, the file stamped with the newest."""
    entries = sorted(entries)
    return write_lines(path, [line for _ms, line in entries], entries[-1][0] if entries else 0)


def line_bytes(lines: list[str]) -> int:
    # Characters, not bytes: close enough for sizing and much cheaper.
    return sum(map(len, lines)) + len(lines)


def tree_stats(root: Path) -> tuple[int, int]:
    total = files = 0
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            total += os.path.getsize(os.path.join(dirpath, name))
            files += 1
    return total, files


def budgets(total: int, agents: list[str], weights: dict[str, float]) -> Iterator[tuple[str, int]]:
    norm = sum(weights[a] for a in agents)
    for a in agents:
        yield a, int(total * weights[a] / norm)
