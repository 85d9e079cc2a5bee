"""The memory browser in a real browser (Debian's Chromium, headless, driven by Playwright; the
page's real JavaScript): search answers what `mnemo recall` answers; a memory the writer closed
(the scripted model) shows its versions, the judge's probabilities and the memory that closed it,
linked both ways; the overview's figures are `mnemo stats --json`'s and `mnemo status --json`'s;
the keys move between views; nothing is fetched from anywhere but the daemon.

Screenshots of each view are written to MNEMO_TEST_SCREENSHOTS (a directory) when it is set.
(The review queue's view and the gate: tests/e2e/test_review_page.py.)
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from mnemo.client.typed import DaemonClient
from mnemo.store import open_store
from mnemo.workspace import workspace_namespace
from tests.e2e.test_review_page import CHROMIUM, HAS_CHROMIUM, chromium
from tests.helpers import CWD, DATA, Home, event_input, hook, record_deploy_day, script_deploy_day, wait_until
from tests.llm_server import LLMServer, running_llm_server

pytestmark = pytest.mark.skipif(not HAS_CHROMIUM, reason=f"no Chromium at {CHROMIUM} (apt install chromium)")
SCREENSHOTS = os.environ.get("MNEMO_TEST_SCREENSHOTS", "")
QUESTION = "which day is the shop deployed?"


@dataclass(frozen=True)
class World:
    home: Home
    url: str
    replicas: str  # a person's memory, injected into a session and used there
    tuesday: str  # closed by the writer
    thursday: str  # the memory that closed it
    nightly: str  # given to six sessions of the workspace and used by none: suppressed there


def _mnemo_json(home: Home, *args: str) -> Any:
    return json.loads(home.mnemo(*args, "--json").stdout)


@pytest.fixture(scope="module")
def module_llm() -> Iterator[LLMServer]:
    with running_llm_server() as server:
        yield server


@pytest.fixture(scope="module")
def world(module_home: Home, module_llm: LLMServer) -> Iterator[World]:
    """One daemon for the module's tests, which only read (and move between views)."""
    home, llm_server = module_home, module_llm
    script_deploy_day(llm_server)
    llm_server.answer(contains="was the memory used", choices={"A": 0.9, "B": 0.1})
    configured = home.with_env(
        MNEMO_LLM_URL=llm_server.url,
        MNEMO_LLM_MODEL="scripted-1",
        MNEMO_EMBEDDER="use-multilingual-v3",
        MNEMO_DISTILL_IDLE_S="3600",
    )
    store = open_store(configured.settings.store)
    try:
        record_deploy_day(store, [2, 6])
    finally:
        store.close()

    async def distil() -> None:
        async with DaemonClient(configured.settings) as client:
            for done, session in enumerate(("s2", "s6"), start=1):  # Tuesday, then Thursday closes it
                assert (await client.distil(session)).queued
                with anyio.fail_after(60):
                    while (await client.status()).distillation.batches_done < done:
                        await anyio.sleep(0.1)

    anyio.run(distil)
    replicas = _mnemo_json(
        configured, "remember", "The primary database keeps two replicas", "--type", "fact",
        "--entity", "PostgreSQL:subject=pg,postgres",
    )["id"]  # fmt: skip
    # A session is given the replicas memory and cites it: injected once, used once.
    prompt = event_input(
        "UserPromptSubmit", "s-use", prompt="how many replicas does the primary database keep?"
    )
    assert "two replicas" in hook(configured, "UserPromptSubmit", prompt)[0]
    answer = f"It keeps two replicas (memory {replicas})."
    assert hook(configured, "Stop", event_input("Stop", "s-use", last_assistant_message=answer))[1] == 0
    wait_until(lambda: _mnemo_json(configured, "stats")["used"] >= 1, timeout_s=60, what="the audit")
    nightly = _mnemo_json(
        configured, "remember", "The staging cache is flushed every night at 02:00", "--type", "fact",
        "--namespace", workspace_namespace(CWD),
    )["id"]  # fmt: skip
    for n in range(6):  # six sessions given it, none using it (the usage signal, no model asked)
        asked = event_input("UserPromptSubmit", f"s-skip-{n}", prompt="is the staging cache ready?")
        assert nightly in hook(configured, "UserPromptSubmit", asked)[0]
        typo = event_input("Stop", f"s-skip-{n}", last_assistant_message="I fixed a typo in the README.")
        hook(configured, "Stop", typo)
    wait_until(lambda: _mnemo_json(configured, "stats")["suppressed"], timeout_s=60, what="the suppression")
    found = {
        h["memory"]["content"]: h["memory"] for h in _mnemo_json(configured, "recall", QUESTION)["memories"]
    }
    tuesday, thursday = found["The shop is deployed on Tuesdays"], found["The shop is deployed on Thursdays"]
    assert tuesday["status"] == "closed" and tuesday["closed_by"] == thursday["id"]
    # Candidates for the review view: AGENTS.md's entries, judged by the (scripted) model.
    configured.mnemo("import", "--from", "agents-md", str(DATA / "notes" / "AGENTS.md"))
    url = configured.mnemo("review", "url").stdout.strip()
    yield World(configured, url, replicas, tuesday["id"], thursday["id"], nightly)


@pytest.fixture
def page(world: World) -> Iterator[Any]:
    base = world.url.split("/review#")[0]
    with chromium() as browser:
        opened = browser.new_page(viewport={"width": 1100, "height": 900})
        elsewhere: list[str] = []
        opened.on("request", lambda r: None if r.url.startswith(base) else elsewhere.append(r.url))
        opened.goto(world.url)
        yield opened
        assert elsewhere == [], f"the page fetched from elsewhere: {elsewhere}"


def _shot(page: Any, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / f"{name}.png"), full_page=True)


def test_search_answers_what_mnemo_recall_answers_with_each_scores_components(
    world: World, page: Any
) -> None:
    from playwright.sync_api import expect

    recalled = _mnemo_json(world.home, "recall", QUESTION, "--explain")["memories"]
    assert recalled, "recall finds the deploy-day memories"
    page.keyboard.press("2")
    expect(page.locator("#q")).to_be_focused()
    page.locator("#q").fill(QUESTION)
    page.keyboard.press("Enter")
    expect(page.locator("#search-note")).to_contain_text("What mnemo recall answers")
    hits = page.locator("#results li.hit")
    expect(hits).to_have_count(len(recalled))
    assert hits.evaluate_all("els => els.map(e => e.dataset.id)") == [h["memory"]["id"] for h in recalled]
    assert page.locator("#results .score").all_inner_texts() == [f"{h['score']:.3f}" for h in recalled]
    for at, hit in enumerate(recalled):
        shown = hits.nth(at).locator(".explain span").all_inner_texts()
        assert shown == [f"{name} {value:.3f}" for name, value in hit["explain"].items()]
    _shot(page, "search")

    # Filters: the closed memories only; then no question, a namespace: the newest there.
    page.locator("#f-status").select_option("closed")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#search-note")).to_contain_text(
        "Recall's ranking, among the memories the filters keep"
    )
    expect(hits).to_have_count(1)
    expect(hits.first).to_have_attribute("data-id", world.tuesday)
    page.locator("#q").fill("")
    page.locator("#f-status").select_option("current")
    page.locator("#f-namespace").select_option("person:tester")
    page.get_by_role("button", name="Search").click()
    expect(page.locator("#search-note")).to_contain_text("No question")
    expect(hits).to_have_count(1)
    expect(hits.first).to_have_attribute("data-id", world.replicas)
    assert "namespace=person%3Atester" in page.url  # the search is in the address: Back returns to it

    # From the keyboard: j to the first result, Enter opens it, Escape comes back.
    page.keyboard.press("j")  # the focus is on the Search button: keys are the page's
    page.keyboard.press("Enter")
    expect(page.locator("#memory-title")).to_have_text("The primary database keeps two replicas")
    page.keyboard.press("Escape")
    expect(hits.first).to_have_attribute("data-id", world.replicas)


def test_a_memory_the_writer_closed_shows_its_versions_the_judges_probabilities_and_what_closed_it(
    world: World, page: Any
) -> None:
    from playwright.sync_api import expect

    page.goto(f"{world.url.split('#')[0]}#memory/{world.tuesday}")
    expect(page.locator("#memory-title")).to_have_text("The shop is deployed on Tuesdays")
    versions = page.locator("#versions tr[data-version]")
    expect(versions).to_have_count(2)
    expect(versions.nth(0)).to_contain_text("the writer")  # newest first: closed by the writer
    expect(versions.nth(0)).to_contain_text("closed")
    expect(versions.nth(0)).to_contain_text("status, valid_to, closed_by, status_reason")
    expect(versions.nth(1)).to_contain_text("written")
    decision = page.locator("#decisions article.decision").filter(has_text="closes")
    expect(decision).to_have_count(1)
    expect(decision.locator("td.relation")).to_contain_text("updates 0.85")
    expect(page.locator("#sources")).to_contain_text("session s2")
    page.locator("#sources a[data-episode]").first.click()
    expect(page.locator("#memory-source h2")).to_have_text("Session s2, turn 0")
    _shot(page, "memory-closed")

    # The link to the memory that closed it, and back.
    page.locator("#closed-by a").click()
    expect(page.locator("#memory-title")).to_have_text("The shop is deployed on Thursdays")
    expect(page.locator("#closes a")).to_have_text("The shop is deployed on Tuesdays")
    expect(page.locator("dd[data-w=why]")).to_have_text("QA needs Wednesday to test the release")
    expect(page.locator("#entities")).to_contain_text("deploys (subject)")
    _shot(page, "memory-closer")
    page.locator("#closes a").click()
    expect(page.locator("#memory-title")).to_have_text("The shop is deployed on Tuesdays")


def test_a_used_memorys_page_shows_its_usage_and_entities(world: World, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{world.url.split('#')[0]}#memory/{world.replicas}")
    expect(page.locator("dd[data-usage=injected]")).to_contain_text("1 times, in 1 sessions")
    expect(page.locator("dd[data-usage=used]")).to_have_text("1")
    expect(page.locator("dd[data-usage=suppressed]")).to_have_text("no")
    expect(page.locator("#entities")).to_contain_text("PostgreSQL (subject) — also pg, postgres")
    expect(page.locator("#versions tr[data-version]")).to_contain_text("remember")


def test_a_suppressed_memory_is_injected_again_with_one_click(world: World, page: Any) -> None:
    from playwright.sync_api import expect

    page.goto(f"{world.url.split('#')[0]}#memory/{world.nightly}")
    suppressed = page.locator("dd[data-usage=suppressed]")
    expect(suppressed).to_contain_text("workspace:")
    expect(page.locator("dd[data-usage=unused]")).to_have_text("6")
    _shot(page, "memory-suppressed")
    suppressed.locator("button[data-unsuppress]").click()
    expect(suppressed).to_have_text("no")
    assert _mnemo_json(world.home, "stats")["suppressed"] == []
    asked = event_input("UserPromptSubmit", "s-back", prompt="is the staging cache ready?")
    assert world.nightly in hook(world.home, "UserPromptSubmit", asked)[0], "injected again"


def test_the_overviews_figures_are_mnemo_stats_and_status(world: World, page: Any) -> None:
    from playwright.sync_api import expect

    stats = _mnemo_json(world.home, "stats")
    status = _mnemo_json(world.home, "status")
    expect(page.locator("[data-figure=used] b")).to_have_text(f"{stats['used']:,}")
    for key in ("sessions", "memories_injected", "tokens_injected", "used", "unused", "unclear"):
        assert page.locator(f"[data-figure={key}] b").inner_text() == f"{stats[key]:,}", key
    assert page.locator("[data-figure=suppressed] b").inner_text() == str(len(stats["suppressed"]))
    for name, count in status["memories"].items():
        assert page.locator(f'[data-figure="memories.{name}"] b').inner_text() == f"{count:,}", name
    assert page.locator("[data-figure=episodes] b").inner_text() == f"{status['episodes']:,}"
    assert stats["memories_injected"] >= 1 and stats["used"] >= 1
    expect(page.locator("svg g[data-day]")).to_have_count(30)
    expect(page.locator("#spend")).to_contain_text(f"{status['language_model']['tokens_today']:,}")
    expect(page.locator("#writer")).to_contain_text("done")  # the last batch
    expect(page.locator("#namespaces")).to_contain_text("workspace:shop")
    _shot(page, "overview")
    page.keyboard.press("3")
    expect(page.locator("#view-review")).to_be_visible()
    expect(page.locator("#pending article")).to_have_count(5)  # AGENTS.md's entries, judged
    expect(page.locator("#pending")).to_contain_text("imported from")
    _shot(page, "review")
    page.keyboard.press("1")
    expect(page.locator("#view-overview")).to_be_visible()
