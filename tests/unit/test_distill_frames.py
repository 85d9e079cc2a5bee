"""The newest word wins, by rule (mnemo.distill.frames): which current memory a newer one replaces,
read from the two texts alone. The sibling trap set comes first: it must never close one.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.frames import replaces, two_things
from mnemo.distill.judge import bars_same, guard_between
from mnemo.distill.newest import newest_first, replaced_by
from mnemo.distill.replaced import named_replaced
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import make_memory

DATA = Path(__file__).resolve().parents[1] / "data"
NOW = datetime(2026, 11, 20, tzinfo=UTC)

# (older, newer): two things that share a value or the shape of a sentence, both true.
SIBLINGS = [
    ("Staging deploys on Tuesdays", "Production deploys on Thursdays"),
    ("Staging deploys on Tuesdays", "Production deploys on Tuesdays"),
    ("API_KEY is rotated every 90 days", "DB_PASSWORD is rotated every 90 days"),
    ("The payments-api service listens on port 8080", "The checkout-api service listens on port 9090"),
    ("Refresh tokens expire after 15 minutes", "Access tokens expire after 15 minutes"),
    ("Refresh tokens expire after 30 days", "Access tokens expire after 15 minutes"),
    ("The gateway timeout is 300 s", "The search timeout is 600 s"),
    ("The default HTTP timeout is 30 s", "The payments client HTTP timeout is 60 s"),
    ("deploy-prod runs at 02:00 UTC", "deploy-staging runs at 04:00 UTC"),
    ("Type error in src/a.ts", "Type error in src/b.ts"),
    ("Strict mode is on in src/app/config.ts since v2", "Strict mode is on in src/lib/legacy.ts since v3"),
    ("The EU cluster runs Kubernetes 1.29", "The US cluster runs Kubernetes 1.30"),
    ("El timeout de staging es 30 s", "El timeout de producción es 60 s"),
    ("The ingest worker gets 512 MB of memory", "The export worker gets 1 GB of memory"),
    ("Backups run on Sundays", "Deploys happen on Thursdays"),
    ("gw-eu-1 times out at 30 s", "gw-eu-2 times out at 60 s"),
    ("We pin numpy to 1.26", "We pin pandas to 2.2"),
    ("Reviews need 2 approvals on the api repo", "Reviews need 1 approval on the docs repo"),
    ("The retry limit is 3", "The retry limit is not 3 for webhooks"),
    ("The nightly job ran ok", "The billing-nightly job was renamed to invoices-nightly"),
    ("Los backups se guardan 30 días", "Los logs se guardan 14 días"),
    # Siblings where the newer says a change: the worded rule must still tell two things apart.
    ("Checkout API timeout is 10s.", "Payments API timeout is now 30s."),
    (
        "The api deployment has a CPU limit of 2 cores.",
        "The worker deployment now has a CPU limit of 4 cores.",
    ),
    ("The ingestion client's connect timeout is 5s.", "The ingestion client's read timeout is now 120s."),
    ("Minimum Android SDK for the app is 26.", "Target Android SDK for the app is now 34."),
    ("Backend coverage gate is 80%.", "Frontend coverage gate is now 60%."),
    ("Staging runs Postgres 15.", "Production now runs Postgres 16."),
    (
        "The orders queue has a visibility timeout of 5 minutes.",
        "The emails queue visibility timeout is now 15 minutes.",
    ),
    ("Access tokens expire after 15 minutes.", "Refresh tokens now expire after 30 days."),
    ("Tests run with pytest.", "Tests now also run with coverage enabled."),
    ("The EU region uses eu-west-1.", "The US region now uses us-east-2."),
    ("Los tokens de acceso caducan a los 15 minutos.", "Los tokens de refresco ahora caducan a los 30 días."),
    ("El timeout de conexión del cliente es 5s.", "El timeout de lectura del cliente ahora es 60s."),
    (
        "Android builds are signed in CI with the upload key.",
        "iOS builds are now signed in CI with fastlane match.",
    ),
    ("The free plan allows 3 projects.", "The pro plan now allows 50 projects."),
    ("Unit tests run on every push.", "Integration tests now run nightly."),
    (
        "The API rate limit is 100 requests per minute per user.",
        "The webhook endpoint is now rate limited to 20 requests per second.",
    ),
    ("Sentry captures backend errors.", "Sentry now also captures frontend errors."),
    ("We deploy the web app with Vercel.", "We now deploy the docs with Netlify."),
    ("The primary database has 64 GB of RAM.", "The read replica now has 32 GB of RAM."),
    ("Uploads are limited to 10 MB.", "Downloads are now throttled to 5 MB/s."),
    ("Tests run with pytest.", "Tests now run with pytest in parallel (-n 4)."),
    (
        "All public endpoints require authentication.",
        "The /health and /status endpoints do not require authentication.",
    ),
]  # fmt: skip

# (older, newer, what the person said): the newer replaces the older.
CHANGES = [
    ("We deploy on Tuesdays", "Deploys move to Thursday", ""),
    ("We deploy on Tuesdays", "We deploy on Thursdays", ""),
    ("The gateway timeout is 300 s", "The gateway timeout is 600 s", ""),
    ("The gateway timeout is 300 s", "Gateway timeout is 600 s", "the timeout is 600, not 300"),
    ("The gateway is gw-eu-1", "The gateway is gw-eu-2", ""),
    ("Background jobs run on graphile-worker", "Jobs go through BullMQ instead of graphile-worker", ""),
    ("The gateway timeout is 300 s", "El timeout del gateway pasa de 300 a 600 s", ""),
    ("The runbook is docs/runbook.md", "The runbook moved to docs/ops/deploy.md", ""),
    ("Access tokens expire after 15 minutes", "Access tokens now expire after 30 minutes", ""),
    ("We pin numpy to 1.26", "We no longer pin numpy", ""),
    ("Trivy findings block merges to main", "Trivy findings do not block merges; the scan only reports", ""),
    ("invoice-pdf usa wkhtmltopdf", "invoice-pdf no usa wkhtmltopdf; los PDF se generan con WeasyPrint", ""),
    ("Python 3.11 is the runtime", "Python 3.12 is the runtime", ""),
    ("CI artifacts are retained for 90 days", "We reduced CI artifact retention from 90 to 30 days", ""),
    ("Each team runs up to 40 concurrent trainings", "The per-team training cap is 4; the 40 was a typo", ""),
    # Worded: the newer says a change of the older's subject, with no value or name in common.
    ("Product images are cached by the CDN for one day.", "The CDN image cache TTL is now 2 hours.", ""),
    ("Our error tracking is Bugsnag.", "Error tracking moved to Sentry.", ""),
    (
        "Invoices are emailed by the billing cron every morning.",
        "The billing cron now emails invoices at night.", "",
    ),
    (
        "Mobile crash reports go to Crashlytics.",
        "Crash reports for the mobile apps actually go to Sentry.", "",
    ),
    (
        "Los reportes semanales los genera un script de Python.",
        "Los reportes semanales ahora los genera dbt.", "",
    ),
    ("The prod DB is backed up hourly.", "Production database backups run every 15 minutes again.", ""),
    ("We deploy the web app with Vercel.", "The web app deploys went back to our own Kubernetes.", ""),
    (
        "Staging DB snapshots are kept for a week.",
        "Staging database snapshot retention extended to a month.", "",
    ),
    (
        "Full-text search runs on Postgres.",
        "Full-text search runs on Meilisearch.", "we moved search to Meilisearch now",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("older", "newer"), SIBLINGS)
def test_siblings_never_replace_one_another(older: str, newer: str) -> None:
    assert replaces(newer, older) == "" and replaces(older, newer) == ""


@pytest.mark.parametrize(("older", "newer", "said"), CHANGES)
def test_a_change_or_correction_replaces_the_older_value(older: str, newer: str, said: str) -> None:
    assert replaces(newer, older, [said] if said else [])


def test_what_a_change_replaces_is_copied_from_the_persons_words() -> None:
    assert named_replaced("Deploys move from Tuesday to Thursday") == ["Tuesday"]
    assert named_replaced("the timeout is 600, not 300") == ["300"]
    assert named_replaced("use BullMQ instead of graphile-worker.") == ["graphile-worker"]
    assert named_replaced("el timeout pasa de 300 a 600 s") == ["300"]
    assert named_replaced("We deploy on Thursdays") == []
    assert named_replaced("El SLA de pagos es 99.95%, no 99.9.") == ["99.9"]  # a point inside a value
    assert named_replaced("The healthcheck is /healthz, not /health.") == ["/health"]


def test_the_labelled_pairs_never_close_what_is_the_same_or_unrelated() -> None:
    """On every labelled pair of the judge's and the guard's sets, a pair that is the same memory
    or unrelated is never a replacement (and some changes are: the rule is not silent)."""
    wrong, closed = [], 0
    for name in ("judge_pairs_blind.jsonl", "judge_pairs_test.jsonl", "guard_pairs.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            pair = json.loads(line)
            older, newer = (
                (pair["old"]["what"], pair["new"]["what"]) if "old" in pair else (pair["a"], pair["b"])
            )
            found = replaces(newer, older)
            if found and pair["label"] in ("same", "unrelated", "duplicate"):
                wrong.append((older, newer, found))
            closed += bool(found) and pair["label"] in ("updates", "contradicts", "change")
    assert wrong == []
    assert closed >= 60


@pytest.mark.parametrize("name", ["changes_fit.jsonl", "changes_blind.jsonl", "changes_blind2.jsonl"])
def test_no_sibling_paraphrase_or_unrelated_step_of_the_change_cases_is_replaced(name: str) -> None:
    """The strangers' change cases (tests/data/changes_*.jsonl): no step of a case whose memories
    both stay true is replaced by the next, the person's line read too."""
    wrong = []
    for line in (DATA / name).read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["label"] not in ("sibling", "same", "unrelated"):
            continue
        older, newer = case["steps"]
        said = [newer["person"]] if newer.get("person") else []
        if found := replaces(newer["what"], older["what"], said):
            wrong.append((case["id"], found))
    assert wrong == []


def _memory(memory_id: str, what: str, days_ago: int, namespace: str = "workspace:shop") -> Memory:
    return make_memory(memory_id, what, NOW - timedelta(days=days_ago), namespace=namespace)


def test_the_newest_of_a_group_leads_and_the_others_are_marked_earlier() -> None:
    tuesday = _memory("m-tue", "We deploy on Tuesdays", 10)
    thursday = _memory("m-thu", "We deploy on Thursdays", 2)
    friday = _memory("m-fri", "We deploy on Fridays", 20)
    other = _memory("m-db", "Orders stay in Postgres", 5)
    ordered, newest = newest_first([tuesday, other, friday, thursday])
    assert [m.id for m in ordered] == ["m-thu", "m-tue", "m-fri", "m-db"]
    assert {k: v.id for k, v in newest.items()} == {"m-tue": "m-thu", "m-fri": "m-thu"}


def test_only_older_current_memories_of_the_namespace_are_replaced() -> None:
    new = _memory("m-new", "We deploy on Thursdays", 1)
    current = [
        _memory("m-old", "We deploy on Tuesdays", 5),
        _memory("m-later", "We deploy on Mondays", 0),  # newer than the new one
        _memory("m-other", "We deploy on Fridays", 5, namespace="workspace:other"),
        _memory("m-closed", "We deploy on Wednesdays", 5).model_copy(update={"status": MemoryStatus.CLOSED}),
    ]
    assert [(old.id, why) for old, why in replaced_by(new, current)] == [
        ("m-old", "the same statement with another weekday")
    ]


@pytest.mark.parametrize(
    ("older", "newer", "why"),
    [
        (
            "API_KEY is rotated every 90 days",
            "DB_PASSWORD is rotated every 90 days",
            "they name different things",
        ),
        (
            "Staging deploys on Tuesdays",
            "Production deploys on Tuesdays",
            "different environments: staging / prod",
        ),
        (
            "Postgres passwords rotate every 90 days",
            "Redis AUTH rotates every 90 days too",
            "the newer stands",
        ),
        (
            "On Android, push notifications go through FCM",
            "On iOS, push notifications go through APNs",
            "words of one family: andro / ios",
        ),
        (
            "El timeout de conexión del cliente es 5 s",
            "The client's read timeout is 5 s",
            "words of one family: conne / read",
        ),
        ("Intermediate checkpoints expire after a week", "Non-final checkpoints have a 7-day lifecycle", ""),
        ("The ETL job has 4 GiB of memory", "The ETL job is given 4096 MiB of RAM", ""),
        ("Every production deploy needs a change ticket", "No prod deployment goes out without a ticket", ""),
    ],
)
def test_siblings_that_share_a_value_are_two_things_and_a_paraphrase_is_not(
    older: str, newer: str, why: str
) -> None:
    assert two_things(older, newer).startswith(why) and bool(two_things(older, newer)) == bool(why)


def test_the_judge_never_merges_two_things_whatever_the_model_says() -> None:
    existing = make_memory("m-stg", "Staging deploys on Tuesdays", NOW)
    new = ExtractedMemory(type=MemoryType.DECISION, what="Production deploys on Tuesdays", sources=["e1"])
    barred = bars_same(existing, new, guard_between(existing, new))
    assert "two things: different environments: staging / prod" in barred
