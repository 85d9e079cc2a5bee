"""tests/data/real_sessions holds what its README says: every session of the manifest labelled in
its part, the parts split by repository (no repository has sessions in two parts),
each label of a known type, and each verdict about a labelled session."""

from __future__ import annotations

import json

from mnemo.vocabulary import MemoryType
from tests.helpers import REPO

DATA = REPO / "tests" / "data" / "real_sessions"


def _manifest() -> list[dict[str, object]]:
    return [json.loads(line) for line in (DATA / "manifest.jsonl").read_text().splitlines() if line.strip()]


def _file(session_id: object) -> str:
    return str(session_id).replace("/", "__") + ".json"


def test_every_session_is_labelled_in_its_part_and_the_parts_share_no_repository() -> None:
    rows = _manifest()
    assert len(rows) == len({r["id"] for r in rows})
    parts = ("fit", "blind", "blind2", "blind3", "blind4", "blind5")
    assert {r["part"] for r in rows} == set(parts)
    for part in parts:
        named = {_file(r["id"]) for r in rows if r["part"] == part}
        assert {p.name for p in (DATA / "labels" / part).glob("*.json")} == named
    repos = {part: {r["repo"] for r in rows if r["part"] == part} for part in parts}
    for part in parts:
        others = set().union(*(repos[other] for other in parts if other != part))
        assert repos[part] and not repos[part] & others, part
    types = {t.value for t in MemoryType}
    for path in (DATA / "labels").glob("*/*.json"):
        labels = json.loads(path.read_text())
        assert all(w["type"] in types for w in labels["worth"]), path.name


def test_each_verdict_is_about_a_labelled_session_and_names_only_its_labels() -> None:
    for path in (DATA / "judged").glob("*/*.json"):
        # judged/before is the landed tree's run on fit sessions; every other folder is its part's.
        part = "fit" if path.parent.name == "before" else path.parent.name
        verdict = json.loads(path.read_text())
        labels = json.loads((DATA / "labels" / part / path.name).read_text())
        assert _file(verdict["id"]) == path.name
        assert {int(i) for i in verdict["labels"]} <= set(range(len(labels["worth"]))), path.name
        assert all(v["verdict"] in ("worth", "junk") for v in verdict["memories"].values()), path.name


def test_the_readme_names_what_is_here() -> None:
    readme = (DATA / "README.md").read_text()
    for name in ("manifest.jsonl", "BRIEF.md", "JUDGE_BRIEF.md", "labels/", "judged/"):
        assert name in readme and (DATA / name.rstrip("/")).exists(), name
