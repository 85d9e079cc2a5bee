"""The deterministic guard on the labelled pairs (tests/data/guard_pairs.jsonl): no pair that
changes a quantity, version, identifier or negation gets through; real duplicates do."""

from __future__ import annotations

import json

import pytest

from mnemo.distill.guard import compare
from mnemo.distill.readings import facts
from tests.helpers import DATA

PAIRS = [json.loads(line) for line in (DATA / "guard_pairs.jsonl").read_text().splitlines()]


def test_the_labelled_set_covers_every_kind_of_change_and_real_duplicates() -> None:
    assert len(PAIRS) >= 40
    kinds = {p.get("kind") for p in PAIRS if p["label"] == "change"}
    assert kinds == {"quantity", "version", "identifier", "negation"}
    assert sum(p["label"] == "duplicate" for p in PAIRS) >= 20


@pytest.mark.parametrize("pair", [p for p in PAIRS if p["label"] == "change"], ids=lambda p: p["b"][:40])
def test_no_changed_pair_gets_through(pair: dict[str, str]) -> None:
    verdict = compare(pair["a"], pair["b"])
    assert verdict.blocks, f"the guard let through: {pair['a']!r} / {pair['b']!r}"
    assert compare(pair["b"], pair["a"]).blocks  # symmetric


def test_at_least_80_percent_of_real_duplicates_get_through() -> None:
    duplicates = [p for p in PAIRS if p["label"] == "duplicate"]
    blocked = [
        (p["a"], p["b"], compare(p["a"], p["b"]).reasons)
        for p in duplicates
        if compare(p["a"], p["b"]).blocks
    ]
    assert len(blocked) <= 0.2 * len(duplicates), blocked


def test_reasons_name_what_differs_in_normalised_units() -> None:
    assert compare("cuts at 120 s", "cuts at 10 minutes").reasons == ("quantity: 120 s vs 600 s",)
    assert compare("Python 3.10", "Python 3.1").reasons == ("version: 3.10 vs 3.1",)
    assert compare("see OPS-12", "see OPS-13").reasons == ("identifier: ops-12 vs ops-13",)
    assert compare("we cache it", "we never cache it").reasons == ("negation: only in the second",)
    assert not compare("2 min", "120 seconds").blocks and not compare("1.5 GB", "1536 MB").blocks


def test_more_detail_on_one_side_is_not_a_difference() -> None:
    assert not compare("timeout is 600 s", "timeout is 600 s, up from 120 s in lb.tf").blocks
    # "10k" is a number (ten thousand), "3.5x" a quantity.
    assert facts("10k requests at 3.5x the usual rate") == {
        "quantity": {"number:10000", "times:3.5"},
        "version": set(),
        "identifier": set(),
    }


def test_a_number_reads_every_way_it_can_be_written() -> None:
    # English and Spanish marks: "1,500" and "1.500" are 1500 or 1.5; "1,5" is 1.5.
    assert not compare("1,500 ms", "1.5 s").blocks and not compare("1,500 ms", "1500 ms").blocks
    assert not compare("un límite de 1,5 GiB", "a limit of 1536 MiB").blocks
    assert compare("1,5 GiB", "2 GiB").reasons == ("quantity: 1.61061e+09 B vs 2.14748e+09 B",)
    # A duration in two units is one duration.
    assert not compare("takes 1 min 15 s", "takes 75 seconds").blocks
    assert compare("takes 1 min 15 s", "takes 80 s").reasons == ("quantity: 75 s vs 80 s",)
    assert (
        not compare("90 seconds", "un minuto y medio").blocks
        and not compare("an hour and a half", "90 min").blocks
    )
    # "one" and "una" count only before a unit: alone they are a pronoun or an article.
    assert facts("una retro quincenal, one that matters")["quantity"] == set()
    assert facts("una hora")["quantity"] == {"time:3600"}
    # So does "once" (Spanish eleven): "once they are older" is not a number.
    assert facts("deleted once they are older")["quantity"] == set()
    assert facts("once horas")["quantity"] == {"time:39600"}
    # 10k is ten thousand.
    assert not compare("batches of 10k rows", "lotes de 10.000 filas").blocks


def test_the_same_version_line_and_the_same_name_written_otherwise_are_no_difference() -> None:
    assert not compare("React 18.2", "react@18.2.0").blocks and not compare("Terraform 1.6.x", "1.6").blocks
    assert compare("React 18.2", "React 18.3.1").blocks
    assert not compare("p99 under 250 ms", "99th-percentile under 0.25 s").blocks
    assert compare("p99 under 250 ms", "p95 under 250 ms").blocks
    assert not compare("SEV1 pages on-call", "SEV1s page on-call").blocks
    # A version written with v or with a product's name, and the bare number: one version.
    assert (
        not compare("Node v20", "Node.js 20").blocks
        and not compare("Django 4.2 LTS", "the 4.2.x line").blocks
    )
    assert compare("Node v20", "Node.js 22").reasons == ("version: 20 vs 22",)
    # Upper-case names joined by hyphens are identifiers.
    assert compare("policy EP-LEDGER", "policy EP-INVENTORY").reasons == (
        "identifier: ep-ledger vs ep-inventory",
    )
    assert compare("the `api_client` fixture", "the `admin_client` fixture").reasons == (
        "identifier: api_client vs admin_client",
    )


def test_the_verdict_says_which_side_states_a_value_or_a_negation_the_other_lacks() -> None:
    verdict = compare("timeout is 600 s", "timeout is 600 s, up from 120 s in lb.tf")
    assert (
        not verdict.blocks and verdict.values_only_in == (False, True) and verdict.negated == (False, False)
    )
    verdict = compare("we cache it for 5 min", "we never cache it")
    assert verdict.values_only_in == (True, False) and verdict.negated == (False, True)
    assert verdict.blocks and not verdict.values_conflict
    assert compare("cuts at 120 s", "cuts at 600 s").values_conflict


def test_sibling_names_are_different_things_and_english_compounds_are_no_names() -> None:
    assert compare("checkout-api runs 4 replicas", "checkout-worker runs 4 replicas").reasons == (
        "identifier: checkout-api vs checkout-worker",
    )
    assert compare("the X-Acme-Tenant header", "the X-Acme-Trace-Id header").blocks
    # The same name in another form, and words joined by a hyphen, are no family.
    assert not compare("rate-limiting per key", "the rate-limit per key").blocks
    assert not compare("SSO-only sign-in", "SSO-based login").blocks
