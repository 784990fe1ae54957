from __future__ import annotations

from pathlib import Path

from kbtools.config import Config, load_config
from kbtools.retention.gate import ENV_VAR, MAX_NAMED, grade, resolve_threshold
from kbtools.retention.taxonomy import taxonomy

EXTRACT = taxonomy(("HQ-",))

PAGE = (
    "# Trial close\n\n"
    "Decided on 2026-07-27. The runbook is TRIAL-CLOSE-RUNBOOK.md, built at 5ef5a70.\n"
    "It waits for HINDSIGHT_API_REFLECT_WALL_TIMEOUT and talks to 127.0.0.1:18888 (HQ-123).\n"
)


def check(old, new, threshold=3):
    return grade(old, new, threshold=threshold, extractor=EXTRACT)


def test_no_loss_is_silent():
    verdict = check(PAGE, PAGE + "\nMore prose, no anchors dropped.\n")
    assert verdict.lost == () and not verdict.refused
    assert verdict.message("note.md") is None


def test_moved_identifier_counts_as_kept():
    moved = " ".join(reversed(PAGE.split()))
    verdict = check(PAGE, moved)
    assert verdict.lost == () and verdict.message("note.md") is None
    assert verdict.kept == len(EXTRACT.extract(PAGE))


def test_single_loss_warns_but_proceeds_naming_it_verbatim():
    verdict = check(PAGE, PAGE.replace("Decided on 2026-07-27. ", ""))
    assert not verdict.refused
    message = verdict.message("note.md")
    assert message is not None
    assert "2026-07-27" in message and "dropped 1 identifier" in message and "warning" in message


def test_lost_identifiers_are_named_as_the_old_page_wrote_them():
    old = "Built at 5EF5A70 from C:\\ops\\x.ps1."
    verdict = check(old, "Rebuilt.")
    assert [i.text for i in verdict.lost] == ["5EF5A70", "C:\\ops\\x.ps1"]


def test_three_losses_refuse():
    new = PAGE.replace("2026-07-27", "late July").replace("TRIAL-CLOSE-RUNBOOK.md", "the runbook")
    new = new.replace(", built at 5ef5a70", "")
    verdict = check(PAGE, new)
    assert verdict.refused
    assert {i.text for i in verdict.lost} == {"2026-07-27", "TRIAL-CLOSE-RUNBOOK.md", "5ef5a70"}
    assert "refused" in (verdict.message("note.md") or "")


def test_threshold_zero_never_refuses_but_still_warns():
    verdict = check(PAGE, "Everything rewritten in prose.", threshold=0)
    assert len(verdict.lost) == 6 and not verdict.refused
    assert "warning only" in (verdict.message("note.md") or "")


def test_bootstrap_write_is_never_refused():
    verdict = check(None, PAGE, threshold=1)
    assert verdict.new_page and not verdict.refused and verdict.message("note.md") is None


def test_an_empty_old_page_has_nothing_to_lose():
    verdict = check("", PAGE, threshold=1)
    assert verdict.lost == () and not verdict.refused


def test_warning_caps_the_named_list():
    old = "\n".join(f"- file-{n:02d}.md" for n in range(25))
    verdict = check(old, "nothing left", threshold=0)
    message = verdict.message("the page") or ""
    assert "25 identifier(s)" in message
    assert message.count(".md") == MAX_NAMED and "+15 more" in message
    named = message.split("version: ")[1].split(", +")[0].split(", ")
    assert named == sorted(named) == [f"file-{n:02d}.md" for n in range(MAX_NAMED)]


# -- the threshold: flag > KB_IDENTIFIER_LOSS_REFUSE > .kb.yaml > 3 --------------------


def config_with(tmp_path: Path, refuse: int | None = None) -> Config:
    if refuse is not None:
        (tmp_path / ".kb.yaml").write_text(f"retention:\n  refuse: {refuse}\n")
    return load_config(tmp_path)


def test_default_when_unset(tmp_path):
    limit = resolve_threshold(None, config_with(tmp_path))
    assert (limit.value, limit.source, limit.warning) == (3, "default", None)


def test_env_override(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "5")
    assert resolve_threshold(None, config_with(tmp_path)).value == 5


def test_garbage_env_falls_back_with_a_warning_rather_than_raising(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "three")
    limit = resolve_threshold(None, config_with(tmp_path))
    assert limit.value == 3
    assert limit.warning is not None and ENV_VAR in limit.warning and "'three'" in limit.warning


def test_garbage_env_falls_back_to_the_file_value(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "lots")
    assert resolve_threshold(None, config_with(tmp_path, 6)).value == 6


def test_negative_is_clamped_to_warn_only(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, "-2")
    assert resolve_threshold(None, config_with(tmp_path)).value == 0
    assert resolve_threshold(-4, config_with(tmp_path)).value == 0


def test_file_beats_default_env_beats_file_flag_beats_env(tmp_path, monkeypatch):
    config = config_with(tmp_path, 7)
    assert resolve_threshold(None, config).value == 7
    monkeypatch.setenv(ENV_VAR, "2")
    assert resolve_threshold(None, config).value == 2
    limit = resolve_threshold(4, config)
    assert (limit.value, limit.source) == (4, "--threshold")


def test_the_environment_is_read_on_every_call(tmp_path, monkeypatch):
    config = config_with(tmp_path)
    monkeypatch.setenv(ENV_VAR, "1")
    assert resolve_threshold(None, config).value == 1
    monkeypatch.setenv(ENV_VAR, "4")
    assert resolve_threshold(None, config).value == 4


def test_a_check_without_loss_never_loads_the_secret_scanner():
    # The scanner is the costliest import of a hook run; it matters only for a token that went missing.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from kbtools.retention.gate import grade\n"
        "from kbtools.retention.taxonomy import taxonomy\n"
        "page = 'on 2026-07-27 at 5ef5a70 see https://example.com/a'\n"
        "assert not grade(page, page[::-1][::-1] + ' more', threshold=3, extractor=taxonomy()).lost\n"
        "print('kbtools.redact' in sys.modules)\n"
        "grade(page, 'gone', threshold=3, extractor=taxonomy())\n"
        "print('kbtools.redact' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
