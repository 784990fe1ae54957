"""`.kb.yaml` → one frozen :class:`Config`.

Precedence is flag > environment variable > `.kb.yaml` > default. This module
owns the file and the defaults; a command applies its own flags and
environment variables on top with :func:`pick`.

Every key the file may hold is declared once in ``_SCHEMA``; an unknown key or
a value of the wrong type is a :class:`ConfigError` naming the key and the file.
"""

from __future__ import annotations

import os
import re
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
    # Where the readers added since read (gemini_dir, copilot_dir, cursor_dir, aider_roots…):
    # each reader declares its own keys (kbtools/ingest/sources), so an `ingest.<name>_dir`,
    # `_roots`, `_db` or `_home` key of the file lands here as (name, paths) and `kb ingest`
    # refuses a name no reader declares.
    locations: tuple[tuple[str, tuple[str, ...]], ...] = ()


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


# `.kb.yaml` is a few hundred bytes; anything near this is not a config file.
MAX_CONFIG_BYTES = 1024 * 1024


class _Marks:
    """Where each key and value of `.kb.yaml` starts (1-based line and column), for errors."""

    def __init__(self, path: Path, node: Any) -> None:
        self.path = path
        self.keys: dict[str, tuple[int, int]] = {}
        self.values: dict[str, tuple[int, int]] = {}
        if type(node).__name__ == "MappingNode":
            self._collect(node, "")

    def _collect(self, node: Any, prefix: str) -> None:
        for key_node, value_node in node.value:
            name = prefix + str(getattr(key_node, "value", ""))
            self.keys[name] = _position(key_node)
            self.values[name] = _position(value_node)
            if not prefix and type(value_node).__name__ == "MappingNode":
                self._collect(value_node, name + ".")

    def error(self, what: str, key: str | None = None, *, at_value: bool = True) -> ConfigError:
        """A ConfigError naming the file, the line and column of ``key``, and the key."""
        line, column = (self.values if at_value else self.keys).get(key or "", (0, 0))
        if not line:
            return ConfigError(what, str(self.path), path=str(self.path))
        where = f"{self.path}:{line}:{column}" + (f": {key}" if key and at_value else "")
        return ConfigError(what, where, path=str(self.path), line=line, column=column)


def _position(node: Any) -> tuple[int, int]:
    mark = getattr(node, "start_mark", None)
    return (0, 0) if mark is None else (mark.line + 1, mark.column + 1)


def load_config(root: Path) -> Config:
    """Read `<root>/.kb.yaml` if present; defaults otherwise."""
    path = root / CONFIG_FILE
    if not path.is_file():
        return Config(root=root)
    from kbtools.safeyaml import YamlLimitError, compose, construct

    try:
        doc = compose(path.read_text(encoding="utf-8"), max_bytes=MAX_CONFIG_BYTES)
        marks = _Marks(path, doc.node)
        data = construct(doc)
    except YamlLimitError as exc:
        where = f"{path}:{exc.line}:{exc.column}" if exc.line else str(path)
        raise ConfigError(exc.reason, where, path=str(path), line=exc.line, column=exc.column) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text (byte {exc.start})", str(path), path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror or exc}", str(path), path=str(path)) from None
    except Exception as exc:  # ruamel's scanner, parser, composer and constructor errors
        raise _yaml_error(exc, path) from None
    if data is None:
        return Config(root=root, source=path)
    if not isinstance(data, Mapping):
        raise ConfigError("top level must be a mapping", str(path), path=str(path))
    return _build(root, marks, data)


def _yaml_error(exc: Exception, path: Path) -> ConfigError:
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    text = str(exc).strip()
    what = problem or (text.splitlines()[0] if text else type(exc).__name__)
    if mark is None:
        return ConfigError(f"invalid YAML: {what}", str(path), path=str(path))
    line, column = mark.line + 1, mark.column + 1
    return ConfigError(f"invalid YAML: {what}", f"{path}:{line}:{column}", path=str(path), line=line, column=column)


def _build(root: Path, marks: _Marks, data: Mapping[str, Any]) -> Config:
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "canonical_locale":
            if value is not None and not isinstance(value, str):
                raise marks.error("canonical_locale must be a string", "canonical_locale")
            kwargs[key] = value
        elif key in _SECTIONS:
            kwargs[key] = _section(_SECTIONS[key], str(key), value, marks)
        else:
            raise marks.error(f"unknown key '{key}'", str(key), at_value=False)
    if "paths" in kwargs:
        _inside_repository(root, kwargs["paths"], marks)
    return Config(root=root, source=marks.path, **kwargs)


def _inside_repository(root: Path, paths: PathsConfig, marks: _Marks) -> None:
    """Every configured path stays inside the KB root: git would refuse it later with its
    own message, and evidence read from outside the repository is not evidence."""
    defaults = PathsConfig()
    for key, value in paths._asdict().items():
        if value == getattr(defaults, key):
            continue
        rel = os.path.normpath(value.replace("{locale}", "locale"))
        if os.path.isabs(value) or rel == ".." or rel.startswith(".." + os.sep):
            raise marks.error(f"'paths.{key}' is outside the repository: {value}", f"paths.{key}")


def _section(cls: type[T], name: str, value: Any, marks: _Marks) -> T:
    if value is None:
        return cls()
    if not isinstance(value, Mapping):
        raise marks.error(f"'{name}' must be a mapping", name)
    defaults = cls()
    # The field types as written (a named tuple keeps each as a ForwardRef).
    annotations = {key: getattr(kind, "__forward_arg__", kind) for key, kind in cls.__annotations__.items()}
    kwargs: dict[str, Any] = {}
    locations: list[tuple[str, tuple[str, ...]]] = []
    for key, item in value.items():
        if cls is IngestConfig and isinstance(key, str) and key not in annotations and _LOCATION_KEY.fullmatch(key):
            locations.append((key, _location_value(item, f"{name}.{key}", marks)))
            continue
        if key not in annotations or (cls is IngestConfig and key == "locations"):
            raise marks.error(f"unknown key '{name}.{key}'", f"{name}.{key}", at_value=False)
        kwargs[key] = _coerce(getattr(defaults, key), annotations[key], item, f"{name}.{key}", marks)
    if locations:
        kwargs["locations"] = tuple(locations)
    return cls(**kwargs)


# An `ingest.*` key naming where a reader reads (see IngestConfig.locations).
_LOCATION_KEY = re.compile(r"[a-z][a-z0-9]*_(?:dir|roots|db|home)")


def _location_value(item: Any, key: str, marks: _Marks) -> tuple[str, ...]:
    if isinstance(item, str) and item:
        return (item,)
    if isinstance(item, list) and item and all(isinstance(x, str) and x for x in item):
        return tuple(item)
    raise marks.error(f"'{key}' must be a path or a list of paths", key)


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


def bound_problem(key: str, value: float) -> str | None:
    """Why ``value`` is out of the bounds of ``key`` (a `.kb.yaml` key such as
    ``derived.threshold``), or None. The one definition of each bound: flags and the
    functions that take these values check them here too."""
    low, high = _BOUNDS.get(key, (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        limits = f"between {low:g} and {high:g}" if low is not None and high is not None else f"at least {low:g}"
        return f"must be {limits}, got {value:g}"
    return None


def check_bound(key: str, value: float, where: str | None = None) -> float:
    """``value``, or a ConfigError when it is out of the bounds of ``key``."""
    problem = bound_problem(key, value)
    if problem is not None:
        raise ConfigError(f"'{key}' {problem}", where or key)
    return value


def _coerce(default: Any, annotation: Any, item: Any, key: str, marks: _Marks) -> Any:
    kind = str(annotation)
    if item is None:
        if "None" in kind:
            return None
        raise marks.error(f"'{key}' may not be empty", key)
    if isinstance(default, tuple) or kind.startswith("tuple"):
        if not isinstance(item, list) or not all(isinstance(x, str) for x in item):
            raise marks.error(f"'{key}' must be a list of strings", key)
        return tuple(item)
    if isinstance(default, bool) or kind == "bool":
        if not isinstance(item, bool):
            raise marks.error(f"'{key}' must be true or false", key)
        return item
    is_float = isinstance(default, float) or kind == "float"
    if is_float or isinstance(default, int) or kind.startswith("int"):
        if isinstance(item, bool) or not isinstance(item, (int, float) if is_float else int):
            raise marks.error(f"'{key}' must be {'a number' if is_float else 'an integer'}", key)
        problem = bound_problem(key, item)
        if problem is not None:
            raise marks.error(f"'{key}' {problem}", key)
        return float(item) if is_float else item
    if not isinstance(item, str):
        raise marks.error(f"'{key}' must be a string", key)
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
