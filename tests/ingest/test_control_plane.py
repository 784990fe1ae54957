from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbtools.ingest.control_plane import SIGNAL_CJK, is_internal_text, technical_signals

INTERNAL = [
    "Silent mode",
    "I'll wait for CI",
    "-> foo(bar) => baz",
    "No action needed here",
    "   [skill-prompt] x",
    "[user] // TODO: handle read( later",
    "_thinking:_ what next",
    "[user] _thinking_: stale internal transcript",
    "**agent**: ¶think: plan",
    "Complete the assignment below, thoroughly: do it",
    "Resume prior conversation. Earlier work. Archived transcript scopes: a, b",
    "## Session update\nall good",
    "[irc] hello",
    "call:functions.bash:call_1{",
    "// step one\n  -> read(file.ts)",
    "work [in progress — more steps follow]",
    "Parent IRC message: ping",
    "Current interruptible wait: 30s",
    "[budget notice] 10% left",
    "[async-result] job 3 done",
    "(No response)",
    "The agent is still reading the config",
    "Nothing to critique yet",
    "Waiting for the agent to finish",
    "In the transcript `_thinking_` is a real reasoning block",
    "text\n**assistant**:\n_thinking:_ hidden",
    '[assistant] {"severity": "low", "note": "x"} _thinking later',
]

KEPT = [
    "Silently ignore the warning",
    "// TODO: handle read( later",
    "A legitimate example may contain → read(file)",
    "A legitimate article may quote the _thinking:_ marker",
    "Keep this answer",
    "Why does the build fail?",
    "We should wait for the release before upgrading.",
]


@pytest.mark.parametrize("text", INTERNAL)
def test_control_plane_text_is_dropped(text: str) -> None:
    assert is_internal_text(text)


@pytest.mark.parametrize("text", KEPT)
def test_prose_is_kept(text: str) -> None:
    assert not is_internal_text(text)


def test_prefix_rules_only_look_at_the_start() -> None:
    assert not is_internal_text("x" * 800 + " _thinking:_ late")


@pytest.mark.parametrize("text", ["use the latest release", "a capital idea", "the prefix is wrong", "contest"])
def test_technical_signal_needs_whole_words(text: str) -> None:
    assert not technical_signals(text)


@pytest.mark.parametrize("text", ["the tests failed", "Fixed the Docker config", "调用 API 失败", "构建错误"])
def test_technical_signal_found(text: str) -> None:
    assert technical_signals(text)


def test_signals_are_counted_once_each() -> None:
    assert technical_signals("Error: the error again, and a git error") == {"error", "git"}


def test_any_leading_whitespace_is_skipped_before_the_prefix_rules() -> None:
    for space in (" ", "\t\n", "\u00a0", "\u2003", "\x1c", "\u3000"):
        assert is_internal_text(space + "[irc] hello")
    assert not is_internal_text("\u200b[irc] hello")  # a zero-width space is not whitespace


def test_chinese_signal_terms_are_found_where_they_overlap() -> None:
    # 架构建 holds 架构 and 构建; one left-to-right pass of non-overlapping matches sees only the first.
    assert technical_signals("新的架构建好了") == {"架构", "构建"}
    assert technical_signals("数据库和知识库 — 前端后端") == {"数据库", "知识库", "前端", "后端"}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(sorted(set("".join(SIGNAL_CJK))) + list("的了 a—é")), max_size=40))
def test_chinese_signal_terms_are_every_term_the_text_contains(text: str) -> None:
    assert technical_signals(text, set()) == {term for term in SIGNAL_CJK if term in text and not text.isascii()}
