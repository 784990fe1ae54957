"""Artifacts and records in paraphrase grades, for the derived-filter tests and bench/derived_grades.py.

Each artifact comes with records of every grade, written the way they turn up
in session transcripts: the page pasted back, the model quoting it with other
indentation and fences, a user quoting it inside their own message, a partial
quote, a mention by name, the same topic in other words, and unrelated talk.
"""

from __future__ import annotations

from dataclasses import dataclass

# Grades in the order of the table in docs/derived-filter.md; `excluded` says what the default threshold must do.
GRADES: tuple[tuple[str, bool], ...] = (
    ("verbatim", True),
    ("reformatted", True),
    ("lightly edited", True),
    ("quoted inside a longer message", True),
    ("partial quote", False),
    ("mention", False),
    ("independent discussion", False),
    ("unrelated", False),
)


@dataclass(frozen=True)
class GradedArtifact:
    slug: str
    path: str  # relative to the KB root
    text: str  # the file, frontmatter included
    records: dict[str, tuple[str, ...]]  # grade → records


def page_body(page: str) -> str:
    """A page without its frontmatter: what turns up when the page is pasted back."""
    return page.split("---\n", 2)[2]


INFRA_SKILL = """\
---
name: infra-root-causes
description: Find the root cause of a failed deploy before touching anything.
---
# Infra root causes

Use this when a deploy fails or a service starts returning errors right after a release.

1. **Freeze the state.** Do not restart pods or roll back yet; a restart destroys the
   evidence you need. Copy the failing request IDs and the exact error text first.
2. Check the load balancer health checks, then the *database connection pool* limits,
   then recent DNS or certificate changes, in that order. Most incidents we have seen
   were one of these three.
3. Write every hypothesis down before testing it, and record what disproved it.

```bash
kubectl get events --sort-by=.lastTimestamp | tail -n 50
kubectl logs deploy/api --since=15m | grep -i error
```

- If the pool is exhausted, raise `max_connections` only after finding the leak.
- If DNS changed, compare the TTL with the time of the first error.

Finish with a short timeline: first error, detection, the change that caused it, the fix.
"""

INFRA_BODY_REFORMATTED = """\
# Infra root causes
Use this when a deploy fails or a service starts returning errors right after a release.

    1) Freeze the state. Do not restart pods or roll back yet; a restart destroys the evidence you need. Copy the failing request IDs and the exact error text first.
    2) Check the load balancer health checks, then the database connection pool limits, then recent DNS or certificate changes, in that order. Most incidents we have seen were one of these three.
    3) Write every hypothesis down before testing it, and record what disproved it.

~~~
kubectl get events --sort-by=.lastTimestamp | tail -n 50
kubectl logs deploy/api --since=15m | grep -i error
~~~

* If the pool is exhausted, raise max_connections only after finding the leak.
* If DNS changed, compare the TTL with the time of the first error.

Finish with a short timeline:
first error, detection, the change that caused it, the fix.
"""

INFRA = GradedArtifact(
    slug="infra-root-causes",
    path="skills/infra-root-causes/SKILL.md",
    text=INFRA_SKILL,
    records={
        "verbatim": (page_body(INFRA_SKILL),),
        "reformatted": (
            INFRA_BODY_REFORMATTED,
            # Re-fenced with another language, re-wrapped into one paragraph per step, emphasis dropped.
            "> # Infra root causes\n> Use this when a deploy fails or a service starts returning errors right "
            "after a release.\n>\n> - Freeze the state. Do not restart pods or roll back yet; a restart destroys "
            "the evidence you need. Copy the failing request IDs and the exact error text first.\n> - Check the "
            "load balancer health checks, then the database connection pool limits, then recent DNS or "
            "certificate changes, in that order. Most incidents we have seen were one of these three.\n> - Write "
            "every hypothesis down before testing it, and record what disproved it.\n\n```sh\nkubectl get events "
            "--sort-by=.lastTimestamp | tail -n 50\nkubectl logs deploy/api --since=15m | grep -i error\n```\n\n"
            "- If the pool is exhausted, raise **max_connections** only after finding the leak.\n- If DNS changed, "
            "compare the TTL with the time of the first error.\n\nFinish with a short timeline: first error, "
            "detection, the change that caused it, the fix.\n",
        ),
        "lightly edited": (
            INFRA_BODY_REFORMATTED.replace("Do not restart pods", "Don't restart the pods")
            .replace("Most incidents we have seen", "Most incidents we saw")
            .replace("compare the TTL", "check the TTL"),
        ),
        "quoted inside a longer message": (
            "The checkout service went down again about twenty minutes after the Friday release, and the on-call "
            "channel was already full of guesses. Before anyone rolled back I wanted us to follow the procedure we "
            "agreed on last quarter, because last time the rollback wiped the only logs that showed the real "
            "problem and we spent two days reconstructing it from customer reports.\n\n"
            "So I pasted the skill into the incident doc and asked everybody to work through it step by step:\n\n"
            + INFRA_BODY_REFORMATTED
            + "\nIt took about forty minutes. The health checks were fine, but the pool was pinned at its limit "
            "because a new background job opened a connection per item and never returned it. We fixed the job, "
            "left the pool size alone, and wrote the timeline before lunch. I think the procedure paid for itself "
            "this time, and I'd like the payments team to adopt it as well.\n",
        ),
        "partial quote": (
            "We had a long argument about whether to roll back immediately. Priya pointed at the runbook, which "
            "says: Freeze the state. Do not restart pods or roll back yet; a restart destroys the evidence you "
            "need. Copy the failing request IDs and the exact error text first. Check the load balancer health "
            "checks, then the database connection pool limits, then recent DNS or certificate changes, in that "
            "order. Most of us agreed, but Tom thinks that for customer-facing outages the cost of waiting is "
            "higher than the cost of losing some logs, and he has a point for the payment path, where every "
            "minute of errors means refunds and angry merchants. We left it open and agreed to revisit the "
            "policy at the next retro with numbers from the last three incidents in front of us.\n",
        ),
        "mention": (
            "I used the infra-root-causes skill on yesterday's outage and it worked well.",
            "Run the infra root causes skill first, then tell me what you found.",
            "Should the infra-root-causes checklist also cover certificate expiry? It came up twice this month.",
        ),
        "independent discussion": (
            "When a release breaks production, my instinct is to look at what changed at the edges first: the "
            "ingress configuration, the connection limits on the database side, and anything touching name "
            "resolution or TLS. Rolling back quickly is tempting, but it throws away the state you need to "
            "understand what happened, so grab logs and identifiers before you do anything drastic. Keeping a "
            "written list of guesses and noting why each one was ruled out makes the postmortem much easier, and "
            "a timeline from first alert to fix is what people actually read afterwards.\n",
        ),
        "unrelated": (
            "Can you rename the helper in utils.py to parse_timestamp and update the three call sites? Also the "
            "test for leap years is flaky on CI because it depends on the local timezone; pin it to UTC.",
            "The new onboarding flow looks good. I would move the pricing table below the testimonials and make "
            "the signup button stand out more on mobile, where it currently blends into the footer.",
        ),
    },
)

WAL_PAGE = """\
---
kind: concept
status: active
sources: [sqlite-docs-wal]
---
# SQLite WAL mode

In write-ahead logging mode SQLite appends changes to a separate `-wal` file instead of
rewriting the database file in place. Readers keep reading the database plus the part of
the WAL that was committed when their transaction began, so **readers do not block the
writer and the writer does not block readers**.

The WAL is folded back into the database by a *checkpoint*. By default SQLite runs one
automatically when the WAL reaches 1000 pages; a long-running reader can stop a checkpoint
from completing, and then the WAL grows without bound.

Things to remember:

- WAL does not work over network file systems, because it needs shared memory.
- All processes must be on the same host.
- `PRAGMA journal_mode=WAL;` is persistent: it stays set for the database file.
- Open read-only connections with `mode=ro` only if the `-shm` file can be created or already exists.
"""

WAL_BODY = page_body(WAL_PAGE)

WAL = GradedArtifact(
    slug="sqlite-wal-mode",
    path="src/content/note/en/sqlite-wal-mode.md",
    text=WAL_PAGE,
    records={
        "verbatim": (WAL_BODY,),
        "reformatted": (
            "SQLite WAL mode\n===============\n\nIn write-ahead logging mode SQLite appends changes to a separate "
            "-wal file instead of rewriting the database file in place. Readers keep reading the database plus "
            "the part of the WAL that was committed when their transaction began, so readers do not block the "
            "writer and the writer does not block readers.\n\nThe WAL is folded back into the database by a "
            "checkpoint. By default SQLite runs one automatically when the WAL reaches 1000 pages; a long-running "
            "reader can stop a checkpoint from completing, and then the WAL grows without bound.\n\nThings to "
            "remember:\n\n  1. WAL does not work over network file systems, because it needs shared memory.\n  2. "
            "All processes must be on the same host.\n  3. PRAGMA journal_mode=WAL; is persistent: it stays set "
            "for the database file.\n  4. Open read-only connections with mode=ro only if the -shm file can be "
            "created or already exists.\n",
        ),
        "lightly edited": (
            WAL_BODY.replace("appends changes to", "writes changes to")
            .replace("By default SQLite runs one", "SQLite runs one by default")
            .replace("All processes must be", "Every process has to be"),
        ),
        "quoted inside a longer message": (
            "I'm trying to understand why our background worker sometimes sees stale rows after the API has "
            "committed. We open the database from both processes on the same machine and I enabled WAL last week "
            "because of lock timeouts. Somebody on the team wrote this explanation in our notes, and I want to "
            "check whether it explains what we see:\n\n"
            + WAL_BODY
            + "\nOur worker keeps one connection open for hours and wraps every batch in a transaction that it "
            "begins at startup and commits only at the end. If I read the note right, that long reader is both "
            "why it sees old data and why the -wal file on disk is now several gigabytes. Is the fix just to "
            "commit after each batch, or should I also run a manual checkpoint from the API process?\n",
        ),
        "partial quote": (
            "Our database sits on an NFS share and the notes say WAL does not work over network file systems, "
            "because it needs shared memory. All processes must be on the same host. We have three app servers "
            "mounting the same volume, so what are our options? Moving to a client-server database is the obvious "
            "answer, but the migration would take a quarter, and most of our traffic is reads that could tolerate "
            "a replica lagging a few seconds behind the primary copy.\n",
        ),
        "mention": (
            "See the sqlite-wal-mode page before changing the journal settings.",
            "Add a link from the deployment guide to the SQLite WAL mode note.",
        ),
        "independent discussion": (
            "With a write-ahead log, SQLite stops overwriting pages of the main file during a transaction and "
            "writes new versions to a side file instead; concurrent readers each see a consistent snapshot "
            "taken when they started, which is why reads and the single writer can proceed together. The side "
            "file gets merged back periodically, and if some reader holds an old snapshot for a long time that "
            "merge can't finish, so the log keeps growing. The shared-memory index it relies on means every "
            "process has to run on one machine; a network mount will not work.\n",
        ),
        "unrelated": (
            "Please bump the Node version in the Dockerfile to 22 and regenerate the lockfile; the current one "
            "still pulls an old esbuild that fails on arm64 runners.",
            "Thanks, the chart reads much better with the log scale. Could you add the p99 line in a lighter "
            "colour and label the x axis in hours rather than minutes?",
        ),
    },
)

JA_NOTE = """\
---
kind: concept
status: active
sources: [team-release-policy]
---
# リリース手順

リリースの前に必ずステージング環境で結合テストを実行し、結果をチャンネルに共有すること。
本番への反映は平日の午前中に限り、金曜日の午後は原則として反映しない。
障害が起きた場合は、まずロールバックせずにログとリクエストIDを保存してから原因を調べる。
"""

JA = GradedArtifact(
    slug="release-procedure-ja",
    path="src/content/note/ja/release-procedure.md",
    text=JA_NOTE,
    records={
        "verbatim": (page_body(JA_NOTE),),
        "reformatted": (
            "## リリース手順\n\n- リリースの前に必ずステージング環境で結合テストを実行し、結果をチャンネルに共有すること。\n"
            "- 本番への反映は平日の午前中に限り、金曜日の午後は原則として反映しない。\n"
            "- 障害が起きた場合は、まずロールバックせずにログとリクエストIDを保存してから原因を調べる。\n",
        ),
        "mention": ("リリース手順のページを読んでからデプロイしてください。",),
        "unrelated": ("このテストはタイムゾーンに依存しているので、UTCに固定してください。",),
    },
)

ARTIFACTS: tuple[GradedArtifact, ...] = (INFRA, WAL, JA)

# An older version of the WAL page: recorded in the manifest, then rewritten in the working tree.
WAL_PAGE_V1 = """\
---
kind: concept
status: provisional
sources: [sqlite-docs-wal]
---
# SQLite WAL mode (draft)

Write-ahead logging keeps new data in a `-wal` file next to the database until a checkpoint copies it
back. It lets many readers run while one writer commits, which is why we switched the job queue to it
after the lock timeouts in March. The catch we hit: a reader that never finishes its transaction keeps
the checkpoint from resetting the log, so the file grows until the disk fills up. Keep transactions
short in the worker and let the API process run `PRAGMA wal_checkpoint(TRUNCATE)` every few minutes.
"""
