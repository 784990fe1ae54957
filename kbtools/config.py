"""`.kb.yaml` → one frozen :class:`Config`.

Precedence is flag > environment variable > `.kb.yaml` > default. This module
owns the file and the defaults; a command applies its own flags and
environment variables on top with :func:`pick`.

Every key the file may hold is declared once in ``_SCHEMA``; an unknown key or
a value of the wrong type is a :class:`ConfigError` naming the key and the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from kbtools.errors import ConfigError

CONFIG_FILE = ".kb.yaml"

T = TypeVar("T")


class PathsConfig(NamedTuple):
    raw: str = "src/content/raw"
    raw_manifest: str = "src/content/raw/.manifest.sha256"
    notes: str = "src/content/note"
    # `{locale}` is replaced by the canonical locale.
    index: str = "src/content/information/{locale}/kb-index.md"  # type: ignore[assignment]  # not tuple.index
    log: str = "src/content/information/{locale}/kb-log.md"
    artifact_manifest: str = "src/content/note/.manifest.jsonl"
    ingest_output: str = ".agent/kb-ingest"
    checkpoint: str = ".agent/checkpoints/current-task.md"
    kb_md: str = "KB.md"


class EnumsConfig(NamedTuple):
    kind: tuple[str, ...] = ("concept", "entity", "synthesis")
    status: tuple[str, ...] = ("active", "provisional", "deprecated")


class RedactionConfig(NamedTuple):
    # Absolute paths under these prefixes are well-known system paths, not private.
    # Not `/tmp/`: temp files carry user, project and task names (the reference contract
    # test requires `/tmp/<name>.html` to be redacted).
    public_path_prefixes: tuple[str, ...] = (
        "/usr/",
        "/etc/",
        "/opt/",
        "/proc/",
        "/sys/",
        "/dev/",
        "/bin/",
        "/sbin/",
        "/lib/",
        "/lib64/",
        "/var/",
        "/run/",
        "/srv/",
        "/nix/",
        "/Library/",
        "/System/",
        "/Applications/",
    )
    # Literal strings that are never redacted (e.g. a public host name of the team).
    allow: tuple[str, ...] = ()
    # People's names redacted wherever they stand as a word (<PRIVATE_EMAIL>); the account
    # running kb and the owner of any home-directory path in the same text are added.
    private_names: tuple[str, ...] = ()
    # Domains whose hosts are internal (e.g. corp.example.com): <PRIVATE_HOST>.
    private_domains: tuple[str, ...] = ()


class IngestConfig(NamedTuple):
    omp_sessions: str | None = None
    codex_dir: str | None = None
    opencode_db: str | None = None
    prompt_history: str | None = None
    claude_dir: str | None = None
    hindsight_url: str | None = None
    skip_hindsight: bool = False
    # Seconds per Hindsight request, and retries after a timeout or a 5xx answer.
    hindsight_timeout: float = 10.0
    hindsight_retries: int = 3
    jobs: int | None = None
    max_text: int = 120_000
    max_candidate: int = 8_000


class DerivedConfig(NamedTuple):
    enabled: bool = True
    threshold: float = 0.8
    # Emitted skills, besides the notes: globs relative to the KB root (`**` spans folders).
    skills: tuple[str, ...] = ("skills/**/SKILL.md", ".claude/skills/**/SKILL.md", ".agents/skills/**/SKILL.md")


class RetentionConfig(NamedTuple):
    refuse: int = 3
    registry_prefixes: tuple[str, ...] = ("JIRA-", "GH-", "CVE-", "RFC", "PEP", "ADR-")
    # Frontmatter keys that record when a page was touched: their values change on every
    # rewrite, so they are not anchors.
    ignore_frontmatter_keys: tuple[str, ...] = (
        "timestamp",
        "updated",
        "updatedAt",
        "updated_at",
        "lastUpdated",
        "last_updated",
        "lastmod",
        "modified",
        "last_modified",
    )


class Config(NamedTuple):
    root: Path
    source: Path | None = None  # the .kb.yaml that was read, if any
    canonical_locale: str | None = None  # None: the single locale that has an index
    paths: PathsConfig = PathsConfig()
    enums: EnumsConfig = EnumsConfig()
    redaction: RedactionConfig = RedactionConfig()
    ingest: IngestConfig = IngestConfig()
    derived: DerivedConfig = DerivedConfig()
    retention: RetentionConfig = RetentionConfig()


_SECTIONS: dict[str, type] = {
    "paths": PathsConfig,
    "enums": EnumsConfig,
    "redaction": RedactionConfig,
    "ingest": IngestConfig,
    "derived": DerivedConfig,
    "retention": RetentionConfig,
}


def load_config(root: Path) -> Config:
    """Read `<root>/.kb.yaml` if present; defaults otherwise."""
    path = root / CONFIG_FILE
    if not path.is_file():
        return Config(root=root)
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (YAMLError, UnicodeDecodeError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"invalid YAML: {first}", str(path)) from None
    if data is None:
        return Config(root=root, source=path)
    if not isinstance(data, Mapping):
        raise ConfigError("top level must be a mapping", str(path))
    return _build(root, path, data)


def _build(root: Path, path: Path, data: Mapping[str, Any]) -> Config:
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "canonical_locale":
            if value is not None and not isinstance(value, str):
                raise ConfigError("canonical_locale must be a string", f"{path}: canonical_locale")
            kwargs[key] = value
        elif key in _SECTIONS:
            kwargs[key] = _section(_SECTIONS[key], key, value, path)
        else:
            raise ConfigError(f"unknown key '{key}'", str(path))
    return Config(root=root, source=path, **kwargs)


def _section(cls: type[T], name: str, value: Any, path: Path) -> T:
    if value is None:
        return cls()
    if not isinstance(value, Mapping):
        raise ConfigError(f"'{name}' must be a mapping", str(path))
    defaults = cls()
    # The field types as written (a named tuple keeps each as a ForwardRef).
    annotations = {key: getattr(kind, "__forward_arg__", kind) for key, kind in cls.__annotations__.items()}
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        if key not in annotations:
            raise ConfigError(f"unknown key '{name}.{key}'", str(path))
        kwargs[key] = _coerce(getattr(defaults, key), annotations[key], item, f"{name}.{key}", path)
    return cls(**kwargs)


# Bounds (inclusive; None = open) a number in the file must respect, so a bad value is
# reported here, naming the file, not later by the command that uses it.
_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "derived.threshold": (0.0, 1.0),
    "ingest.jobs": (1, None),
    "ingest.max_text": (1, None),
    "ingest.max_candidate": (1, None),
    "ingest.hindsight_timeout": (0.001, None),
    "ingest.hindsight_retries": (0, None),
}


def _bounded(key: str, value: float, where: str) -> None:
    low, high = _BOUNDS.get(key, (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        limits = f"between {low:g} and {high:g}" if low is not None and high is not None else f"at least {low:g}"
        raise ConfigError(f"'{key}' must be {limits}, got {value:g}", where)


def _coerce(default: Any, annotation: Any, item: Any, key: str, path: Path) -> Any:
    where = f"{path}: {key}"
    kind = str(annotation)
    if item is None:
        if "None" in kind:
            return None
        raise ConfigError(f"'{key}' may not be empty", str(path))
    if isinstance(default, tuple) or kind.startswith("tuple"):
        if not isinstance(item, list) or not all(isinstance(x, str) for x in item):
            raise ConfigError(f"'{key}' must be a list of strings", where)
        return tuple(item)
    if isinstance(default, bool) or kind == "bool":
        if not isinstance(item, bool):
            raise ConfigError(f"'{key}' must be true or false", where)
        return item
    if isinstance(default, float) or kind == "float":
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise ConfigError(f"'{key}' must be a number", where)
        _bounded(key, item, where)
        return float(item)
    if isinstance(default, int) or kind.startswith("int"):
        if isinstance(item, bool) or not isinstance(item, int):
            raise ConfigError(f"'{key}' must be an integer", where)
        _bounded(key, item, where)
        return item
    if not isinstance(item, str):
        raise ConfigError(f"'{key}' must be a string", where)
    return item


def pick(flag: T | None, env_var: str | None, configured: T, parse: Callable[[str], T]) -> T:
    """Flag > environment variable > configured value (file or default).

    ``parse`` turns the environment string into a value and raises
    :class:`ConfigError` (naming ``env_var``) when it cannot.
    """
    if flag is not None:
        return flag
    if env_var:
        raw = os.environ.get(env_var)
        if raw is not None and raw != "":
            return parse(raw)
    return configured
