"""The audit panel of the memory browser in a real browser (Debian's Chromium, headless, driven
by Playwright): the findings `mnemo audit` reports, by kind, each with its reason and action; an
action on one finding and the bulk action of a kind, each behind a confirmation, after which the
panel (and `mnemo audit`) shows what is left. Screenshots go to MNEMO_TEST_SCREENSHOTS when set."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.daemon.test_audit import _seed
from tests.e2e.test_memory_browser import _shot
from tests.e2e.test_review_page import CHROMIUM, HAS_CHROMIUM, chromium
from tests.helpers import Home

pytestmark = pytest.mark.skipif(not HAS_CHROMIUM, reason=f"no Chromium at {CHROMIUM} (apt install chromium)")


def test_the_audit_panel_shows_the_findings_and_applies_an_action_once_confirmed(home: Home) -> None:
    from playwright.sync_api import expect

    seeded = home.with_env(MNEMO_EMBEDDER="use-multilingual-v3")
    _seed(seeded)
    reported = json.loads(seeded.mnemo("audit", "--json").stdout)
    url = seeded.mnemo("review", "url").stdout.strip()
    with chromium() as browser:
        page: Any = browser.new_page(viewport={"width": 1100, "height": 900})
        page.goto(url)
        page.keyboard.press("4")
        expect(page.locator("#audit-summary")).to_contain_text(f"{len(reported['findings'])} findings")
        junk = page.locator("table[data-audit=junk] tr[data-finding]")
        expected = [f["memories"][0] for f in reported["findings"] if f["kind"] == "junk"]
        expect(junk).to_have_count(len(expected))
        assert junk.evaluate_all("rows => rows.map(r => r.dataset.finding)") == expected
        expect(page.locator("tr[data-finding=m-repo]")).to_contain_text(
            "reads as a command to do something now"
        )
        expect(page.locator("table[data-audit=duplicate]")).to_contain_text("We deploy on Thursdays")
        _shot(page, "audit")

        # One finding: dismissing the confirmation changes nothing; accepting it archives that one.
        page.once("dialog", lambda dialog: dialog.dismiss())
        page.locator("tr[data-finding=m-repo] button").click()
        expect(junk).to_have_count(len(expected))
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("tr[data-finding=m-repo] button").click()
        expect(page.locator("#status")).to_contain_text("archive: 1 memory version(s) written")
        expect(junk).to_have_count(len(expected) - 1)
        expect(page.locator("tr[data-finding=m-repo]")).to_have_count(0)

        # A kind's bulk action: the duplicates merged, none left.
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("button[data-audit-all=duplicate]").click()
        expect(page.locator("p[data-audit-empty=duplicate]")).to_have_text("None.")
    after = json.loads(seeded.mnemo("audit", "--json").stdout)
    assert {f["kind"] for f in after["findings"]} == {"junk", "superseded", "unused", "credential"}
    assert "m-repo" not in {f["memories"][0] for f in after["findings"]}
