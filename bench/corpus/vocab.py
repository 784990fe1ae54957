"""Word lists the corpus draws from: invented people, hosts, projects, libraries.

Every name here is made up. Private-looking values (home paths, e-mail
addresses, `.internal`/`.corp` hosts, RFC 1918 addresses) are the bait the
ingest redactor has to catch.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Person:
    user: str
    full_name: str
    email: str
    os: str  # "linux" | "macos"

    @property
    def home(self) -> str:
        return f"/Users/{self.user}" if self.os == "macos" else f"/home/{self.user}"


PEOPLE = (
    Person("alice", "Alice Moreau", "alice@example.com", "linux"),
    Person("bob", "Bob Lindqvist", "bob.lindqvist@example.org", "macos"),
    Person("carol", "Carol Nakamura", "carol@acme-corp.example", "linux"),
    Person("dmitri", "Dmitri Volkov", "dvolkov@example.net", "linux"),
    Person("erin", "Erin O'Neill", "erin.oneill@example.com", "macos"),
    Person("farah", "Farah Haddad", "farah@northwind.example", "linux"),
    Person("goran", "Goran Petrovic", "goran.p@example.org", "linux"),
    Person("hana", "Hana Svoboda", "hana@acme-corp.example", "macos"),
)

COLLEAGUES = (
    "ops-oncall@acme-corp.example",
    "release-bot@example.com",
    "j.smith@example.org",
    "security@northwind.example",
    "lena.k@example.net",
    "pat@example.com",
)

PRIVATE_HOSTS = (
    "build-03.corp",
    "db.internal",
    "ci-runner-7.lan",
    "grafana.internal",
    "nas.local",
    "vault.internal",
    "registry.corp",
    "10.0.4.12",
    "192.168.1.20",
    "172.16.8.3",
    "10.12.0.7",
    "staging-api.internal",
)
PRIVATE_ENDPOINTS = (
    "localhost:5432",
    "127.0.0.1:8080",
    "localhost:3000",
    "[::1]:9090",
    "10.0.4.12:6379",
    "db.internal:5432",
    "192.168.1.20:8443",
)
PUBLIC_URLS = (
    "https://docs.python.org/3/library/sqlite3.html",
    "https://github.com/pallets/click/issues/2416",
    "https://peps.python.org/pep-0668/",
    "https://developer.mozilla.org/en-US/docs/Web/API/fetch",
    "https://doc.rust-lang.org/std/sync/struct.Mutex.html",
    "https://vitejs.dev/config/",
    "https://pre-commit.com/#creating-new-hooks",
    "https://www.sqlite.org/wal.html",
    "https://docs.astral.sh/ruff/rules/",
    "https://nodejs.org/api/fs.html#fspromisesreadfilepath-options",
)


@dataclass(frozen=True)
class Project:
    name: str
    lang: str  # python | typescript | rust
    package: str


PROJECTS = (
    Project("kb-notes", "python", "kbnotes"),
    Project("ledger-api", "python", "ledger"),
    Project("web-dashboard", "typescript", "dashboard"),
    Project("edge-proxy", "rust", "edge_proxy"),
    Project("pipeline-workers", "python", "workers"),
    Project("docs-site", "typescript", "site"),
    Project("billing-core", "rust", "billing"),
    Project("ml-eval", "python", "mleval"),
    Project("mobile-sync", "typescript", "sync"),
    Project("infra-tools", "python", "infratools"),
)

LIBRARIES = {
    "python": (
        ("pydantic", ("2.6.4", "2.7.1", "2.8.2")),
        ("fastapi", ("0.110.1", "0.111.0")),
        ("sqlalchemy", ("2.0.29", "2.0.30")),
        ("pytest", ("8.1.1", "8.2.1", "8.3.2")),
        ("typer", ("0.12.3", "0.12.5")),
        ("httpx", ("0.26.0", "0.27.0")),
        ("numpy", ("1.26.4", "2.0.1")),
        ("ruamel.yaml", ("0.18.5", "0.18.6")),
        ("uvicorn", ("0.29.0", "0.30.1")),
        ("alembic", ("1.13.1",)),
    ),
    "typescript": (
        ("react", ("18.2.0", "18.3.1")),
        ("vite", ("5.2.11", "5.3.1")),
        ("vitest", ("1.6.0", "2.0.3")),
        ("astro", ("4.8.6", "4.11.0")),
        ("typescript", ("5.4.5", "5.5.3")),
        ("zod", ("3.23.8",)),
        ("next", ("14.2.3", "14.2.5")),
        ("drizzle-orm", ("0.30.10", "0.31.2")),
        ("undici", ("6.18.2",)),
    ),
    "rust": (
        ("tokio", ("1.37.0", "1.38.0")),
        ("serde", ("1.0.203",)),
        ("axum", ("0.7.5",)),
        ("clap", ("4.5.4", "4.5.8")),
        ("reqwest", ("0.12.4", "0.12.5")),
        ("tracing", ("0.1.40",)),
        ("hyper", ("1.3.1",)),
        ("rusqlite", ("0.31.0",)),
    ),
}

MODULES = (
    "config",
    "ledger",
    "parser",
    "cache",
    "session",
    "auth",
    "router",
    "storage",
    "worker",
    "scheduler",
    "metrics",
    "redact",
    "index",
    "client",
    "schema",
    "migrate",
    "export",
    "queue",
    "render",
    "sync",
)
VERBS = (
    "load",
    "parse",
    "build",
    "resolve",
    "fetch",
    "merge",
    "flush",
    "validate",
    "render",
    "emit",
    "collect",
    "normalize",
    "apply",
    "compute",
    "open",
    "read",
    "write",
    "scan",
    "retry",
    "encode",
)
NOUNS = (
    "config",
    "entry",
    "record",
    "batch",
    "token",
    "session",
    "manifest",
    "chunk",
    "row",
    "event",
    "key",
    "path",
    "payload",
    "snapshot",
    "ledger",
    "frame",
    "span",
    "bucket",
    "state",
    "cursor",
)
# verb -> (third person, past participle, gerund)
VERB_FORMS = {
    "load": ("loads", "loaded", "loading"),
    "parse": ("parses", "parsed", "parsing"),
    "build": ("builds", "built", "building"),
    "resolve": ("resolves", "resolved", "resolving"),
    "fetch": ("fetches", "fetched", "fetching"),
    "merge": ("merges", "merged", "merging"),
    "flush": ("flushes", "flushed", "flushing"),
    "validate": ("validates", "validated", "validating"),
    "render": ("renders", "rendered", "rendering"),
    "emit": ("emits", "emitted", "emitting"),
    "collect": ("collects", "collected", "collecting"),
    "normalize": ("normalizes", "normalized", "normalizing"),
    "apply": ("applies", "applied", "applying"),
    "compute": ("computes", "computed", "computing"),
    "open": ("opens", "opened", "opening"),
    "read": ("reads", "read", "reading"),
    "write": ("writes", "written", "writing"),
    "scan": ("scans", "scanned", "scanning"),
    "retry": ("retries", "retried", "retrying"),
    "encode": ("encodes", "encoded", "encoding"),
}
ADJECTIVES = (
    "stale",
    "partial",
    "pending",
    "cached",
    "raw",
    "merged",
    "next",
    "prior",
    "local",
    "remote",
)

ERRORS = {
    "python": (
        "KeyError: 'session_id'",
        "ValueError: invalid literal for int() with base 10: ''",
        "TypeError: 'NoneType' object is not subscriptable",
        "sqlite3.OperationalError: database is locked",
        "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        "AssertionError: assert 3 == 4",
        "FileNotFoundError: [Errno 2] No such file or directory: '.kb.yaml'",
        "RecursionError: maximum recursion depth exceeded while calling a Python object",
        "httpx.ReadTimeout: timed out",
        "PermissionError: [Errno 13] Permission denied: '.agent/kb-ingest/manifest.jsonl'",
    ),
    "typescript": (
        "TypeError: Cannot read properties of undefined (reading 'map')",
        "ReferenceError: process is not defined",
        "Error: ENOENT: no such file or directory, open 'src/content/config.ts'",
        "SyntaxError: Unexpected token '<', \"<!DOCTYPE \"... is not valid JSON",
        "RangeError: Maximum call stack size exceeded",
        "Error: Hydration failed because the initial UI does not match what was rendered on the server.",
        "TS2345: Argument of type 'string | undefined' is not assignable to parameter of type 'string'.",
    ),
    "rust": (
        "called `Option::unwrap()` on a `None` value",
        "error[E0382]: borrow of moved value: `config`",
        "error[E0599]: no method named `into_inner` found for struct `Arc<Mutex<State>>`",
        'called `Result::unwrap()` on an `Err` value: Os { code: 2, kind: NotFound, message: "No such file or directory" }',
        "error[E0277]: `Rc<RefCell<Cache>>` cannot be sent between threads safely",
    ),
}

TEST_COMMANDS = {
    "python": (
        "pytest -q",
        "pytest -x tests/test_{mod}.py",
        "python -m pytest -k {verb}_{noun}",
        "ruff check .",
        "mypy src",
        "uv run pytest -q --maxfail=1",
        "python -m {pkg}.cli --help",
    ),
    "typescript": (
        "pnpm test",
        "pnpm vitest run src/lib/{mod}.test.ts",
        "npx tsc --noEmit",
        "pnpm build",
        "pnpm lint",
        "npm run dev -- --port 3000",
        "node --trace-warnings dist/index.js",
    ),
    "rust": (
        "cargo test",
        "cargo build --release",
        "cargo clippy -- -D warnings",
        "cargo test {mod}::tests",
        "cargo run -- --config config.toml",
        "RUST_BACKTRACE=1 cargo test {verb}_{noun}",
    ),
}

MODELS = {
    "anthropic": ("claude-sonnet-4-5", "claude-opus-4-1", "claude-haiku-4-5"),
    "openai": ("gpt-5-codex", "gpt-5", "gpt-5.1-codex-mini"),
    "google": ("gemini-2.5-pro",),
}
