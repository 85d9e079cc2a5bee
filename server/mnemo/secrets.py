"""Credentials found in text: redacted from episodes, refused in memories.

Two detectors, run over every line that could hold one:

- detect-secrets' plugins (Yelp, maintained): vendor formats (AWS, GitHub, GitLab, Slack,
  Stripe, Twilio, SendGrid, npm, PyPI, OpenAI, Azure storage, JWTs…), secret-named assignments
  (``password = …``), basic-auth URLs and long base64 strings of high entropy, with its own
  heuristic filters (UUIDs, templated values, sequential strings, indirect references). Its
  hex-entropy and public-IP plugins are left out: a hex string of high entropy is as likely a
  commit or a checksum, and an address is not a credential (``tools/evals/secrets_check.py`` prints the
  false-positive rate over look-alikes either way).
- Rules of our own for what it misses or only half-marks: whole private-key blocks (it flags the
  BEGIN line), Google and Anthropic API keys, GitLab's newer token kinds, ``Authorization``
  headers, passwords said in prose ("the password is …", "la contraseña es …") and ``.env`` lines
  whose name says secret.

detect-secrets reports a value, sometimes only part of the token (``ghp`` of a GitHub token, a
JWT without its signature): the span redacted is widened to the whole token around it.

Redacted text keeps a typed placeholder, ``[REDACTED:github-token]``, so a reader (or a model)
still knows a credential was there and of what kind; redacting twice changes nothing. This is the
only module importing ``detect_secrets``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters import heuristic
from detect_secrets.plugins.base import BasePlugin
from detect_secrets.settings import default_settings

from mnemo.errors import InputError, SecretError
from mnemo.injected import refuse_unfit
from mnemo.private import refuse_private, remove_private

PLACEHOLDER = "[REDACTED:{kind}]"
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_LEFT_OUT = {"IPPublicDetector", "HexHighEntropyString"}
# detect-secrets' type names → our placeholder kinds.
_KINDS = {
    "AWS Access Key": "aws-key",
    "Artifactory Credentials": "artifactory-token",
    "Azure Storage Account access key": "azure-storage-key",
    "Base64 High Entropy String": "high-entropy-string",
    "Basic Auth Credentials": "password",
    "Cloudant Credentials": "cloudant-password",
    "Discord Bot Token": "discord-token",
    "GitHub Token": "github-token",
    "GitLab Token": "gitlab-token",
    "IBM Cloud IAM Key": "ibm-cloud-key",
    "IBM COS HMAC Credentials": "ibm-cos-key",
    "JSON Web Token": "jwt",
    "Secret Keyword": "secret",
    "Mailchimp Access Key": "mailchimp-key",
    "NPM tokens": "npm-token",
    "OpenAI Token": "openai-key",
    "Private Key": "private-key",
    "PyPI Token": "pypi-token",
    "SendGrid API Key": "sendgrid-key",
    "Slack Token": "slack-token",
    "SoftLayer Credentials": "softlayer-key",
    "Square OAuth Secret": "square-secret",
    "Stripe Access Key": "stripe-key",
    "Telegram Bot Token": "telegram-token",
    "Twilio API Key": "twilio-key",
}
# Characters that end a widened token: whitespace, quotes, and what separates a credential from
# its neighbours in URLs, headers and assignments (a password inside ``user:pass@host`` stays
# between ``:`` and ``@``).
_TOKEN_END = frozenset(" \t\r\n\"'`,;:@()<>[]{}|\\")
# A name that says secret (the value after it is redacted): found by its keyword, anywhere in it.
_SECRET_NAME = (
    r"(?:passw(?:or)?d|passphrase|pwd|secret|token|api[_-]?key|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?|signing[_-]?key)[A-Za-z0-9_.-]*"
)
# Values that name where a secret is rather than being one.
_NOT_A_VALUE = re.compile(
    r"""^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|<[^>]*>|%\(?[A-Za-z_]+\)?s?|\*+|x{3,}|X{3,}|\.{3,}|"""
    r"""(?:true|false|null|none|nil|undefined|required|optional|changeme|redacted|example|"""
    r"""os\.environ.*|process\.env.*|env\(.*|getenv\(.*|secrets\..*|vault:.*|op://.*))$""",
    re.IGNORECASE,
)
# Credentials recognised by their own shape: one pass over the text for all of them.
_TOKENS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s:,-]*)",
    ),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b"),
    ("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|ft|oas|cbt|imt|agent)-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-webhook", r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"),
    ("stripe-key", r"\b[rsp]k_(?:live|test)_[0-9A-Za-z]{20,}"),
    ("aws-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
)
_TOKEN_RE = re.compile("|".join(f"(?P<t{i}>{pattern})" for i, (_, pattern) in enumerate(_TOKENS)))
# Credentials recognised by what names them: the value (group 1) is redacted, the name kept.
_NAMED: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "authorization",
        re.compile(
            r"(?i)\bauthorization\s*[:=]\s*(?:bearer|basic|token|digest)?\s*([A-Za-z0-9._~+/=-]{12,})"
        ),
    ),
    ("password", re.compile(r"\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@]+:([^\s@/]{3,})@[^\s]")),
    (
        "password",
        re.compile(
            r"(?i)\b(?:password|passphrase|passwd|contraseña|clave|mot de passe)"
            r"(?:(?:\s+[^\s.:=]+){0,5}?\s+(?:is|was|es|era|est)|\s*[:=])\s+[\"'`]?"
            # Not what is said of it ("is rotated every 90 days", "is stored in 1Password", "es
            # rotada"): a lower-case participle names no password.
            r"(?!(?-i:[a-z]+(?:ed|ado|ada|ido|ida))(?:[.,;:]?(?:\s|$)))([^\s\"'`]{6,})"
        ),
    ),
    ("secret", re.compile(r"(?i)" + _SECRET_NAME + r"[\"']?\s*[:=]\s*[\"']?([^\s\"'#,;]{8,})")),
)
# What a long base64 run follows when it is a checksum or inline data, not a credential.
_CHECKSUM_PREFIX = re.compile(r"(?:sha(?:1|224|256|384|512)-|;base64,)[A-Za-z0-9+/=_-]{0,8}$")
_CHUNK_CHARS = 4_000
_KEYWORD_GATE = re.compile(r"key|pass|pwd|secret|contrase|token|auth", re.IGNORECASE)
# A line worth handing to detect-secrets: it holds a long token or a word that names a secret.
_WORTH_SCANNING = re.compile(
    r"[A-Za-z0-9+/=_.-]{16,}|://[^\s]*@|passw|secret|token|key|auth|pwd|credential|BEGIN", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Finding:
    """A credential's span in the text and its kind (``github-token``, ``password`` …)."""

    kind: str
    start: int
    end: int


@cache
def _plugins() -> tuple[tuple[BasePlugin, ...], BasePlugin]:
    """The plugins that look for a credential's shape, and the keyword detector (``password =
    …``): its patterns let a value run past the end of a line, so it reads one line at a time,
    and only lines with a keyword (it costs more than all the others together)."""
    mapping: Mapping[str, type[BasePlugin]] = get_mapping_from_secret_type_to_class()
    chosen = [cls() for cls in mapping.values() if cls.__name__ not in _LEFT_OUT]
    keyword = next(p for p in chosen if type(p).__name__ == "KeywordDetector")
    return tuple(p for p in chosen if p is not keyword), keyword


def _is_filtered(value: str, line: str, plugin: BasePlugin, is_keyword: bool) -> bool:
    """detect-secrets' own heuristic filters (the ones its scanner applies by default), cheap
    ones first; the indirect-reference one (``secret = get_secret()``) is about keywords."""
    return (
        heuristic.is_not_alphanumeric_string(value)
        or heuristic.is_prefixed_with_dollar_sign(value)
        or heuristic.is_potential_uuid(value)
        or heuristic.is_sequential_string(value)
        or heuristic.is_templated_secret(value)
        or heuristic.is_likely_id_string(value, line, plugin)
        or (is_keyword and heuristic.is_indirect_reference(line))
    )


def _widen(line: str, start: int, end: int) -> tuple[int, int]:
    while start > 0 and line[start - 1] not in _TOKEN_END:
        start -= 1
    while end < len(line) and line[end] not in _TOKEN_END:
        end += 1
    return start, end


def _chunks(text: str) -> Iterator[tuple[int, str]]:
    """``text`` cut at line ends into pieces of about ``_CHUNK_CHARS``, with their offsets: the
    shape plugins read a piece per call (a call per line and plugin costs more than the search)."""
    at = 0
    while at < len(text):
        end = text.find("\n", min(at + _CHUNK_CHARS, len(text)))
        end = len(text) if end < 0 else end + 1
        yield at, text[at:end]
        at = end


def _library_findings(text: str) -> Iterator[Finding]:
    worth = [(at, chunk) for at, chunk in _chunks(text) if _WORTH_SCANNING.search(chunk)]
    if not worth:  # most episodes: detect-secrets' settings (costly to enter) are not needed
        return
    shape_plugins, keyword = _plugins()
    with default_settings():
        for chunk_at, chunk in worth:
            pieces: list[tuple[int, str, BasePlugin]] = [(chunk_at, chunk, p) for p in shape_plugins]
            if _KEYWORD_GATE.search(chunk):
                line_at = chunk_at
                for line in chunk.splitlines(keepends=True):
                    if _KEYWORD_GATE.search(line):
                        pieces.append((line_at, line, keyword))
                    line_at += len(line)
            for at, piece, plugin in pieces:
                for found in plugin.analyze_line(filename="episode", line=piece, line_number=0):
                    yield from _located(found.type, found.secret_value or "", at, piece, plugin)


def _located(secret_type: str, value: str, at: int, piece: str, plugin: BasePlugin) -> Iterator[Finding]:
    """Where a value detect-secrets reported sits in ``piece`` (which starts at ``at``), widened
    to the whole token; nothing when its filters, or ours, say it is no credential."""
    is_keyword = secret_type == "Secret Keyword"
    if len(value) < 3 or "\n" in value or _is_filtered(value, piece, plugin, is_keyword):
        return
    if is_keyword and _NOT_A_VALUE.match(value.strip("\"'")):
        return
    kind = _KINDS.get(secret_type, "secret")
    found = piece.find(value)
    while found >= 0:
        start, end = _widen(piece, found, found + len(value))
        if not (kind == "high-entropy-string" and _CHECKSUM_PREFIX.search(piece, 0, start + 8)):
            yield Finding(kind, at + start, at + end)
        found = piece.find(value, found + len(value))


def _rule_findings(text: str) -> Iterator[Finding]:
    for match in _TOKEN_RE.finditer(text):
        kind = _TOKENS[int(match.lastgroup[1:])][0]  # type: ignore[index]
        start, end = match.span()
        if kind == "private-key":
            end = start + len(match.group().rstrip())
        yield Finding(kind, start, end)
    for kind, pattern in _NAMED:
        for match in pattern.finditer(text):
            value = match.group(1)
            if not _NOT_A_VALUE.match(value):
                yield Finding(kind, *match.span(1))


def find_secrets(text: str) -> list[Finding]:
    """Every credential in ``text``, by position; overlapping findings merged (the longer one's
    kind kept). A placeholder left by an earlier redaction is not a credential."""
    if not text:
        return []
    placeholders = [m.span() for m in _PLACEHOLDER_RE.finditer(text)]
    found = sorted(
        (
            f
            for f in [*_rule_findings(text), *_library_findings(text)]
            if not any(f.start < end and start < f.end for start, end in placeholders)
        ),
        key=lambda f: (f.start, -(f.end - f.start)),
    )
    merged: list[Finding] = []
    for finding in found:
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Finding(last.kind, last.start, max(last.end, finding.end))
        else:
            merged.append(finding)
    return merged


def redact(text: str) -> str:
    """``text`` with every credential replaced by ``[REDACTED:<kind>]``."""
    findings = find_secrets(text)
    if not findings:
        return text
    parts: list[str] = []
    at = 0
    for finding in findings:
        parts.append(text[at : finding.start])
        parts.append(PLACEHOLDER.format(kind=finding.kind))
        at = finding.end
    parts.append(text[at:])
    return "".join(parts)


def refuse_secrets(text: str, field: str) -> None:
    """Raise :class:`SecretError` when ``text`` holds a credential (naming its kind and where it
    is, never the value)."""
    findings = find_secrets(text)
    if not findings:
        return
    kinds = ", ".join(dict.fromkeys(f.kind for f in findings))
    first = findings[0]
    line = text.count("\n", 0, first.start) + 1
    raise SecretError(
        f"{field}: holds what looks like a credential ({kinds}; first on line {line}, "
        f"character {first.start - (text.rfind(chr(10), 0, first.start) + 1) + 1}). mnemo never "
        "stores credentials: remove it, or say where it is kept instead (e.g. 'the deploy key is "
        "in the team vault under deploy/prod')"
    )


def refuse_unkeepable(text: str, field: str) -> None:
    """Refuse what is written to be kept (a memory, a kept entry, a reason) when it holds what
    mnemo never keeps: a private span (:mod:`mnemo.private`) or a credential."""
    refuse_private(text, field)
    refuse_secrets(text, field)


def why_not_kept(fields: Iterable[tuple[str, str]]) -> str:
    """Why the first of ``fields`` (name, text) that may not be kept may not — mnemo's own tags or
    control characters (:func:`mnemo.injected.refuse_unfit`), a private span, a credential — or ''
    when all may: for imports, which report each record rather than fail on one."""
    try:
        for name, text in fields:
            refuse_unfit(text, name)
            refuse_unkeepable(text, name)
    except InputError as exc:
        return str(exc)
    return ""


class SecretRedactor:
    """The :class:`mnemo.episodes.Redactor` the daemon uses: private spans removed
    (:mod:`mnemo.private`), then credentials redacted."""

    def redact(self, text: str) -> str:
        return redact(remove_private(text))
