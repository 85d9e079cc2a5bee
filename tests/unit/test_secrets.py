"""No credential is stored or sent to a model in clear: episodes are redacted with a typed
placeholder, remember refuses, and look-alikes (hashes, UUIDs, inline images) are left alone.

The corpora are tests/data/secrets.jsonl (36 made-up credentials of 20 kinds, in prose, tool
output, .env, YAML, JSON, headers and URLs) and tests/data/secret_lookalikes.jsonl (34 strings that
look like them and are not); tools/evals/secrets_check.py prints the detection and false-positive rates.
Through the hooks, the daemon and distillation: tests/daemon/test_secrets.py.
"""

from __future__ import annotations

import json
import re

import pytest

from mnemo.errors import SecretError
from mnemo.secrets import find_secrets, redact, refuse_secrets
from tests.helpers import DATA, SECRETS, leaked

LOOKALIKES: list[dict[str, str]] = [
    json.loads(line) for line in (DATA / "secret_lookalikes.jsonl").read_text().splitlines()
]
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def test_the_corpus_holds_at_least_30_secrets_in_prose_and_tool_output_and_30_look_alikes() -> None:
    assert len(SECRETS) >= 30 and len(LOOKALIKES) >= 30
    places = {case["where"] for case in SECRETS}
    assert {"prose", "tool", "env", "url", "header"} <= places


@pytest.mark.parametrize("case", SECRETS, ids=[f"{c['kind']}-{c['where']}" for c in SECRETS])
def test_each_secret_is_replaced_by_a_placeholder_naming_its_kind(case: dict[str, str]) -> None:
    out = redact(case["text"])
    assert not leaked(out), out
    assert PLACEHOLDER.search(out)
    assert redact(out) == out  # redacting twice changes nothing


@pytest.mark.parametrize(
    "case",
    [c for c in LOOKALIKES if c["kind"].split("-")[0] in {"git", "sha256", "md5", "uuid", "docker", "base64"}]
    + [c for c in LOOKALIKES if c["kind"] in {"placeholder-env", "placeholder-template", "env-reference"}],
    ids=lambda c: c["kind"],
)
def test_hashes_uuids_inline_images_and_references_to_a_secret_are_left_as_they_are(
    case: dict[str, str],
) -> None:
    assert redact(case["text"]) == case["text"]


def test_the_text_around_a_secret_is_kept() -> None:
    assert (
        redact("DATABASE_URL=postgres://shop:Pg7hQ2xZ9k!9@db.internal:5432/shop")
        == "DATABASE_URL=postgres://shop:[REDACTED:password]@db.internal:5432/shop"
    )
    assert (
        redact("the staging admin password is Tr0ub4dor&3xk9 — don't share it")
        == "the staging admin password is [REDACTED:password] — don't share it"
    )
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    assert redact(f"$ cat ~/.ssh/deploy\n{key}\n$ ls") == "$ cat ~/.ssh/deploy\n[REDACTED:private-key]\n$ ls"


def test_a_refusal_names_the_kind_and_the_place_never_the_value() -> None:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    with pytest.raises(SecretError) as raised:
        refuse_secrets(f"release notes\nuse {token} for the bot", "content")
    message = str(raised.value)
    assert token not in message and "ghp_" not in message
    assert "content:" in message and "github-token" in message and "line 2" in message
    refuse_secrets("we deploy on Thursdays; the key is in the team vault", "content")  # no error
    assert find_secrets("") == []


def test_what_is_said_of_a_password_is_not_one_and_a_password_still_is() -> None:
    """A rotation policy or where a password is kept is what mnemo asks people to remember
    instead of the password; a lower-case participle after "is" names none."""
    for said in (
        "The Postgres app user password is rotated every 90 days.",
        "The DB password is stored in 1Password.",
        "La contraseña de la base es rotada cada 90 días.",
    ):
        assert find_secrets(said) == [], said
    for password in ("the password is Starred!x", "the password is hunter22", 'the password is "rotated"'):
        assert [found.kind for found in find_secrets(password)] == ["password"], password
