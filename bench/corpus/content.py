"""What a coding-agent session says: prose, thinking, and tool output.

Tool output is most of the bytes of a real session, so it is drawn from a pool
of pre-built blobs (source files, test runs, install logs, diffs, JSON, env
files) generated once per seed; a session only picks, slices and personalises
them with `str.replace`, never per-character Python work. Prose is assembled
from templates, so it varies from message to message.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from corpus import zh
from corpus.model import SessionContext, Step, ToolCall, Turn
from corpus.secrets import SecretMaker
from corpus.shapes import DEFAULT, Shape
from corpus.vocab import (
    ADJECTIVES,
    COLLEAGUES,
    ERRORS,
    LIBRARIES,
    MODULES,
    NOUNS,
    PEOPLE,
    PRIVATE_ENDPOINTS,
    PRIVATE_HOSTS,
    PROJECTS,
    PUBLIC_URLS,
    TEST_COMMANDS,
    VERB_FORMS,
    VERBS,
    Project,
)

# Personalisation markers inside pool blobs, replaced per session.
HOME, USER, EMAIL, REPO = "@@HOME@@", "@@USER@@", "@@EMAIL@@", "@@REPO@@"
LANGS = ("python", "typescript", "rust")
EXT = {"python": "py", "typescript": "ts", "rust": "rs"}


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}"


def _camel(rng: random.Random) -> str:
    return rng.choice(VERBS) + rng.choice(NOUNS).capitalize()


def _type_name(rng: random.Random) -> str:
    return rng.choice(ADJECTIVES).capitalize() + rng.choice(NOUNS).capitalize()


def _lib(rng: random.Random, lang: str) -> tuple[str, str]:
    name, versions = rng.choice(LIBRARIES[lang])
    return name, rng.choice(versions)


def _rel_path(rng: random.Random, project: Project, test: bool = False) -> str:
    mod = rng.choice(MODULES)
    if project.lang == "python":
        return f"tests/test_{mod}.py" if test else f"src/{project.package}/{mod}.py"
    if project.lang == "typescript":
        return (
            f"src/lib/{mod}.test.ts"
            if test
            else rng.choice((f"src/lib/{mod}.ts", f"src/components/{mod.capitalize()}.tsx"))
        )
    return f"src/{mod}.rs" if not test else f"tests/{mod}.rs"


def _test_command(rng: random.Random, project: Project) -> str:
    return rng.choice(TEST_COMMANDS[project.lang]).format(
        mod=rng.choice(MODULES), verb=rng.choice(VERBS), noun=rng.choice(NOUNS), pkg=project.package
    )


# --------------------------------------------------------------------------- code


def _python_function(rng: random.Random) -> list[str]:
    name, a, b = _ident(rng), rng.choice(NOUNS), rng.choice(NOUNS) + "s"
    lines = [
        f"def {name}({a}: {_type_name(rng)}, *, strict: bool = False) -> list[{_type_name(rng)}]:",
        f'    """{rng.choice(VERBS).capitalize()} every {a} of the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}."""',
        f"    {b} = []",
    ]
    for _ in range(rng.randint(2, 7)):
        r = rng.random()
        if r < 0.25:
            lines += [f"    for item in {a}.{rng.choice(NOUNS)}s:", f"        {b}.append({_ident(rng)}(item))"]
        elif r < 0.45:
            err = rng.choice(("ValueError", "KeyError", "RuntimeError", "LookupError"))
            lines += [
                f"    if {a}.{rng.choice(NOUNS)} is None:",
                f'        raise {err}(f"missing {rng.choice(NOUNS)} in {{{a}!r}}")',
            ]
        elif r < 0.6:
            lines += ['    with open(path, encoding="utf-8") as fh:', f"        {rng.choice(NOUNS)} = json.load(fh)"]
        elif r < 0.8:
            lines.append(f'    log.debug("{rng.choice(VERBS)} %d {rng.choice(NOUNS)}s in %.2fs", len({b}), elapsed)')
        else:
            lines.append(f"    {rng.choice(NOUNS)} = {_ident(rng)}({a}, limit={rng.randint(2, 4096)})")
    lines += [f"    return {b}", ""]
    return lines


def _ts_function(rng: random.Random) -> list[str]:
    name, a, t = _camel(rng), rng.choice(NOUNS), _type_name(rng)
    lines = [
        f"export async function {name}({a}: {t}, opts: {{ signal?: AbortSignal }} = {{}}): Promise<{_type_name(rng)}[]> {{",
        "  const out = [];",
    ]
    for _ in range(rng.randint(2, 7)):
        r = rng.random()
        if r < 0.3:
            lines += [
                f"  for (const item of {a}.{rng.choice(NOUNS)}s) {{",
                f"    out.push(await {_camel(rng)}(item));",
                "  }",
            ]
        elif r < 0.5:
            lines += [
                f"  if (!{a}.{rng.choice(NOUNS)}) {{",
                f"    throw new Error(`missing {rng.choice(NOUNS)}: ${{{a}.id}}`);",
                "  }",
            ]
        elif r < 0.7:
            lines.append(
                f"  const res = await fetch(`/api/{rng.choice(NOUNS)}s/${{{a}.id}}`, {{ signal: opts.signal }});"
            )
        else:
            lines.append(f"  const {rng.choice(NOUNS)} = {_camel(rng)}({a}, {rng.randint(1, 500)});")
    lines += ["  return out;", "}", ""]
    return lines


def _rust_function(rng: random.Random) -> list[str]:
    name, a, t = _ident(rng), rng.choice(NOUNS), _type_name(rng)
    lines = [
        f"pub fn {name}({a}: &{t}, limit: usize) -> Result<Vec<{_type_name(rng)}>, Error> {{",
        "    let mut out = Vec::with_capacity(limit);",
    ]
    for _ in range(rng.randint(2, 7)):
        r = rng.random()
        if r < 0.3:
            lines += [
                f"    for item in {a}.{rng.choice(NOUNS)}s.iter() {{",
                f"        out.push({_ident(rng)}(item)?);",
                "    }",
            ]
        elif r < 0.5:
            lines += [
                f'    let {rng.choice(NOUNS)} = {a}.{rng.choice(NOUNS)}.as_ref().ok_or(Error::Missing("{rng.choice(NOUNS)}"))?;'
            ]
        else:
            lines.append(f'    tracing::debug!(count = out.len(), "{rng.choice(VERBS)} {rng.choice(NOUNS)}");')
    lines += ["    Ok(out)", "}", ""]
    return lines


_FUNCTION = {"python": _python_function, "typescript": _ts_function, "rust": _rust_function}


def _module_header(rng: random.Random, lang: str) -> list[str]:
    if lang == "python":
        return [
            '"""'
            + f"{rng.choice(NOUNS).capitalize()} {VERB_FORMS[rng.choice(VERBS)][2]} for the {rng.choice(MODULES)} layer."
            + '"""',
            "",
            "from __future__ import annotations",
            "",
            "import json",
            "import logging",
            "from pathlib import Path",
            "",
            "log = logging.getLogger(__name__)",
            "",
        ]
    if lang == "typescript":
        return [
            f"import {{ {_camel(rng)} }} from './{rng.choice(MODULES)}';",
            "import { z } from 'zod';",
            "",
            f"export const {rng.choice(NOUNS)}Schema = z.object({{ id: z.string(), {rng.choice(NOUNS)}: z.number() }});",
            "",
        ]
    return [
        "use std::sync::{Arc, Mutex};",
        "",
        "use serde::{Deserialize, Serialize};",
        f"use crate::{rng.choice(MODULES)}::Error;",
        "",
    ]


def source_code(rng: random.Random, lang: str, functions: int) -> str:
    lines = _module_header(rng, lang)
    make = _FUNCTION[lang]
    for _ in range(functions):
        lines += make(rng)
    return "\n".join(lines)


def _numbered(text: str) -> str:
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), 1))


# --------------------------------------------------------------------------- tool-output pool


def _traceback(rng: random.Random, lang: str) -> str:
    if lang == "python":
        frames = []
        for _ in range(rng.randint(2, 7)):
            frames += [
                f'  File "{HOME}/src/{REPO}/src/{rng.choice(MODULES)}.py", line {rng.randint(10, 900)}, in {_ident(rng)}',
                f"    {rng.choice(NOUNS)} = {_ident(rng)}({rng.choice(NOUNS)})",
            ]
        return "Traceback (most recent call last):\n" + "\n".join(frames) + "\n" + rng.choice(ERRORS["python"])
    if lang == "typescript":
        frames = [
            f"    at {_camel(rng)} ({HOME}/src/{REPO}/src/lib/{rng.choice(MODULES)}.ts:{rng.randint(5, 400)}:{rng.randint(3, 60)})"
            for _ in range(rng.randint(3, 9))
        ]
        return rng.choice(ERRORS["typescript"]) + "\n" + "\n".join(frames)
    return (
        f"thread 'main' panicked at src/{rng.choice(MODULES)}.rs:{rng.randint(10, 600)}:{rng.randint(5, 40)}:\n"
        f"{rng.choice(ERRORS['rust'])}\nstack backtrace:\n"
        + "\n".join(
            f"  {i}: {rng.choice(MODULES)}::{_ident(rng)}\n             at ./src/{rng.choice(MODULES)}.rs:{rng.randint(1, 500)}"
            for i in range(rng.randint(3, 10))
        )
    )


def _test_run(rng: random.Random, lang: str) -> str:
    n = rng.randint(20, 600)
    failed = rng.randint(0, 4) if rng.random() < 0.5 else 0
    if lang == "python":
        head = [
            "============================= test session starts ==============================",
            f"platform linux -- Python 3.{rng.choice((11, 12, 13))}.{rng.randint(1, 9)}, pytest-8.{rng.randint(0, 3)}.{rng.randint(0, 4)}, pluggy-1.5.0",
            f"rootdir: {HOME}/src/{REPO}",
            "configfile: pyproject.toml",
            f"collected {n} items",
            "",
        ]
        body = []
        for _ in range(max(1, n // 25)):
            mod = rng.choice(MODULES)
            body.append(
                f"tests/test_{mod}.py "
                + "".join(rng.choices(".....F" if failed else ".", k=rng.randint(5, 60)))
                + f" [{rng.randint(1, 99):>3}%]"
            )
        tail = []
        for _ in range(failed):
            tail += ["", f"___________________ test_{_ident(rng)} ___________________", _traceback(rng, lang)]
        tail.append(
            f"{'=' * 20} {failed} failed, {n - failed} passed in {rng.uniform(0.4, 90):.2f}s {'=' * 20}"
            if failed
            else f"{'=' * 25} {n} passed in {rng.uniform(0.4, 90):.2f}s {'=' * 25}"
        )
        return "\n".join(head + body + tail)
    if lang == "typescript":
        lines = [f" RUN  v{_lib(rng, 'typescript')[1]} {HOME}/src/{REPO}", ""]
        for _ in range(max(1, n // 20)):
            ok = rng.random() > 0.1 or not failed
            lines.append(
                f" {'✓' if ok else '×'} src/lib/{rng.choice(MODULES)}.test.ts ({rng.randint(1, 40)} tests) {rng.randint(3, 900)}ms"
            )
        if failed:
            lines += ["", " FAIL  src/lib/" + rng.choice(MODULES) + ".test.ts > " + _camel(rng), _traceback(rng, lang)]
        lines += [
            "",
            f" Test Files  {failed} failed | {n // 20} passed",
            f"      Tests  {failed} failed | {n} passed",
            f"   Duration  {rng.uniform(1, 40):.2f}s",
        ]
        return "\n".join(lines)
    lines = [f"   Compiling {_lib(rng, 'rust')[0]} v{_lib(rng, 'rust')[1]}" for _ in range(rng.randint(3, 30))]
    lines += [
        f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {rng.uniform(1, 120):.2f}s",
        f"     Running unittests src/lib.rs (target/debug/deps/{REPO}-{_hex(rng, 16)})",
        "",
        f"running {n} tests",
    ]
    lines += [
        f"test {rng.choice(MODULES)}::tests::{_ident(rng)} ... {'ok' if rng.random() > 0.05 or not failed else 'FAILED'}"
        for _ in range(min(n, 200))
    ]
    if failed:
        lines += ["", "failures:", "", _traceback(rng, "rust")]
    lines.append(
        f"\ntest result: {'FAILED' if failed else 'ok'}. {n - failed} passed; {failed} failed; 0 ignored; finished in {rng.uniform(0.1, 30):.2f}s"
    )
    return "\n".join(lines)


def _install_log(rng: random.Random, lang: str) -> str:
    if lang == "python":
        lines = [
            f"Collecting {n}=={v}\n  Downloading {n.replace('.', '_')}-{v}-py3-none-any.whl ({rng.randint(20, 4000)} kB)"
            for n, v in (_lib(rng, "python") for _ in range(rng.randint(5, 60)))
        ]
        lines.append(
            "Successfully installed " + " ".join(f"{n}-{v}" for n, v in (_lib(rng, "python") for _ in range(12)))
        )
        return "\n".join(lines)
    if lang == "typescript":
        lines = [
            f"Progress: resolved {i * 37}, reused {i * 35}, downloaded {i * 2}, added {i * 30}"
            for i in range(1, rng.randint(10, 80))
        ]
        lines += [f"+ {n} {v}" for n, v in (_lib(rng, "typescript") for _ in range(rng.randint(4, 20)))]
        lines.append(f"Done in {rng.uniform(2, 60):.1f}s using pnpm v9.{rng.randint(0, 12)}.{rng.randint(0, 5)}")
        return "\n".join(lines)
    return "\n".join(f"  Downloaded {n} v{v}" for n, v in (_lib(rng, "rust") for _ in range(rng.randint(10, 80))))


def _git_log(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(5, 60)):
        who = rng.choice(PEOPLE)
        out += [
            f"commit {_hex(rng, 40)}",
            f"Author: {who.full_name} <{who.email}>",
            f"Date:   {rng.choice(('Mon', 'Tue', 'Wed', 'Thu', 'Fri'))} {rng.choice(('Mar', 'Apr', 'May', 'Jun'))} {rng.randint(1, 28)} {rng.randint(8, 22)}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} 2026 +0200",
            "",
            f"    {rng.choice(VERBS).capitalize()} {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} handling in {rng.choice(MODULES)}",
            "",
        ]
    return "\n".join(out)


def _git_diff(rng: random.Random, lang: str) -> str:
    out = []
    for _ in range(rng.randint(1, 6)):
        mod = rng.choice(MODULES)
        path = f"src/{mod}.{EXT[lang]}"
        out += [
            f"diff --git a/{path} b/{path}",
            f"index {_hex(rng, 7)}..{_hex(rng, 7)} 100644",
            f"--- a/{path}",
            f"+++ b/{path}",
        ]
        for _ in range(rng.randint(1, 5)):
            start = rng.randint(1, 800)
            body = source_code(rng, lang, 1).split("\n")[: rng.randint(4, 20)]
            out.append(f"@@ -{start},{len(body)} +{start},{len(body) + 1} @@")
            out += [rng.choice((" ", " ", " ", "-", "+")) + line for line in body]
    return "\n".join(out)


def _grep(rng: random.Random, lang: str) -> str:
    word = rng.choice(NOUNS)
    return "\n".join(
        f"src/{rng.choice(MODULES)}.{EXT[lang]}:{rng.randint(1, 900)}:    {word} = {_ident(rng)}({rng.choice(NOUNS)})"
        for _ in range(rng.randint(3, 120))
    )


def _ls(rng: random.Random) -> str:
    lines = [f"total {rng.randint(8, 400)}"]
    for _ in range(rng.randint(5, 50)):
        d = rng.random() < 0.3
        lines.append(
            f"{'drwxr-xr-x' if d else '-rw-r--r--'}  1 {USER}  staff  {rng.randint(64, 90000):>6} "
            f"{rng.choice(('Mar', 'Apr', 'May'))} {rng.randint(1, 28):>2} {rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} "
            f"{rng.choice(MODULES)}{'' if d else '.' + rng.choice(('py', 'ts', 'md', 'json', 'toml', 'lock'))}"
        )
    return "\n".join(lines)


def _json_blob(rng: random.Random) -> str:
    if rng.random() < 0.5:
        issues = [
            {
                "number": rng.randint(100, 9000),
                "title": f"{rng.choice(VERBS).capitalize()} fails on {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}",
                "state": rng.choice(("open", "closed")),
                "user": {"login": rng.choice(PEOPLE).user, "id": rng.randint(10**5, 10**8)},
                "labels": [{"name": rng.choice(("bug", "perf", "ingest", "good first issue"))}],
                "created_at": f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}T{rng.randint(10, 23)}:{rng.randint(10, 59)}:00Z",
                "body": f"Seen with {_lib(rng, 'python')[0]} on {rng.choice(PRIVATE_HOSTS)}. "
                + _traceback(rng, "python")[:400],
                "node_id": "I_kwDO" + _hex(rng, 14),
                "comments": rng.randint(0, 40),
            }
            for _ in range(rng.randint(2, 30))
        ]
        return json.dumps(issues, indent=2, ensure_ascii=False)
    pkg = {
        "name": rng.choice(PROJECTS).name,
        "version": f"{rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        "private": True,
        "type": "module",
        "scripts": {"dev": "vite", "build": "tsc -b && vite build", "test": "vitest run", "lint": "eslint ."},
        "dependencies": {n: "^" + v for n, v in (_lib(rng, "typescript") for _ in range(rng.randint(3, 12)))},
        "devDependencies": {n: "^" + v for n, v in (_lib(rng, "typescript") for _ in range(rng.randint(3, 12)))},
        "author": f"{rng.choice(PEOPLE).full_name} <{EMAIL}>",
    }
    return json.dumps(pkg, indent=2)


def _env_file(rng: random.Random, secrets: SecretMaker) -> str:
    lines = [
        f"# local settings for {REPO} — do not commit",
        f"APP_ENV={rng.choice(('dev', 'staging'))}",
        f"DATABASE_HOST={rng.choice(PRIVATE_ENDPOINTS)}",
        f"ADMIN_EMAIL={EMAIL}",
        f"DATA_DIR={HOME}/data/{REPO}",
        f"LOG_LEVEL={rng.choice(('debug', 'info'))}",
    ]
    for _ in range(rng.randint(1, 3)):
        line = secrets.line(rng, rng.choice(PRIVATE_HOSTS))
        if line:
            lines.append(line)
    return "\n".join(lines)


def _docker_ps(rng: random.Random) -> str:
    lines = ["CONTAINER ID   IMAGE                         STATUS          PORTS                    NAMES"]
    for _ in range(rng.randint(2, 15)):
        lines.append(
            f"{_hex(rng, 12)}   registry.corp/{rng.choice(MODULES)}:{rng.randint(1, 40)}.{rng.randint(0, 9)}   "
            f"Up {rng.randint(1, 59)} minutes   10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}:{rng.randint(3000, 9000)}->80/tcp   "
            f"{REPO}-{rng.choice(MODULES)}-1"
        )
    return "\n".join(lines)


class ToolOutputPool:
    """Pre-built tool outputs, keyed by kind (some per language)."""

    def __init__(self, rng: random.Random, secrets: SecretMaker, per_kind: int) -> None:
        self.blobs: dict[str, list[str]] = {}
        for lang in LANGS:
            # Long-tailed file sizes: most a few KB, some tens of KB.
            sources = [source_code(rng, lang, max(1, int(rng.lognormvariate(1.8, 0.9)))) for _ in range(per_kind)]
            self.blobs[f"source:{lang}"] = sources
            self.blobs[f"numbered:{lang}"] = [_numbered(s) for s in sources]
            self.blobs[f"test:{lang}"] = [_test_run(rng, lang) for _ in range(per_kind)]
            self.blobs[f"install:{lang}"] = [_install_log(rng, lang) for _ in range(per_kind // 3 + 1)]
            self.blobs[f"diff:{lang}"] = [_git_diff(rng, lang) for _ in range(per_kind // 2 + 1)]
            self.blobs[f"grep:{lang}"] = [_grep(rng, lang) for _ in range(per_kind // 2 + 1)]
            self.blobs[f"trace:{lang}"] = [_traceback(rng, lang) for _ in range(per_kind // 2 + 1)]
        self.blobs["git_log"] = [_git_log(rng) for _ in range(per_kind // 3 + 1)]
        self.blobs["ls"] = [_ls(rng) for _ in range(per_kind // 3 + 1)]
        self.blobs["json"] = [_json_blob(rng) for _ in range(per_kind // 2 + 1)]
        self.blobs["env"] = [_env_file(rng, secrets) for _ in range(per_kind // 4 + 1)]
        self.blobs["docker"] = [_docker_ps(rng) for _ in range(per_kind // 4 + 1)]

    def pick(self, rng: random.Random, kind: str) -> str:
        return rng.choice(self.blobs[kind])


# --------------------------------------------------------------------------- prose


def _fence(lang: str, body: str) -> str:
    return f"```{lang}\n{body}\n```"


class Content:
    """Everything one corpus says, built from one seed."""

    def __init__(self, seed: int, secret_mode: str, shape: Shape = DEFAULT) -> None:
        self.shape = shape
        self.secrets = SecretMaker(secret_mode)
        self.pool = ToolOutputPool(random.Random(f"{seed}/pool"), self.secrets, per_kind=60)

    # ------------------------------------------------------------ small pieces

    def _private_bit(self, rng: random.Random, ctx: SessionContext) -> str:
        r = rng.random()
        if r < 0.3:
            return f"{ctx.cwd}/{_rel_path(rng, ctx.project)}"
        if r < 0.5:
            return ctx.person.email if rng.random() < 0.6 else rng.choice(COLLEAGUES)
        if r < 0.8:
            return rng.choice(PRIVATE_HOSTS)
        return f"http://{rng.choice(PRIVATE_ENDPOINTS)}/healthz"

    def _maybe_secret(self, rng: random.Random, p: float) -> str:
        if rng.random() >= p:
            return ""
        line = self.secrets.line(rng, rng.choice(PRIVATE_HOSTS))
        return (
            ""
            if line is None
            else f"\n\n{rng.choice(('My env has:', 'Current config:', 'For reference:'))}\n{_fence('', line)}"
        )

    def _code(self, rng: random.Random, lang: str, functions: int = 1) -> str:
        return _fence(lang, source_code(rng, lang, functions))

    def _zh(self, rng: random.Random, ctx: SessionContext) -> bool:
        """Whether the session's user writes Chinese; drawn once, and only by shapes that have such users."""
        if not self.shape.zh_p:
            return False
        if ctx.zh is None:
            ctx.zh = rng.random() < self.shape.zh_p
        return ctx.zh

    def _slots(
        self, rng: random.Random, ctx: SessionContext, **extra: Callable[[], str]
    ) -> dict[str, Callable[[], str]]:
        """The English material of a `corpus.zh` template, each slot drawn when the template uses it."""
        p, lang = ctx.project, ctx.project.lang
        lib, v = _lib(rng, lang)
        return {
            "path": lambda: _rel_path(rng, p),
            "test_path": lambda: _rel_path(rng, p, test=True),
            "cmd": lambda: _test_command(rng, p),
            "ident": lambda: _ident(rng),
            "lib": lambda: lib,
            "v": lambda: v,
            "v2": lambda: rng.choice(dict(LIBRARIES[lang])[lib]),
            "err": lambda: rng.choice(ERRORS[lang]),
            "err_short": lambda: rng.choice(ERRORS[lang])[:80],
            "trace": lambda: self.personalise(self.pool.pick(rng, f"trace:{lang}"), ctx),
            "code": lambda: self._code(rng, lang),
            "host": lambda: rng.choice(PRIVATE_HOSTS),
            "logdir": lambda: f"{ctx.person.home}/logs/{p.name}/",
            "pkg": lambda: p.package,
            "opt": lambda: f"{rng.choice(VERBS)}-{rng.choice(NOUNS)}",
            "n": lambda: str(rng.randint(2, 900)),
            "sha": lambda: _hex(rng, 7),
            "url": lambda: rng.choice(PUBLIC_URLS),
            "colleague": lambda: rng.choice(COLLEAGUES),
            "exc": lambda: rng.choice(("ValueError", "KeyError", "TimeoutError", "OSError", "RuntimeError")),
            "key": lambda: f"{rng.choice(NOUNS)}.{rng.choice(NOUNS)}",
            "en": lambda: rng.choice(NOUNS),
            **extra,
        }

    def _typeset(self, rng: random.Random, text: str) -> str:
        dash, curly, dots = self.shape.typography
        return zh.typeset(rng, text, dash, curly, dots) if dash or curly or dots else text

    def personalise(self, text: str, ctx: SessionContext) -> str:
        if "@@" not in text:
            return text
        return (
            text.replace(HOME, ctx.person.home)
            .replace(USER, ctx.person.user)
            .replace(EMAIL, ctx.person.email)
            .replace(REPO, ctx.project.name)
        )

    # ------------------------------------------------------------ user prompts

    def prompt(self, rng: random.Random, ctx: SessionContext) -> str:
        if self._zh(rng, ctx):
            return zh.prompt(rng, self._slots(rng, ctx)) + self._maybe_secret(rng, 0.05)
        p, lang = ctx.project, ctx.project.lang
        path = _rel_path(rng, p)
        lib, v = _lib(rng, lang)
        cmd = _test_command(rng, p)
        r = rng.random()
        if r < 0.07:
            return rng.choice(
                ("continue", "yes, go ahead", "run the tests again", "looks good, commit it", "ok", "try again")
            )
        if r < 0.35:
            text = (
                f"After upgrading {lib} to {v}, `{cmd}` fails with:\n\n"
                f"{_fence('', self.personalise(self.pool.pick(rng, f'trace:{lang}'), ctx))}\n\n"
                f"The failing code is in `{path}`. It worked on {rng.choice(('main', 'the release branch', 'v' + v))} "
                f"{rng.choice(('yesterday', 'last week', 'before the merge'))}. Can you find the cause and fix it without "
                f"changing the public API?"
            )
        elif r < 0.55:
            text = (
                f"Add a `--{rng.choice(VERBS)}-{rng.choice(NOUNS)}` option to `{p.package} {rng.choice(VERBS)}` that "
                f"{VERB_FORMS[rng.choice(VERBS)][0]} the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}s before writing. It should respect "
                f"`{rng.choice(NOUNS)}.{rng.choice(NOUNS)}` in the config file and default to off. Write tests next to "
                f"`{_rel_path(rng, p, test=True)}`."
            )
        elif r < 0.7:
            text = (
                f"Why does `{cmd}` take {rng.randint(8, 300)} s on {rng.choice(('my laptop', 'CI', 'the build box'))} "
                f"({self._private_bit(rng, ctx)})? Profile it and tell me where the time goes; I suspect "
                f"`{_ident(rng)}` in `{path}`."
            )
        elif r < 0.82:
            text = (
                f"Here is the function I'm unsure about:\n\n{self._code(rng, lang)}\n\nIs the error handling right? "
                f"{rng.choice(('Refactor it if not.', 'Keep the signature.', 'Explain before changing anything.'))}"
            )
        elif r < 0.92:
            text = (
                f"The deploy to {rng.choice(PRIVATE_HOSTS)} failed again. Logs are under {ctx.person.home}/logs/{p.name}/ "
                f"and {rng.choice(COLLEAGUES)} says it started after {_hex(rng, 7)}. Check what changed in "
                f"`{path}` and `{_rel_path(rng, p)}`."
            )
        else:
            text = (
                f"Review the open PR for {rng.choice(PUBLIC_URLS)}-style handling of {rng.choice(NOUNS)}s: does "
                f"`{_ident(rng)}` still hold with {lib} {v}? Reply to {ctx.person.email} with a summary too."
            )
        return text + self._maybe_secret(rng, 0.05)

    # ------------------------------------------------------------ assistant prose

    def commentary(self, rng: random.Random, ctx: SessionContext, tool: ToolCall | None) -> str:
        if self.shape.zh_p:
            target = "" if tool is None else tool.args.get("path") or tool.args.get("command") or ""
            if self._zh(rng, ctx):
                return zh.commentary(rng, self._slots(rng, ctx, target=lambda: target or ctx.cwd))
            return self._typeset(rng, self._commentary(rng, tool))
        return self._commentary(rng, tool)

    def _commentary(self, rng: random.Random, tool: ToolCall | None) -> str:
        if tool is None or rng.random() < 0.3:
            return rng.choice(
                (
                    "Let me look at the code first.",
                    "I'll check the tests before changing anything.",
                    "Checking how this is wired.",
                    "Now the config loader.",
                )
            )
        target = tool.args.get("path") or tool.args.get("command") or tool.args.get("pattern") or ""
        return rng.choice(
            (
                f"I'll start by reading `{target}`.",
                f"Running `{target}` to reproduce.",
                f"Searching for `{target}` across the repo.",
                f"Next I'll update `{target}`.",
            )
        )

    def final(self, rng: random.Random, ctx: SessionContext) -> str:
        if not self.shape.zh_p:
            return self._final(rng, ctx)
        status, flow, aside = self.shape.extras
        slots = self._slots(rng, ctx)
        if self._zh(rng, ctx):
            parts = zh.final(rng, slots)
            if rng.random() < 0.5:
                parts.insert(2, "核心改动：\n\n" + self._code(rng, ctx.project.lang))
            if rng.random() < status:
                parts.append(zh.status(rng, slots))
            return "\n\n".join(parts) + self._maybe_secret(rng, 0.02)
        parts = [self._final(rng, ctx)]
        if rng.random() < flow:
            parts.append(zh.flow(rng, slots))
        if rng.random() < aside:
            parts.append(zh.aside(rng, slots))
        if rng.random() < status:
            parts.append(zh.status(rng, slots))
        return self._typeset(rng, "\n\n".join(parts))

    def _final(self, rng: random.Random, ctx: SessionContext) -> str:
        p, lang = ctx.project, ctx.project.lang
        lib, v = _lib(rng, lang)
        changes = "\n".join(
            f"- `{_rel_path(rng, p)}`: {rng.choice(VERBS)} the {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)} "
            f"{rng.choice(('before the lock is taken', 'once per batch', 'only when the cache is stale', 'lazily'))}"
            for _ in range(rng.randint(1, 5))
        )
        parts = [
            rng.choice(
                (
                    f"The failure comes from `{_ident(rng)}`: it assumes the {rng.choice(NOUNS)} is always set, which stopped being "
                    f"true with {lib} {v}.",
                    f"Done. The slow path was `{_ident(rng)}` re-reading every {rng.choice(NOUNS)} on each call "
                    f"({rng.randint(2, 40)}× per run); it now caches per {rng.choice(NOUNS)}.",
                    f"I found two problems, one in `{_rel_path(rng, p)}` and one in the test fixture.",
                    f"Summary of the change for {lib} {v} compatibility:",
                )
            ),
            "",
            "Changes:",
            changes,
        ]
        if rng.random() < 0.5:
            parts += ["", "The core of the fix:", "", self._code(rng, lang)]
        if rng.random() < 0.6:
            cmd = _test_command(rng, p)
            parts += [
                "",
                f"Verified with `{cmd}`: {rng.randint(20, 900)} passed. See {rng.choice(PUBLIC_URLS)} for the upstream note.",
            ]
        if rng.random() < 0.15:
            parts += ["", f"Note: the logs mention {self._private_bit(rng, ctx)}; I did not touch that host."]
        return "\n".join(parts) + self._maybe_secret(rng, 0.02)

    def thinking(self, rng: random.Random, ctx: SessionContext) -> str:
        p = ctx.project
        sentences = []
        # Models think in English for Chinese users too, with a Chinese sentence now and then.
        slots = self._slots(rng, ctx) if self._zh(rng, ctx) else None
        for _ in range(rng.randint(*self.shape.thinking_sentences)):
            if slots is not None and rng.random() < 0.15:
                sentences.append(zh.thinking_sentence(rng, slots))
                continue
            sentences.append(
                rng.choice(
                    (
                        f"The user wants the {rng.choice(NOUNS)} {VERB_FORMS[rng.choice(VERBS)][1]} before the write.",
                        f"`{_ident(rng)}` is called from `{_rel_path(rng, p)}` and from the CLI.",
                        f"If the {rng.choice(NOUNS)} is None here we raise, but the caller catches {rng.choice(ERRORS[p.lang])[:40]!r}.",
                        f"Maybe the cache key misses the {rng.choice(NOUNS)}; that would explain the stale {rng.choice(NOUNS)}s.",
                        f"Let me check the tests in `{_rel_path(rng, p, test=True)}` first.",
                        f"The lock is held across the {rng.choice(VERBS)} call, which is slow on {rng.choice(PRIVATE_HOSTS)}.",
                        "I should not change the public signature.",
                        f"Version {_lib(rng, p.lang)[1]} changed the default; check the changelog.",
                    )
                )
            )
        return self._typeset(rng, " ".join(sentences))

    def control(self, rng: random.Random) -> tuple[str, str]:
        """Agent runtime chatter that must never become knowledge."""
        return rng.choice(
            (
                ("assistant", f"Still context gathering — the agent is reading src/{rng.choice(MODULES)}.py."),
                ("assistant", "The agent is still reviewing the diff. No action needed."),
                ("assistant", f"_thinking:_ {rng.choice(NOUNS)} first, then the {rng.choice(NOUNS)}"),
                ("user", f"[irc] <{rng.choice(PEOPLE).user}> build {rng.randint(100, 999)} is green, go ahead"),
                ("user", f"[budget notice] {rng.randint(10, 90)}% of the context window used"),
                ("assistant", "(No response)"),
                ("user", "## Session update\nThe primary agent edited 2 files since the last review."),
            )
        )

    # ------------------------------------------------------------ tools

    def tool_call(self, rng: random.Random, ctx: SessionContext) -> ToolCall:
        p, lang = ctx.project, ctx.project.lang
        start = ctx.tick(rng.uniform(0.5, 20))
        r = rng.random()
        is_error = False
        read, bash, grep, edit, write = self.shape.tools
        if r < read:
            path = _rel_path(rng, p)
            if rng.random() < 0.06:
                path, out = ".env", self.pool.pick(rng, "env")
            else:
                out = self.pool.pick(rng, f"numbered:{lang}")
            kind, args = "read", {"path": path}
        elif r < bash:
            q = rng.random()
            mod, verb, noun = rng.choice(MODULES), rng.choice(VERBS), rng.choice(NOUNS)
            if q < 0.45:
                cmd, out = (
                    rng.choice(TEST_COMMANDS[lang]).format(mod=mod, verb=verb, noun=noun, pkg=p.package),
                    self.pool.pick(rng, f"test:{lang}"),
                )
                is_error = " failed" in out or "FAILED" in out
            elif q < 0.55:
                cmd = {"python": "uv pip install -e '.[test]'", "typescript": "pnpm install", "rust": "cargo fetch"}[
                    lang
                ]
                out = self.pool.pick(rng, f"install:{lang}")
            elif q < 0.65:
                cmd, out = "git log --stat -n 20", self.pool.pick(rng, "git_log")
            elif q < 0.78:
                cmd, out = "git diff", self.pool.pick(rng, f"diff:{lang}")
            elif q < 0.85:
                cmd, out = f"ls -la {ctx.cwd}/src", self.pool.pick(rng, "ls")
            elif q < 0.93:
                cmd, out = "gh api repos/acme/" + p.name + "/issues", self.pool.pick(rng, "json")
            else:
                cmd, out = "docker ps", self.pool.pick(rng, "docker")
            kind, args = "bash", {"command": cmd}
        elif r < grep:
            kind, args = "grep", {"pattern": rng.choice(NOUNS) + r"\b", "path": "src"}
            out = self.pool.pick(rng, f"grep:{lang}")
        elif r < edit:
            old, new = source_code(rng, lang, 1).split("\n", 1)[-1], source_code(rng, lang, 1).split("\n", 1)[-1]
            kind, args = "edit", {"path": _rel_path(rng, p), "old": old[:1500], "new": new[:1500]}
            out = f"Applied 1 edit to {args['path']}" if rng.random() < 0.85 else "Error: old text not found in file"
            is_error = out.startswith("Error")
        elif r < write:
            kind, args = (
                "write",
                {"path": _rel_path(rng, p, test=True), "content": self.pool.pick(rng, f"source:{lang}")},
            )
            out = f"Wrote {len(args['content'])} bytes to {args['path']}"
        else:
            kind, args = "glob", {"pattern": f"src/**/*.{EXT[lang]}"}
            out = "\n".join(_rel_path(rng, p) for _ in range(rng.randint(3, 40)))
        if ctx.heavy and kind in ("read", "bash") and rng.random() < 0.5:
            # Heavy sessions dump whole trees / long logs into the context.
            out = "\n".join([out] + [self.pool.pick(rng, f"numbered:{lang}") for _ in range(rng.randint(2, 12))])
        if rng.random() < 0.04:
            secret = self.secrets.line(rng, rng.choice(PRIVATE_HOSTS))
            if secret:
                cut = out.find("\n", len(out) // 2)
                out = out + "\n" + secret if cut < 0 else out[:cut] + "\n" + secret + out[cut:]
        if self.shape.output_cap:
            out = out[: self.shape.output_cap]
        args = {k: self.personalise(v, ctx) for k, v in args.items()}
        end = ctx.tick(rng.uniform(0.1, 30))
        return ToolCall(kind, args, self.personalise(out, ctx), is_error, start, end)

    # ------------------------------------------------------------ a turn

    def turn(self, rng: random.Random, ctx: SessionContext) -> Turn:
        control = tuple(self.control(rng) for _ in range(1 if rng.random() < 0.05 else 0))
        prompt_ms = ctx.tick(rng.uniform(20, 900))
        prompt = self.prompt(rng, ctx)
        steps = []
        shape = self.shape
        for _ in range(rng.choice(shape.steps)):
            at = ctx.tick(rng.uniform(1, 30))
            tools = tuple(self.tool_call(rng, ctx) for _ in range(rng.choice((1, 1, 1, 2, 3))))
            thinking = self.thinking(rng, ctx) if rng.random() < shape.thinking_p else ""
            text = self.commentary(rng, ctx, tools[0]) if rng.random() < shape.text_p else ""
            steps.append(Step(thinking, text, tools, at))
        final_ms = ctx.tick(rng.uniform(2, 60))
        final = self.final(rng, ctx)
        # Only shapes with final thinking draw for it: the default stream stays as it was.
        final_thinking = (
            self.thinking(rng, ctx) if shape.final_thinking_p and rng.random() < shape.final_thinking_p else ""
        )
        turn = Turn(prompt, prompt_ms, tuple(steps), final, final_ms, control, final_thinking)
        ctx.turns.append(turn)
        return turn

    def system_prompt(self, rng: random.Random, ctx: SessionContext) -> str:
        rules = "\n".join(
            f"- {rng.choice(VERBS).capitalize()} {rng.choice(NOUNS)}s {rng.choice(('carefully', 'only when asked', 'before editing', 'with tests'))}."
            for _ in range(rng.randint(30, 120))
        )
        return (
            f"You are a coding agent working in {ctx.cwd} on {ctx.person.os}. Use the tools to read and edit files.\n"
            f"# Rules\n{rules}\n# Environment\nShell: /bin/bash\nDate: 2026\n"
        )
