"""The redaction engine: keyword prefilter → spans → merge → one replacement per span.

One pass of the keyword index tells which rules can match at all (a rule whose keywords
most texts hold for another reason also has a gate, a regex every match holds); those
rules look at the same text (never at another rule's output), so the order of rules
cannot make one placeholder swallow another, and a secret is replaced exactly once. Overlapping
hits merge into one span; the placeholder is that of the longest hit in it (the
earliest rule on a tie). When a placeholder lands next to something other than a
plain delimiter, the output is checked again, so that redacting it twice changes
nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from kbtools.config import RedactionConfig
from kbtools.redact.checks import Candidate, distinctive
from kbtools.redact.rules import RULES, Rule

# A line holding this marks a deliberate example: find_secrets (lint check 16) skips
# hits that start on it. Redaction itself never honours it — transcripts are not curated.
ALLOW_PRAGMA = "kb:allow-secret"
_MAX_PASSES = 4
_PLANS_KEPT = 4096  # distinct keyword sets remembered (a first run over 185 MB meets a few hundred)


class Redacted(NamedTuple):
    text: str
    labels: tuple[str, ...]  # placeholders applied, each once, in first-hit order (text order)


class SecretHit(NamedTuple):
    start: int
    end: int
    kind: str  # the rule id, e.g. "github-token"; never the secret


class Span(NamedTuple):
    start: int
    end: int
    rule: int  # index into the redactor's rules
    quote: str = ""  # wrap the placeholder in this quote (an unquoted value under a JSON key)


# One rule of a plan: its index, the rule, those of its keywords the text holds, its gate (compiled).
Step = tuple[int, Rule, tuple[str, ...], re.Pattern[str] | None]


class KeywordIndex:
    """Which keywords occur in a (lower-cased) text: the prefilter, one pass over the text.

    Looking for 80 keywords one by one scans the text 80 times and was half of all redaction
    time; an Aho-Corasick automaton (``ahocorasick-rs``) finds them all in one pass. Single
    characters are left to ``in`` (a memchr). Without the package the keywords are looked
    for one by one — same answer, slower.
    """

    def __init__(self, keywords: Iterable[str]) -> None:
        words = sorted(set(keywords))
        self.single = tuple(k for k in words if len(k) == 1)
        self.multi = tuple(k for k in words if len(k) > 1)
        self._automaton = _automaton(self.multi) if self.multi else None

    def present(self, lower: str) -> frozenset[str]:
        if self._automaton is not None:  # the keywords themselves, not indexes to look up one by one
            found: list[str] = self._automaton.find_matches_as_strings(lower, True)
        else:
            found = [k for k in self.multi if k in lower]
        for k in self.single:
            if k in lower:
                found.append(k)
        return frozenset(found)


def _automaton(words: tuple[str, ...]) -> Any:
    try:
        import ahocorasick_rs
    except ImportError:  # pragma: no cover - the package is a dependency; this keeps a bare install working
        return None
    # A DFA: twice as fast a scan as the default NFA on transcript prose (38 vs 73 ms over the
    # 8.3 MB of messages a first run redacts), for about 1 ms to build and 1 MB.
    # With the patterns stored, a match comes back as the keyword's own string (a third less time
    # than an index per match turned into the keyword in Python).
    return ahocorasick_rs.AhoCorasick(
        list(words),
        matchkind=ahocorasick_rs.MatchKind.Standard,
        implementation=ahocorasick_rs.Implementation.DFA,
        store_patterns=True,
    )


class Redactor:
    """Redacts with ``rules`` (default: all) under ``config`` (public path prefixes, allow-list).

    Cheap to build and picklable (it pickles as its config), so worker processes get their own.
    """

    def __init__(self, config: RedactionConfig | None = None, *, rules: Iterable[Rule] | None = None) -> None:
        self.config = config if config is not None else RedactionConfig()
        self.rules: tuple[Rule, ...] = RULES if rules is None else tuple(rules)
        self._allow = tuple(a for a in self.config.allow if a)
        self._secret_rules = tuple(i for i, rule in enumerate(self.rules) if rule.is_secret)
        config = self.config
        # A rule's keywords, with those its configuration adds (the configured names and domains):
        # a rule with configured keywords and none to look for never runs.
        keywords = [
            rule.keywords + (rule.config_keywords(config) if rule.config_keywords is not None else ())
            for rule in self.rules
        ]
        requires = {k for rule in self.rules for k in rule.requires}  # looked for, but wake nothing
        self._keywords = KeywordIndex({k for words in keywords for k in words} | requires)
        # keyword → the rules it wakes; rules without keywords always run. With a few hundred
        # rules, going from the keywords present to their rules beats asking every rule.
        self._always = frozenset(
            i for i, rule in enumerate(self.rules) if not keywords[i] and rule.config_keywords is None
        )
        # Rules that a check of the text wakes as well (what can change while a process runs).
        self._woken_by = tuple((i, rule.woken_by) for i, rule in enumerate(self.rules) if rule.woken_by is not None)
        by_keyword: dict[str, set[int]] = {k: set() for k in requires}
        for i, words in enumerate(keywords):
            for k in words:
                by_keyword.setdefault(k, set()).add(i)
        self._by_keyword = {k: frozenset(v) for k, v in by_keyword.items()}
        # (keywords present, rules woken by checks, secrets only) → the rules to run, in order.
        self._plans: dict[tuple[frozenset[str], tuple[int, ...], bool], tuple[Step, ...]] = {}
        # What a plan needs of each rule: its step with all its keywords, what it requires.
        self._steps = tuple(
            ((i, rule, rule.keywords, rule.gate_regex), frozenset(rule.requires)) for i, rule in enumerate(self.rules)
        )

    def __reduce__(self) -> tuple[object, ...]:
        custom = None if self.rules is RULES else self.rules
        return (_rebuild, (self.config, custom))

    # -- public -----------------------------------------------------------------

    def redact(self, text: str) -> Redacted:
        spans = self.spans(text)
        if not spans:
            return Redacted(text, ())
        labels: list[str] = []
        # A placeholder can open a boundary that was not there (`a@aa::1` → `<PRIVATE_EMAIL>::1`,
        # where `::1` now stands alone), so unless every placeholder sits between plain
        # delimiters the output is re-checked until nothing more is found: redacting it
        # again changes nothing (idempotence by construction).
        for _ in range(_MAX_PASSES):
            sealed = all(_sealed(text, span) for span in spans)
            text = self._replace(text, spans, labels)
            if sealed:
                break
            spans = self.spans(text)
            if not spans:
                break
        return Redacted(text, tuple(labels))

    def _replace(self, text: str, spans: list[Span], labels: list[str]) -> str:
        out: list[str] = []
        pos = 0
        for span in spans:
            placeholder = self.rules[span.rule].placeholder
            out.append(text[pos : span.start])
            out.append(f"{span.quote}{placeholder}{span.quote}")
            if placeholder not in labels:
                labels.append(placeholder)
            pos = span.end
        out.append(text[pos:])
        return "".join(out)

    def find_secrets(self, text: str) -> list[SecretHit]:
        """Credentials only (no identity, host or path rules); skips lines with the allow pragma."""
        hits = [SecretHit(s.start, s.end, self.rules[s.rule].id) for s in self.spans(text, secrets_only=True)]
        if hits and ALLOW_PRAGMA in text:
            hits = [h for h in hits if ALLOW_PRAGMA not in _line_at(text, h.start)]
        return hits

    def spans(self, text: str, *, secrets_only: bool = False) -> list[Span]:
        """Merged, non-overlapping spans in text order."""
        raw = self._raw_spans(text, secrets_only)
        if not raw:
            return []
        if self._allow:
            raw = [s for s in raw if not self._allowed(text, s)]
        if raw:
            raw.extend(self._other_occurrences(text, raw))
        return self._merge(raw) if raw else []

    def _other_occurrences(self, text: str, raw: list[Span]) -> list[Span]:
        """Once a value is known to be a secret, every other occurrence of it in the text is too
        (a password echoed in a log line, a token pasted twice)."""
        values: dict[str, int] = {}
        for span in raw:
            if self.rules[span.rule].is_secret and span.end - span.start >= _ECHO_MIN:
                value = text[span.start : span.end]
                if text.find(value, span.end) == -1 and text.find(value, 0, span.start + len(value) - 1) == -1:
                    continue  # the only occurrence
                if _echo_worthy(value):
                    values.setdefault(value, span.rule)
        if not values:
            return []
        taken = {(s.start, s.end) for s in raw}
        extra: list[Span] = []
        for value, rule in values.items():
            pos = text.find(value)
            while pos != -1:
                end = pos + len(value)
                if (pos, end) not in taken and _bounded(text, pos, end):
                    extra.append(Span(pos, end, rule))
                pos = text.find(value, end)
        return extra

    # -- internals --------------------------------------------------------------

    def _raw_spans(self, text: str, secrets_only: bool = False) -> list[Span]:
        lower = text.lower()
        present = self._keywords.present(lower)
        config = self.config
        woken: tuple[int, ...] = ()
        for i, check in self._woken_by:
            if check(lower, config):
                woken += (i,)
        plan = self._plan(present, woken, secrets_only)
        # Lower-casing can change the length of a few characters (`İ`); then keyword offsets
        # do not map onto the text, and anchored rules fall back to a full scan.
        aligned = lower if len(lower) == len(text) else None
        spans: list[Span] = []
        # An earlier rule already took this exact span (a token assigned to a secret name matches
        # several assignment rules): a later one would only lose the tie, so its check is skipped.
        taken: set[tuple[int, int]] = set()
        memo: StartsMemo = {}
        for index, rule, keywords, gate in plan:
            if gate is not None and gate.search(text) is None:
                continue  # the text holds nothing every match of the rule holds
            found = self._rule_spans(text, aligned, index, rule, taken, keywords, memo)
            if found:
                spans.extend(found)
                taken.update((span.start, span.end) for span in found)
        return spans

    def _plan(self, present: frozenset[str], woken: tuple[int, ...], secrets_only: bool) -> tuple[Step, ...]:
        """The rules to run, in rule order, each with its keywords that occur (cached: a first run
        over a store meets a few thousand sets of keywords, each worker its own, so building one
        is kept cheap too)."""
        key = (present, woken, secrets_only)
        plan = self._plans.get(key)
        if plan is None:
            wanted = set(self._always).union(woken)
            for keyword in present:
                wanted.update(self._by_keyword[keyword])
            if secrets_only:
                wanted.intersection_update(self._secret_rules)
            steps = self._steps
            built: list[Step] = []
            for i in sorted(wanted):
                step, required = steps[i]
                if required and not required <= present:
                    continue
                keywords = step[2]
                if len(keywords) > 1:
                    step = (i, step[1], tuple([k for k in keywords if k in present]), step[3])
                elif keywords and keywords[0] not in present:
                    step = (i, step[1], (), step[3])
                built.append(step)
            plan = tuple(built)
            if len(self._plans) >= _PLANS_KEPT:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _rule_spans(
        self,
        text: str,
        lower: str | None,
        index: int,
        rule: Rule,
        taken: set[tuple[int, int]] | None = None,
        keywords: tuple[str, ...] | None = None,
        memo: StartsMemo | None = None,
    ) -> list[Span]:
        config = self.config
        if rule.finder is not None:
            return [Span(start, end, index) for start, end in rule.finder(text, config) if end > start]
        regex = rule.regex
        assert regex is not None
        if rule.anchor is not None and lower is not None:
            matches: Iterable[re.Match[str]] = _anchored_matches(text, lower, rule, keywords, memo)
        else:
            matches = regex.finditer(text)
        spans: list[Span] = []
        groups, trim, accept = rule.groups, rule.trim, rule.accept
        for match in matches:
            start, end, group = match.start(), match.end(), None
            for name in groups:
                if match.start(name) >= 0:
                    start, end, group = match.start(name), match.end(name), name
                    break
            if trim:
                while end > start and text[end - 1] in trim:
                    end -= 1
            if end <= start:
                continue
            if taken and (start, end) in taken:
                continue
            if accept is not None and not accept(Candidate(match, start, end), config):
                continue
            quote = ""
            if rule.json_quote and group == "v_bare":
                # `"key": 12345` must stay JSON: the placeholder goes in the key's quotes.
                key_quote = match.group("kq")
                quote = key_quote if key_quote in ('"', '\\"') else ""
            spans.append(Span(start, end, index, quote))
        return spans

    def _allowed(self, text: str, span: Span) -> bool:
        """The hit lies inside an occurrence of an allow-listed literal."""
        for literal in self._allow:
            lo = max(0, span.end - len(literal))
            found = text.find(literal, lo, span.start + len(literal))
            while found != -1 and found <= span.start:
                if found + len(literal) >= span.end:
                    return True
                found = text.find(literal, found + 1, span.start + len(literal))
        return False

    def _merge(self, raw: list[Span]) -> list[Span]:
        raw.sort(key=lambda s: (s.start, -s.end, s.rule))
        merged: list[Span] = []
        group_start, group_end, best = raw[0].start, raw[0].end, raw[0]
        for span in raw[1:]:
            if span.start < group_end:  # overlap: one span, the longest hit names it
                group_end = max(group_end, span.end)
                if _better(span, best):
                    best = span
                continue
            merged.append(_settle(group_start, group_end, best))
            group_start, group_end, best = span.start, span.end, span
        merged.append(_settle(group_start, group_end, best))
        return merged


# After an assignment keyword: the rest of the name, maybe its closing quote, a separator.
# Longer than any run a rule's pattern can start with (a host name of ten 63-character labels).
_WALK_LIMIT = 704
# Every binding of the grammar (kbtools.redact.grammar) starts like one of these. After a
# quoted key: an operator, a comma (call argument), `]` (subscript), a type or attribute word
# then `=` (Go, XML pairs). After a bare one only an operator can (a call argument, a subscript
# and an attribute pair need a quoted key): `:`, `=`, `!=`, or `+ ? . |` then `=`/`|=` — a word
# in prose before `.`, `,`, `!` or `?` is not a name being assigned.
_SEPARATOR_AHEAD = re.compile(
    r"[A-Za-z0-9_-]{0,64}+(?:"
    r"\\?[\"']\]?[ \t\r\n]{0,16}(?:[:=+?.,|!]|(?:string|\[\]byte|[Vv]alue|VALUE)[ \t]{0,4}=)"
    r"|[ \t\r\n]{0,16}(?:[:=]|[+?.|]\|?=|!=|(?:string|\[\]byte|[Vv]alue|VALUE)[ \t]{0,4}=))"
)
# A rule whose name goes on after a dot (`sonar.login`): any of those characters will do.
_SEPARATOR_OR_DOT = re.compile(
    r"[A-Za-z0-9_-]{0,64}+\\?[\"']?\]?[ \t\r\n]{0,16}(?:[:=+?.,|!]|(?:string|\[\]byte|[Vv]alue|VALUE)[ \t]{0,4}=)"
)
_XML_OPEN_BEHIND = 66  # `<` at most this far before a keyword: maybe an XML element's name


# Per text: (keyword, anchor, separator) → where a match may start, for the rules that share them.
StartsMemo = dict[tuple[str, str, int], set[int]]


def _anchored_matches(
    text: str, lower: str, rule: Rule, keywords: tuple[str, ...] | None = None, memo: StartsMemo | None = None
) -> Iterator[re.Match[str]]:
    """The matches ``rule.regex.finditer(text)`` would give, tried only at keyword hits.

    Each hit is backed up over ``rule.anchor`` characters to the start of its run (the start
    of a name, a local part, an address), where the rule's look-behind can hold; an
    assignment may also start at the opening quote of its key (``"``, ``'``, or JSON-escaped
    ``\\"``), and any token right after a JSON ``\\n``/``\\r``/``\\t``. A run already walked
    for an earlier hit is not walked again, so a hostile run costs linear time. ``keywords``:
    the rule's keywords the text holds, if known (the others are not looked for). ``memo``:
    the starts other rules found on the same text (those of a keyword depend only on it, the
    anchor and the separator: `token` of three assignment rules, `@` of two, `::` of two).
    """
    assert rule.regex is not None
    back = rule.anchor_set
    assignment = rule.json_quote
    separator = _SEPARATOR_OR_DOT if rule.dotted_name else _SEPARATOR_AHEAD
    # An XML element's value ends before a `</`: the last one bounds where `<name>` can start.
    closes = text.rfind("</") if assignment else -1
    starts: set[int] = set()
    kind = (2 if rule.dotted_name else 1) if assignment else 0  # which separator (none, name, name or dot)
    for keyword in rule.keywords if keywords is None else keywords:
        key = (keyword, rule.anchor or "", kind)
        if memo is not None and (known := memo.get(key)) is not None:
            starts |= known
            continue
        found: set[int] = set()
        run_starts: dict[int, int] = {}  # earlier hit → start of its run (-1: run too long)
        hit = lower.find(keyword)
        while hit != -1:
            bound = not assignment or separator.match(text, hit + len(keyword)) is not None
            if not bound and (closes < 0 or text.find("<", max(0, hit - _XML_OPEN_BEHIND), hit + 1) == -1):
                hit = lower.find(keyword, hit + len(keyword))  # a word in prose, not a name being assigned
                continue
            pos, limit = hit, max(0, hit - _WALK_LIMIT)
            while True:
                if pos != hit and pos in run_starts:
                    run_start = run_starts[pos]
                    break
                if pos == 0 or text[pos - 1] not in back:
                    run_start = pos
                    break
                if pos <= limit:
                    run_start = -1  # longer than any rule's prefix: no match can start in it
                    break
                if pos > 1 and text[pos - 2] == "\\" and text[pos - 1] in "nrt":
                    found.add(pos)
                pos -= 1
            run_starts[hit] = run_start
            if run_start < 0:
                pass
            elif not bound:
                # No binding after the name: only an XML element `<name …>value</` can hold it.
                if run_start > 0 and text[run_start - 1] == "<" and closes >= run_start:
                    found.add(run_start - 1)
            else:
                found.add(run_start)
                if assignment and run_start > 0 and text[run_start - 1] == "<" and closes >= run_start:
                    found.add(run_start - 1)
                if assignment and run_start > 0 and text[run_start - 1] in "\"'":
                    found.add(run_start - 1)
                    if run_start > 1 and text[run_start - 2] == "\\":
                        found.add(run_start - 2)
            hit = lower.find(keyword, hit + len(keyword))
        if memo is not None:
            memo[key] = found
        starts |= found
    done = -1
    for start in sorted(starts):
        if start < done:
            continue
        match = rule.regex.match(text, start)
        if match is not None and match.end() > match.start():
            done = match.end()
            yield match


_NUMBER = re.compile(r"[-+]?[0-9][0-9.eE+-]*")
_ECHO_MIN = 8  # shorter values (`hunter2`) are too likely to occur by chance elsewhere
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def _echo_worthy(value: str) -> bool:
    """Distinctive enough that another occurrence is the same secret (not a number: maybe a bare
    JSON value elsewhere; not a word or an identifier such as `identity`)."""
    return not _NUMBER.fullmatch(value) and distinctive(value)


def _bounded(text: str, start: int, end: int) -> bool:
    """The occurrence is not a piece of a longer word or token."""
    return (start == 0 or text[start - 1] not in _WORD or text[start] not in _WORD) and (
        end == len(text) or text[end] not in _WORD or text[end - 1] not in _WORD
    )


def _better(candidate: Span, best: Span) -> bool:
    length, best_length = candidate.end - candidate.start, best.end - best.start
    return length > best_length or (length == best_length and candidate.rule < best.rule)


def _settle(start: int, end: int, best: Span) -> Span:
    same = best.start == start and best.end == end
    return Span(start, end, best.rule, best.quote if same else "")


# Around these a placeholder cannot start or end a match that its original text did not.
_SEALED_BEFORE = frozenset(" \t\r\n\"'`([{,;=")
_SEALED_AFTER = frozenset(" \t\r\n\"'`)]},;")


def _sealed(text: str, span: Span) -> bool:
    return (span.start == 0 or text[span.start - 1] in _SEALED_BEFORE) and (
        span.end == len(text) or text[span.end] in _SEALED_AFTER
    )


def _line_at(text: str, pos: int) -> str:
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start:] if end == -1 else text[start:end]


def _rebuild(config: RedactionConfig, rules: tuple[Rule, ...] | None) -> Redactor:
    return Redactor(config, rules=rules)
