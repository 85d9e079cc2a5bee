"""The foundation's lexical ranking: tokens, query terms, BM25 against a brute-force oracle."""

from __future__ import annotations

import math

from mnemo.recall import query_terms, rank_bm25, tokenize


def test_identifiers_keep_their_whole_form_and_their_parts() -> None:
    assert tokenize("Set timeout_sec in lb.tf to 600") == [
        "set", "timeout_sec", "timeout", "sec", "in", "lb.tf", "lb", "tf", "to", "600",
    ]  # fmt: skip


def test_query_terms_drop_stopwords_in_english_and_spanish() -> None:
    assert set(query_terms("¿Por qué el gateway corta a los 120 s?")) == {"gateway", "corta", "120", "s"}
    assert set(query_terms("why is the gateway timeout 600?")) == {"gateway", "timeout", "600"}


def _oracle(terms: list[str], docs: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    tokenized = [tokenize(d) for d in docs]
    avg = sum(len(t) for t in tokenized) / len(tokenized)
    scores = []
    for tokens in tokenized:
        score = 0.0
        for term in terms:
            df = sum(1 for other in tokenized if term in other)
            tf = tokens.count(term)
            if tf:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(tokens) / avg))
        scores.append(score)
    return scores


def test_bm25_matches_a_brute_force_oracle_and_drops_non_matches() -> None:
    docs = [
        "the gateway timeout was raised to 600 s",
        "deploys happen on thursday",
        "gateway gateway logs rotate daily",
        "the load balancer cut streams at 120 s",
    ]
    terms = ["gateway", "timeout", "120"]
    expected = _oracle(terms, docs)
    ranked = rank_bm25(terms, docs, corpus_size=len(docs))
    assert [s.index for s in ranked] == sorted(
        (i for i, s in enumerate(expected) if s > 0), key=lambda i: -expected[i]
    )
    for scored in ranked:
        assert math.isclose(scored.score, expected[scored.index], rel_tol=1e-9)
    assert 1 not in [s.index for s in ranked]


def test_bm25_with_no_terms_or_documents_is_empty() -> None:
    assert rank_bm25([], ["a"], corpus_size=1) == []
    assert rank_bm25(["a"], [], corpus_size=0) == []


def test_a_question_of_only_stopwords_still_searches_its_words() -> None:
    assert set(query_terms("what is it?")) == {"what", "is", "it"}
