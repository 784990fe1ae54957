"""`kb lint --format sarif`: the report as a SARIF 2.1.0 log for GitHub code scanning.

One run, its tool ``kb`` with one rule per check of SPEC §3 (so a ``ruleId`` never
changes between runs), one result per problem. GitHub's accepted subset
(docs.github.com, "SARIF support for code scanning") needs ``version``, ``runs``,
``tool.driver.name``, and per result ``ruleId``, ``message.text`` and one location
with ``artifactLocation.uri`` (relative to the checkout: ``uriBaseId`` ``%SRCROOT%``)
and ``region.startLine`` >= 1. ``partialFingerprints`` carries the same fingerprint the
baseline uses, so an alert keeps its identity when lines move.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kbtools.lint.problem import CHECKS, Problem

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "kbFinding/v1"


def render_sarif(problems: Sequence[Problem], *, version: str, fallback_uri: str) -> str:
    """The SARIF log; a problem without a file is placed on ``fallback_uri`` (the KB's contract)."""
    from kbtools.lint.baseline import fingerprint

    rules = [_rule(check) for check in CHECKS]
    index = {check: i for i, check in enumerate(CHECKS)}
    results = [_result(p, index, fallback_uri, fingerprint(p)) for p in problems]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": "kb", "version": version, "rules": rules}},
                "results": results,
                "columnKind": "unicodeCodePoints",
            }
        ],
    }
    return json.dumps(log, ensure_ascii=False, indent=2) + "\n"


def _rule(check: str) -> dict[str, Any]:
    number, family = CHECKS[check]
    return {
        "id": check,
        "name": "".join(part.title() for part in check.split("-")),
        "shortDescription": {"text": f"kb lint check {number}: {check} ({family})"},
        "defaultConfiguration": {"level": "error"},
        "properties": {"family": family},
    }


def _result(problem: Problem, index: dict[str, int], fallback_uri: str, finding: str) -> dict[str, Any]:
    location = {
        "physicalLocation": {
            "artifactLocation": {"uri": problem.path or fallback_uri, "uriBaseId": "%SRCROOT%"},
            "region": {"startLine": problem.line or 1},
        }
    }
    result: dict[str, Any] = {
        "ruleId": problem.check,
        "level": "error",
        "message": {"text": problem.message},
        "locations": [location],
        "partialFingerprints": {FINGERPRINT_KEY: finding},
    }
    if problem.check in index:
        result["ruleIndex"] = index[problem.check]
    return result
