"""One module per agent, each with ``discover`` and ``load`` (see ``kbtools.ingest.model``).

What the pipeline calls:

``SOURCES``
    The registry, a tuple of :class:`Source` in loader order: ``omp``,
    ``opencode`` (SQLite, then the legacy JSON tree for sessions the DB lacks),
    ``codex`` (session files, then ``history.jsonl``), ``prompt_history``
    (OpenCode), ``hindsight``, ``claude``. The reference's order, with Claude
    Code added last. A reader module is imported when a run first needs it
    (Hindsight's only when a URL is configured).

``discover_all(settings) -> Iterator[SourceRef]``
    Every source's refs, in registry order (a broken discovery becomes one
    ``unavailable`` ref). Refs and units pickle, for worker processes.

``load(ref, settings) -> SourceUnit``
    Routes a ref to the module that discovered it and never raises on bad
    input: an unexpected exception becomes an error unit
    ``<tool>_<record_type>_unavailable: <exception type>`` (no message text,
    which could quote the input).

Versions for a stat cache: ``ref.stat_key`` is what discovery saw (files:
``(size, mtime_ns, inode)``; OpenCode sessions: ``(time_updated, messages,
parts)``; Hindsight memories: ``(content hash,)``); ``unit.stat_key`` is the
version of what was actually read — None when the source changed under the
read or could not be read, meaning "do not cache, load next time".

``resolve_settings(config, flags) -> SourceSettings``
    Each location from flag > environment variable > ``.kb.yaml``
    (``ingest.*``) > default.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kbtools.config import Config
from kbtools.errors import ConfigError
from kbtools.ingest.model import SourceRef, SourceSettings, SourceUnit
from kbtools.ingest.sources.common import Location, Reader, error_unit, unavailable_unit

Discover = Callable[[SourceSettings], Iterator[SourceRef]]
Load = Callable[[SourceRef, SourceSettings], SourceUnit]
Needed = Callable[[SourceSettings], bool]


class Source(NamedTuple):
    name: str
    discover: Discover
    load: Load
    # Which refs this source loads: (tool, record_type) pairs; None = any record type.
    handles: tuple[tuple[str, str | None], ...]


def _hindsight_configured(settings: SourceSettings) -> bool:
    return bool(settings.hindsight_url)


# The readers in loader order, each a module of this package: (module, handles,
# needed). ``needed``: a settings test that spares even the import of the module
# when false, because its discovery would yield nothing (no Hindsight URL: no
# HTTP client imported).
_READERS: tuple[tuple[str, tuple[tuple[str, str | None], ...], Needed | None], ...] = (
    ("omp", (("omp", None),), None),
    ("opencode", (("opencode", None),), None),
    ("codex", (("codex", None),), None),
    ("prompt_history", (("opencode", "prompt-history"),), None),
    ("hindsight", (("hindsight", None),), _hindsight_configured),
    ("claude", (("claude", None),), None),
)


def _lazy(module: str, needed: Needed | None) -> tuple[Discover, Load]:
    """``discover`` and ``load`` of the reader ``module``, imported on first call:
    a run pays only for the readers it uses."""
    name = f"{__name__}.{module}"

    def discover(settings: SourceSettings) -> Iterator[SourceRef]:
        if needed is not None and not needed(settings):
            return iter(())
        refs: Iterator[SourceRef] = importlib.import_module(name).discover(settings)
        return refs

    def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
        unit: SourceUnit = importlib.import_module(name).load(ref, settings)
        return unit

    return discover, load


def _declared_readers() -> tuple[tuple[str, Reader], ...]:
    """The other modules of this package that declare a ``READER``, by name:
    adding an agent is adding its module (and its fixtures), nothing else."""
    known = {module for module, _, _ in _READERS} | {"common"}
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name in known or info.name.startswith("_"):
            continue
        reader = getattr(importlib.import_module(f"{__name__}.{info.name}"), "READER", None)
        if isinstance(reader, Reader):
            found.append((info.name, reader))
    return tuple(found)


DECLARED: tuple[tuple[str, Reader], ...] = _declared_readers()
# Every location a declared reader reads: a `.kb.yaml` key, a flag and an
# environment variable each (see Location).
LOCATIONS: tuple[Location, ...] = tuple(location for _, reader in DECLARED for location in reader.locations)

SOURCES: tuple[Source, ...] = (
    *(Source(module, *_lazy(module, needed), handles) for module, handles, needed in _READERS),
    *(Source(module, *_lazy(module, None), ((reader.tool, None),)) for module, reader in DECLARED),
)


def import_readers(settings: SourceSettings) -> None:
    """Import every reader this run may use: discovery needs them, and so does a
    worker process before its first task (see pipeline._warm_up)."""
    for module, _, needed in _READERS:
        if needed is None or needed(settings):
            importlib.import_module(f"{__name__}.{module}")
    for module, _ in DECLARED:
        importlib.import_module(f"{__name__}.{module}")


def discover_all(settings: SourceSettings) -> Iterator[SourceRef]:
    """Every source's refs in registry order; a source whose discovery breaks
    yields one ``unavailable`` ref naming the exception type, and the others
    still run."""
    import_readers(settings)
    for source in SOURCES:
        try:
            yield from source.discover(settings)
        except Exception as exc:
            tool = source.handles[0][0]
            yield SourceRef(
                tool,
                "session-store",
                "unavailable",
                source.name,
                payload=f"{tool}_discovery_failed: {type(exc).__name__}",
            )


def source_for(ref: SourceRef) -> Source:
    fallback = None
    for source in SOURCES:
        for tool, record_type in source.handles:
            if tool != ref.tool:
                continue
            if record_type == ref.record_type:
                return source
            if record_type is None and fallback is None:
                fallback = source
    if fallback is None:
        raise LookupError(f"no source loads tool '{ref.tool}'")
    return fallback


def load(ref: SourceRef, settings: SourceSettings) -> SourceUnit:
    if ref.format == "unavailable":  # a missing store, or a discovery that broke (see discover_all)
        return unavailable_unit(ref)
    try:
        return source_for(ref).load(ref, settings)
    except Exception as exc:  # a bug or an unforeseen input must not stop the run
        return error_unit(ref, f"{ref.tool}_{ref.record_type}_unavailable: {type(exc).__name__}")


def _home() -> Path:
    return Path(os.path.expanduser("~"))


def _xdg(var: str, default: str) -> Path:
    # The XDG spec: unset, empty or relative values are ignored.
    value = os.environ.get(var, "")
    return Path(value) if value and os.path.isabs(value) else _home() / default


def _env(var: str) -> str | None:
    value = os.environ.get(var, "")
    return value or None


def _path(value: str | os.PathLike[str], base: Path) -> Path:
    path = Path(os.path.expanduser(os.fspath(value)))
    return path if path.is_absolute() else base / path


def resolve_settings(config: Config, flags: Mapping[str, Any] | None = None) -> SourceSettings:
    """Resolve every source location: flag > environment variable > ``.kb.yaml`` > default.

    ``flags`` holds the CLI values by their ``SourceSettings``/``IngestConfig``
    names (``omp_sessions``, ``codex_dir``, ``opencode_db``, ``prompt_history``,
    ``claude_dir``, ``hindsight_url``, ``skip_hindsight``); None means "not
    given". Relative flag paths are taken from the working directory,
    relative ``.kb.yaml`` paths from the knowledge-base root.

    The environment variables are the agents' own: ``PI_CODING_AGENT_DIR``
    (OMP agent dir, sessions below it), ``CODEX_HOME``, ``OPENCODE_DB``,
    ``CLAUDE_CONFIG_DIR``, ``HINDSIGHT_API_URL`` and ``HINDSIGHT_API_KEY``.
    ``XDG_DATA_HOME``/``XDG_STATE_HOME`` only shape the defaults, so an
    explicit ``.kb.yaml`` location is not overridden by a desktop session's
    XDG variables.

    The default OpenCode DB is the pattern ``<data>/opencode/opencode*.db``
    (release channels write ``opencode-<channel>.db``); the legacy JSON tree
    is ``storage/`` beside the DB.
    """
    flags = flags or {}
    ingest = config.ingest
    cwd = Path.cwd()
    root = config.root

    def choose(name: str, env_value: Path | None, default: Path) -> Path:
        flag = flags.get(name)
        if flag is not None and flag != "":
            return _path(flag, cwd)
        if env_value is not None:
            return env_value
        configured = getattr(ingest, name)
        if configured:
            return _path(configured, root)
        return default

    data = _xdg("XDG_DATA_HOME", ".local/share") / "opencode"
    state = _xdg("XDG_STATE_HOME", ".local/state") / "opencode"

    pi_dir = _env("PI_CODING_AGENT_DIR")
    codex_home = _env("CODEX_HOME")
    opencode_env = _env("OPENCODE_DB")
    claude_env = _env("CLAUDE_CONFIG_DIR")

    omp_sessions = choose(
        "omp_sessions", _path(pi_dir, cwd) / "sessions" if pi_dir else None, _home() / ".omp/agent/sessions"
    )
    omp_given = bool(flags.get("omp_sessions") or pi_dir or ingest.omp_sessions)
    omp_roots = () if omp_given else _omp_default_roots()
    codex_dir = choose("codex_dir", _path(codex_home, cwd) if codex_home else None, _home() / ".codex")
    opencode_env_path = None
    if opencode_env and opencode_env != ":memory:":
        opencode_env_path = _path(opencode_env, data)
    opencode_db = choose("opencode_db", opencode_env_path, data / "opencode*.db")
    claude_first = claude_env.split(",")[0].strip() if claude_env else ""
    claude_dir = choose("claude_dir", _path(claude_first, cwd) if claude_first else None, _home() / ".claude")
    prompt_history = choose("prompt_history", None, state / "prompt-history.jsonl")

    declared = {location.name for location in LOCATIONS}
    for key, _ in ingest.locations:
        if key not in declared:
            raise ConfigError(f"unknown key 'ingest.{key}'", str(config.source or root / ".kb.yaml"))
    locations = tuple((loc.name, _location(loc, flags, dict(ingest.locations), cwd, root)) for loc in LOCATIONS)

    hindsight_url: str | None = None
    if not (flags.get("skip_hindsight") or ingest.skip_hindsight):
        hindsight_url = flags.get("hindsight_url") or _env("HINDSIGHT_API_URL") or ingest.hindsight_url or None

    return SourceSettings(
        omp_sessions=omp_sessions,
        codex_dir=codex_dir,
        opencode_db=opencode_db,
        opencode_storage=opencode_db.parent / "storage",
        prompt_history=prompt_history,
        claude_dir=claude_dir,
        hindsight_url=hindsight_url,
        hindsight_api_key=_env("HINDSIGHT_API_KEY"),
        hindsight_timeout=ingest.hindsight_timeout,
        hindsight_retries=ingest.hindsight_retries,
        max_text=ingest.max_text,
        locations=(("omp_roots", omp_roots), *locations),
    )


def _omp_default_roots() -> tuple[Path, ...]:
    """OMP's other default session roots: the XDG data location (after ``omp
    config migrate``) and every profile's (``OMP_PROFILE``), both beside the
    classic ``~/.omp/agent/sessions``."""
    data = _xdg("XDG_DATA_HOME", ".local/share") / "omp"
    roots = [data / "sessions"]
    for profiles in (_home() / ".omp" / "profiles", data / "profiles"):
        try:
            names = sorted(os.listdir(profiles))
        except OSError:
            continue
        roots += [profiles / name / "agent" / "sessions" for name in names]
        roots += [profiles / name / "sessions" for name in names]
    return tuple(roots)


def _location(
    location: Location, flags: Mapping[str, Any], configured: Mapping[str, tuple[str, ...]], cwd: Path, root: Path
) -> tuple[Path, ...]:
    """A declared location: flag > environment variable > ``.kb.yaml`` > default."""
    flag = flags.get(location.name)
    if flag not in (None, "", ()):
        values = [str(v) for v in flag] if isinstance(flag, (list, tuple)) else [str(flag)]
        if location.many:
            values = [part for value in values for part in value.split(os.pathsep)]
        return tuple(_path(v, cwd) for v in values if v)
    env_value = _env(location.env) if location.env else None
    if env_value:
        values = env_value.split(os.pathsep) if location.many else [env_value]
        return tuple(_path(v, cwd) / location.env_subpath for v in values if v)
    if configured.get(location.name):
        return tuple(_path(v, root) for v in configured[location.name])
    defaults = (location.default,) if isinstance(location.default, str) else location.default
    return tuple(_default_path(d, root) for d in defaults)


def _default_path(template: str, root: Path) -> Path:
    value = (
        template.replace("{xdg_data}", str(_xdg("XDG_DATA_HOME", ".local/share")))
        .replace("{xdg_config}", str(_xdg("XDG_CONFIG_HOME", ".config")))
        .replace("{xdg_state}", str(_xdg("XDG_STATE_HOME", ".local/state")))
        .replace("{kb_parent}", str(root.resolve().parent))
    )
    return Path(os.path.expanduser(value))
