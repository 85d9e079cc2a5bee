"""The code check's grades in the memory browser (Debian's Chromium, headless, the page's real
JavaScript): a memory whose value the code changed shows what the code says now; one whose file
changed around what it names shows that it was followed; the memory with the new value waits in
the review queue naming the one it replaces, and approving it there closes that one.

Screenshots of each view are written to MNEMO_TEST_SCREENSHOTS (a directory) when it is set.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mnemo.workspace import workspace_namespace
from tests.e2e.test_memory_browser import _shot
from tests.e2e.test_review_page import CHROMIUM, HAS_CHROMIUM, chromium
from tests.helpers import Home, committed_repo, run_git

pytestmark = pytest.mark.skipif(not HAS_CHROMIUM, reason=f"no Chromium at {CHROMIUM} (apt install chromium)")
LB = 'resource "aws_lb" "gateway" {\n  name        = "gateway"\n  timeout_sec = 600\n}\n'
DEPLOY = "# Deploys\n\nDeploys go out on Tuesdays, after the QA sign-off.\n"


def _json(home: Home, *args: str, cwd: Path | None = None) -> Any:
    return json.loads(home.mnemo(*args, "--json", cwd=cwd).stdout)


def test_the_browser_shows_each_grade_and_approving_the_proposal_closes_the_old_memory(
    home: Home, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    words = home.with_env(MNEMO_EMBEDDER="none")
    repo = committed_repo(tmp_path / "shop", {"infra/lb.tf": LB, "docs/deploy.md": DEPLOY})
    ns = workspace_namespace(str(repo))
    lb = _json(
        words,
        "remember",
        "The gateway timeout is 600 s (timeout_sec in infra/lb.tf)",
        "--type",
        "fact",
        "--namespace",
        ns,
        cwd=repo,
    )
    deploy = _json(
        words,
        "remember",
        "Deploys go out on Tuesdays (docs/deploy.md)",
        "--type",
        "fact",
        "--namespace",
        ns,
        cwd=repo,
    )
    (repo / "infra/lb.tf").write_text(LB.replace("600", "900"))
    (repo / "docs/deploy.md").write_text(DEPLOY + "\nRollbacks use the previous tag.\n")
    run_git(repo, "commit", "-q", "-am", "two")
    checked = _json(words, "check-code", str(repo))
    grades = {f["memory"]: f["kind"] for f in checked["flagged"]}
    assert grades == {lb["id"]: "changed", deploy["id"]: "refreshed"}
    [proposal] = [m for m in _json(words, "review", "list")["memories"] if m["replaces"] == lb["id"]]

    url = words.mnemo("review", "url").stdout.strip()
    with chromium() as browser:
        page = browser.new_page()
        page.goto(url)
        expect(page.locator("#who")).to_contain_text("person:tester")
        page.evaluate(f"location.hash = '#memory/{lb['id']}'")
        expect(page.locator("#memory-title")).to_have_text(lb["content"])
        expect(page.locator("#memory .warn")).to_contain_text(
            "May be outdated: infra/lb.tf now has timeout_sec = 900 (was 600)"
        )
        _shot(page, "code-stale")
        page.evaluate(f"location.hash = '#memory/{deploy['id']}'")
        expect(page.locator("#memory-title")).to_have_text(deploy["content"])
        expect(page.locator("#code-check")).to_contain_text("docs/deploy.md changed since")
        expect(page.locator("#code-check")).to_contain_text("still holds all the memory names: followed")
        expect(page.locator("#memory .warn")).to_have_count(0)
        _shot(page, "code-followed")

        page.get_by_role("link", name="Review").click()
        card = page.locator(f'article[data-id="{proposal["id"]}"]')
        expect(card.locator("textarea")).to_have_value(
            "The gateway timeout is 900 s (timeout_sec in infra/lb.tf)"
        )
        expect(card.locator(".replaces")).to_have_text(f"approving it closes {lb['id']}")
        _shot(page, "code-proposal")
        card.get_by_role("button", name="Approve").click()
        expect(page.locator("#status")).to_have_text(f"{proposal['id']}: approved")
    hits = _json(words, "recall", "gateway timeout", "--namespace", ns, "--history")["memories"]
    old = next(h["memory"] for h in hits if h["memory"]["id"] == lb["id"])
    assert old["status"] == "closed" and old["closed_by"] == proposal["id"]
    assert old["status_reason"].startswith(f"replaced by {proposal['id']}, approved by person:tester")
