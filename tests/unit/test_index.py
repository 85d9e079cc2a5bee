"""The in-RAM index, piece by piece, against brute-force oracles and hand-checked cases."""

from __future__ import annotations

import math
import random
import string
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import snowballstemmer

from mnemo.index import engine as engine_module
from mnemo.index import lexical
from mnemo.index.codes import quantise
from mnemo.index.documents import CLOSED, CURRENT, Document, SearchQuery
from mnemo.index.engine import SearchIndex
from mnemo.index.entities import EntityMatcher
from mnemo.index.lexical import K1, B, LexicalIndex
from mnemo.index.query import Asked, analyse
from mnemo.index.snapshot import ListsSnapshot
from mnemo.index.text import Language, query_terms, stem, terms, tokens
from mnemo.index.vectors import VectorIndex
from mnemo.index.vocabulary import Vocabulary
from tests.helpers import frequent_thread_switches

NOW = datetime(2026, 11, 30, 15, 0, tzinfo=UTC)  # a Monday
WORDS = "gateway timeout deploy thursday tuesday postgres replica cache index lb.tf v2 retry queue".split()


def _rows_of(keys: list[str]) -> Callable[[list[str]], npt.NDArray[np.int64]]:
    """What an index gives a snapshot: each key's row among ``keys``, -1 for another key."""
    row = {k: r for r, k in enumerate(keys)}
    return lambda asked: np.asarray([row.get(k, -1) for k in asked], dtype=np.int64)


def test_identifiers_keep_their_whole_form_and_their_parts_and_accents_fold() -> None:
    assert tokens("Set timeout_sec in lb.tf to 600") == [
        "set", "timeout_sec", "timeout", "sec", "in", "lb.tf", "lb", "tf", "to", "600",
    ]  # fmt: skip
    assert tokens("¿Por qué Desplegué?") == ["por", "que", "desplegue"]


def test_stemming_follows_the_language_of_the_text() -> None:
    assert terms("deploys deployed deploying") == ["deploy", "deploy", "deploy"]
    spanish = terms("desplegamos los despliegues")
    assert spanish[0].startswith("despleg") and len(spanish) == 2
    assert query_terms("¿Por qué usábamos Postgres?")[1] is Language.SPANISH
    assert query_terms("why did we use postgres?") == (["use", "postgr"], Language.ENGLISH)


def test_words_stemmed_by_several_threads_at_once_each_get_their_own_stem() -> None:
    """The daemon indexes in worker threads while recalls analyse questions in others: a word's
    stem must not depend on what another thread stems at the same moment."""
    rng = random.Random(3)
    suffixes = ("ing", "ed", "ations", "ness", "ies", "ement", "ly", "s")
    # Words no other test stems, so that each is stemmed here, not read from the cache.
    words = [
        "zq" + "".join(rng.choices(string.ascii_lowercase, k=6)) + rng.choice(suffixes) for _ in range(3_000)
    ]
    english = snowballstemmer.stemmer("english")  # this test's own, used by this thread alone
    expected = {w: english.stemWord(w) for w in words}

    def stem_all(k: int) -> dict[str, str]:
        return {w: stem(w, Language.ENGLISH) for w in (words if k % 2 else reversed(words))}

    with frequent_thread_switches(), ThreadPoolExecutor(4) as pool:
        stemmed = list(pool.map(stem_all, range(4)))
    assert all(found == expected for found in stemmed)


def _bm25_oracle(query: list[str], docs: list[list[str]]) -> list[float]:
    average = sum(len(d) for d in docs) / len(docs)
    dfs = {term: sum(1 for doc in docs if term in doc) for term in dict.fromkeys(query)}
    out = []
    for doc in docs:
        score = 0.0
        for term, df in dfs.items():
            tf = doc.count(term)
            if tf:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / average))
        out.append(score)
    return out


def _random_documents(seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(rng.randint(1, 12))] for _ in range(6_000)]


def _assert_scores_match_the_oracle(index: LexicalIndex, docs: list[list[str]]) -> None:
    for query in (["gateway"], ["deploy", "thursday", "v2"], ["lb.tf", "retry", "unknown-word"]):
        rows, scores = index.score(query)
        expected = _bm25_oracle(query, docs)
        assert sorted(rows.tolist()) == [i for i, s in enumerate(expected) if s > 0]
        for row, score in zip(rows.tolist(), scores.tolist(), strict=True):
            assert score == pytest.approx(expected[row], rel=1e-4)


def test_bm25_matches_a_brute_force_oracle_across_incremental_merges() -> None:
    docs = _random_documents(7)
    index = LexicalIndex()
    index.add(docs[:1_000])  # the base segment
    for start in range(1_000, 6_000, 250):  # recent segments, merged past a fraction of the base
        index.add(docs[start : start + 250])
    _assert_scores_match_the_oracle(index, docs)


def test_bm25_after_a_bulk_load_with_writes_between_its_pages_matches_the_oracle() -> None:
    docs = _random_documents(8)
    index = LexicalIndex()
    index.add(docs[:1_000], bulk=True)  # the first page is the base
    for start in range(1_000, 6_000, 500):
        index.add(docs[start : start + 499], bulk=True)
        index.add([docs[start + 499]])  # a write that arrives during the load: searchable at once
        assert index.score(docs[start + 499][:1])[0].max() == start + 499
    index.finish_bulk()
    _assert_scores_match_the_oracle(index, docs)


def test_bm25_over_many_identifiers_matches_the_oracle_across_the_vocabularys_merges() -> None:
    """A term of its own in every document, as tickets and hashes are: 60,000 terms, the
    vocabulary's arrays merged many times, in a bulk load and in live writes after it."""
    rng = random.Random(9)
    docs = [
        [rng.choice(WORDS) for _ in range(rng.randint(1, 6))] + [f"ops-{i}", f"{i}"] for i in range(30_000)
    ]
    index = LexicalIndex()
    for start in range(0, 25_000, 5_000):
        index.add(docs[start : start + 5_000], bulk=True)
    index.finish_bulk()
    for start in range(25_000, 30_000, 100):
        index.add(docs[start : start + 100])
    _assert_scores_match_the_oracle(index, docs)
    for i in (0, 4_999, 17_321, 29_999):
        assert index.score([f"ops-{i}"])[0].tolist() == [i]


def test_the_vocabulary_gives_each_term_one_id_in_order_of_first_sight() -> None:
    vocabulary = Vocabulary()
    terms = [f"term-{i}" for i in range(20_000)]
    assert vocabulary.ids_of([*terms[:10_000], *terms[:10]]).tolist() == [*range(10_000), *range(10)]
    assert [vocabulary.id_of(t) for t in terms[10_000:]] == list(range(10_000, 20_000))
    assert vocabulary.ids_of(terms[::-1]).tolist() == list(range(20_000))[::-1]
    assert vocabulary.get("never seen") is None and len(vocabulary) == 20_000
    vocabulary.compact()
    assert vocabulary.get("term-12345") == 12_345 and vocabulary.ids_of([]).tolist() == []


def test_vector_search_is_exact_when_small_and_respects_the_filter_through_lists() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((3_000, 32)).astype(np.float32)
    codes = quantise(vectors).astype(np.float32)
    unit = codes / np.linalg.norm(codes, axis=1, keepdims=True)
    for exact_max_rows in (10_000, 500):  # exact search; then through inverted lists
        index = VectorIndex(32, exact_max_rows=exact_max_rows)
        index.put(np.arange(3_000), vectors, [f"g{i % 8}" for i in range(3_000)])  # 8: merged to scan
        query = vectors[42] + 0.05 * rng.standard_normal(32).astype(np.float32)
        rows, cosines = index.search(query, 10)
        q = quantise(query.reshape(1, -1))[0].astype(np.float32)
        truth = np.argsort(-(unit @ (q / np.linalg.norm(q))), kind="stable")[:10]
        assert rows[0] == 42 == truth[0]
        if exact_max_rows > 3_000:  # through lists: the probed lists' best (a test below), not all
            assert set(rows.tolist()) == set(truth.tolist())
        assert np.all(np.diff(cosines) <= 1e-6)
        allowed = np.zeros(3_000, dtype=bool)
        allowed[::3] = True  # a third of the rows: three times the lists read, then filtered
        rows, _ = index.search(query, 10, allowed)
        assert len(rows) == 10 and all(r % 3 == 0 for r in rows)
        allowed[:] = False
        allowed[[7, 8, 9]] = True  # few rows: searched exactly
        rows, _ = index.search(query, 10, allowed)
        assert sorted(rows.tolist()) == [7, 8, 9]
        index.put(np.asarray([3_000]), query.reshape(1, -1), ["g9"])  # a put after a search
        assert index.search(query, 1)[0].tolist() == [3_000]


def test_vector_search_narrowed_to_groups_scans_them_exactly() -> None:
    """Rows are stored by group (namespace); a search given its groups is exact within them."""
    rng = np.random.default_rng(8)
    vectors = rng.standard_normal((4_000, 24)).astype(np.float32)
    groups = [f"workspace:{i % 8}" for i in range(4_000)]
    codes = quantise(vectors).astype(np.float32)
    unit = codes / np.linalg.norm(codes, axis=1, keepdims=True)
    query = rng.standard_normal(24).astype(np.float32)
    q = quantise(query.reshape(1, -1))[0].astype(np.float32)
    similarity = unit @ (q / np.linalg.norm(q))
    index = VectorIndex(24, exact_max_rows=1_200)  # lists over everything; groups of 500
    index.put(np.arange(2_000), vectors[:2_000], groups[:2_000])
    index.put(np.arange(2_000, 4_000), vectors[2_000:], groups[2_000:])  # groups grow
    row = np.arange(4_000)
    in_groups = np.isin(row % 8, [2, 5])
    # All allowed; two thirds (over-asked, then dropped); a third and few (gathered, then scanned).
    for allowed in (
        in_groups,
        in_groups & (row % 3 != 0),
        in_groups & (row % 3 == 0),
        in_groups & (row % 50 == 0),
    ):
        rows, cosines = index.search(query, 20, allowed, ["workspace:2", "workspace:5", "nowhere"])
        inside = np.flatnonzero(allowed)
        truth = inside[np.argsort(-similarity[inside], kind="stable")[:20]]
        assert rows.tolist() == truth.tolist()
        np.testing.assert_allclose(cosines, similarity[truth], atol=1e-5)
    assert index.search(query, 5, None, ["nowhere"])[0].tolist() == []
    rows, _ = index.search(query, 5, None, ["workspace:2"])
    np.testing.assert_allclose(index.cosines(rows, query), similarity[rows], atol=1e-5)
    mixed = rng.permutation(4_000)[:300]  # rows of every group, in no order: codes come back in order
    np.testing.assert_allclose(index.cosines(mixed, query), similarity[mixed], atol=1e-5)


def test_entities_match_names_and_aliases_on_word_boundaries_longest_first() -> None:
    matcher = EntityMatcher(
        [
            ("postgresql", ["PostgreSQL", "postgres", "pg"]),
            ("api gateway", ["API gateway"]),
            ("gateway", ["gateway"]),
            ("señal", ["Señal"]),
        ]
    )
    assert matcher.find("Why did we pick PG for the API  Gateway?") == ["postgresql", "api gateway"]
    assert matcher.find("upgrade the pgbouncer") == []
    assert matcher.find("la senal y el gateway") == ["señal", "gateway"]


@pytest.mark.parametrize(
    ("question", "day", "days"),
    [
        ("what did we decide yesterday?", "2026-11-29", 1),
        ("¿qué pasó ayer?", "2026-11-29", 1),
        ("what did we decide last Tuesday?", "2026-11-24", 1),
        ("¿qué decidimos el martes pasado?", "2026-11-24", 1),
        ("what broke on 2026-11-02?", "2026-11-02", 1),
        ("what happened on 24 May 2023", "2023-05-24", 1),
        ("¿qué pasó el 3 de diciembre?", "2025-12-03", 1),  # the last 3 December before now
        ("what did we ship 3 days ago", "2026-11-27", 1),
        ("¿qué hicimos hace dos días?", "2026-11-28", 1),
        ("what did we do last week", "2026-11-23", 7),
        ("what changed today", "2026-11-30", 1),
    ],
)
def test_dates_are_resolved_against_the_questions_time(question: str, day: str, days: int) -> None:
    found = analyse(question, NOW).dates
    assert found is not None
    assert found.start == datetime.fromisoformat(day).replace(tzinfo=UTC)
    assert found.end - found.start == timedelta(days=days)


@pytest.mark.parametrize(
    ("question", "asked", "is_history"),
    [
        ("why did we move the deploy to Thursday?", Asked.WHY, False),
        ("¿por qué cambiamos el día de despliegue?", Asked.WHY, True),
        ("how do we rotate the keys?", Asked.HOW, False),
        ("¿cómo se rota la clave?", Asked.HOW, False),
        ("who owns the gateway?", Asked.WHO, False),
        ("¿quién decidió eso?", Asked.WHO, False),
        ("when do we deploy?", Asked.WHEN, False),
        ("¿cuándo desplegamos?", Asked.WHEN, False),
        ("where is the timeout set?", Asked.WHERE, False),
        ("¿dónde está el timeout?", Asked.WHERE, False),
        ("what database did we use before?", Asked.WHAT, True),
        ("¿qué base de datos usábamos antes?", Asked.WHAT, True),
        ("which cache did we use to run?", Asked.WHAT, True),
        # "before" / "antes" that only say when are not about the past.
        ("what do we run before deploying?", Asked.WHAT, False),
        ("¿cuánto dura el code freeze antes de un release?", None, False),
        ("what did we deploy on before that?", Asked.WHAT, True),
        ("deploy day", None, False),
    ],
)
def test_questions_say_which_w_they_ask_and_whether_they_ask_about_history(
    question: str, asked: Asked | None, is_history: bool
) -> None:
    analysis = analyse(question, NOW)
    assert analysis.asked is asked
    assert analysis.is_history is is_history


def _document(key: str, text: str, *, status: str = CURRENT, days_ago: int = 0, **kw: object) -> Document:
    return Document(
        key=key,
        owner=key,
        text=text,
        namespace=str(kw.pop("namespace", "workspace:app")),
        kind="decision",
        status=status,
        time=NOW - timedelta(days=days_ago),
        **kw,  # type: ignore[arg-type]
    )


def _search(index: SearchIndex, question: str, **kw: object) -> list[str]:
    analysis = analyse(question, NOW)
    query = SearchQuery(
        terms=analysis.terms,
        asked=analysis.asked,
        dates=analysis.dates,
        is_history=analysis.is_history,
        statuses=(CURRENT, CLOSED),
        **kw,  # type: ignore[arg-type]
    )
    return [r.key for r in index.search(query)]


def test_closed_memory_ranks_behind_current_unless_history_is_asked() -> None:
    index = SearchIndex()
    index.add(
        [
            _document("tuesday", "Deploys happen on Tuesday.", status=CLOSED, days_ago=20),
            _document(
                "thursday", "Deploys moved to Thursday because QA needs Wednesday to test the release."
            ),
        ]
    )
    assert _search(index, "what day do we deploy?") == ["thursday", "tuesday"]
    assert _search(index, "what day did we deploy before?") == ["tuesday", "thursday"]
    assert _search(index, "¿qué día hacíamos deploy antes?")[0] == "tuesday"


def test_a_date_in_the_question_picks_the_memory_of_that_day() -> None:
    index = SearchIndex()
    index.add(
        [
            _document(
                f"day{n}", f"We decided to change the retry policy of the queue (take {n}).", days_ago=n
            )
            for n in range(10)
        ]
    )
    assert _search(index, "what did we decide about the retry policy last Tuesday?")[0] == "day6"
    assert _search(index, "¿qué decidimos ayer sobre la política de reintentos del queue?")[0] == "day1"


def test_an_entity_alias_finds_its_memories_and_a_status_change_applies_at_once() -> None:
    index = SearchIndex()
    index.add(
        [
            _document(
                "db", "The primary database runs with two replicas.", entities=(("postgresql", "subject"),)
            ),
            _document("other", "The cache has two replicas as well."),
        ]
    )
    matcher = EntityMatcher([("postgresql", ["PostgreSQL", "pg"])])
    assert _search(index, "how many replicas does pg have?", entities=matcher.find("pg replicas"))[0] == "db"
    assert _search(index, "tell me about pg", entities=matcher.find("tell me about pg")) == ["db"]
    index.set_status("db", "forgotten")
    assert "db" not in _search(index, "how many replicas does pg have?", entities=["postgresql"])


def test_namespaces_and_excluded_sessions_narrow_the_search() -> None:
    index = SearchIndex()
    index.add(
        [
            _document("a", "gateway timeout is 600 s", namespace="workspace:a", session="s1"),
            _document("b", "gateway timeout is 30 s", namespace="workspace:b", session="s2"),
        ]
    )
    assert _search(index, "gateway timeout", namespaces=["workspace:b"]) == ["b"]
    assert _search(index, "gateway timeout", sessions_excluded=["s1"]) == ["b"]
    assert sorted(_search(index, "gateway timeout")) == ["a", "b"]


def test_hybrid_ranking_matches_a_brute_force_oracle_of_the_documented_score() -> None:
    """Build a random index and re-score every candidate by the formula, by hand."""
    rng = random.Random(11)
    np_rng = np.random.default_rng(11)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10))) for _ in range(400)]
    vectors = np_rng.standard_normal((400, 16)).astype(np.float32)
    index = SearchIndex()
    index.add([_document(f"k{i:03d}", t) for i, t in enumerate(texts)])
    index.put_vectors([f"k{i:03d}" for i in range(400)], vectors)
    query_vector = np_rng.standard_normal(16).astype(np.float32)
    analysis = analyse("gateway deploy on thursday", NOW)
    ranked = index.search(
        SearchQuery(terms=analysis.terms, vector=query_vector, statuses=(CURRENT,), limit=400)
    )
    docs = [terms(t) for t in texts]
    bm25 = _bm25_oracle(list(analysis.terms), docs)
    codes = quantise(vectors).astype(np.float32)
    q = quantise(query_vector.reshape(1, -1))[0].astype(np.float32)
    cosine = codes @ q / (np.linalg.norm(codes, axis=1) * np.linalg.norm(q))
    candidates = {r.key for r in ranked}
    rows = sorted(int(k[1:]) for k in candidates)
    high = max(cosine[rows])
    low = min(*cosine[rows], high - 0.1)
    best = max(bm25[r] for r in rows)
    expected = {f"k{r:03d}": 0.7 * (cosine[r] - low) / (high - low) + 0.3 * bm25[r] / best for r in rows}
    for hit in ranked:
        assert hit.score == pytest.approx(expected[hit.key], abs=1e-4)
    assert [h.key for h in ranked] == sorted(expected, key=lambda k: (-round(expected[k], 6), k))
    # Every document holding a query term is a candidate (the lexical side keeps its top 200).
    holding = [i for i, s in enumerate(bm25) if s > 0]
    top_lexical = sorted(holding, key=lambda i: -bm25[i])[:200]
    assert {f"k{i:03d}" for i in top_lexical} <= candidates
    assert Counter(h.key for h in ranked).most_common(1)[0][1] == 1


def test_a_turn_next_to_a_matching_turn_outranks_a_lone_look_alike() -> None:
    """Context: an answer sits next to the question it answers, in the same session."""
    index = SearchIndex()
    index.add(
        [
            _document("ask", "How long is the gateway timeout now?", session="s1", turn=4),
            _document("answer", "It is 600 s since the March incident.", session="s1", turn=5),
            _document("later", "Unrelated chatter about lunch.", session="s1", turn=7),
            _document("alone", "It is 30 s for the cache since March.", session="s2", turn=1),
        ]
    )
    ranked = index.search(SearchQuery(terms=analyse("gateway timeout", NOW).terms, limit=4))
    assert [r.key for r in ranked][:2] == ["ask", "answer"]
    answer = next(r for r in ranked if r.key == "answer")
    assert answer.components["lexical"] == 0.0 and answer.components["context"] == pytest.approx(0.3)
    assert "alone" not in [r.key for r in ranked] and "later" not in [r.key for r in ranked]


def test_vectors_put_twice_or_changed_keep_one_entry_per_row_in_the_lists() -> None:
    rng = np.random.default_rng(5)
    index = VectorIndex(16, exact_max_rows=100)
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    index.put(np.arange(300), vectors, ["g"] * 300)  # past 100 rows: lists
    index.put(np.asarray([7, 7]), vectors[[1, 2]], ["g", "g"])  # the same row twice; a changed vector
    rows, cosines = index.search(vectors[1], 3)
    assert set(rows[:2].tolist()) == {1, 7} and cosines[1] > 0.99  # row 7 now holds vector 1
    assert list(rows).count(7) == 1


def _bulk_loaded(keys: list[str], vectors: np.ndarray) -> VectorIndex:
    index = VectorIndex(16, exact_max_rows=100)
    index.put(np.arange(len(keys)), vectors, [f"g{i % 3}" for i in range(len(keys))], bulk=True)
    assert not index.has_lists and index.lists_bytes == 0  # a bulk load leaves the lists to settle_lists
    return index


def _each_row_finds_itself_first(index: VectorIndex, vectors: np.ndarray) -> bool:
    # Through the lists: a row filed under another's number would be found for another's vector.
    return all(index.search(vectors[row], 1)[0].tolist() == [row] for row in range(len(vectors)))


def test_a_bulk_load_in_pages_gives_back_its_spare_rows_once_settled() -> None:
    """Groups grow by a quarter at a time; what a load by pages left spare is RAM for nothing."""
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((1_001, 16)).astype(np.float32)
    index = VectorIndex(16, exact_max_rows=100)
    for start in range(0, 1_000, 70):  # as the daemon loads its store: page by page
        rows = np.arange(start, min(start + 70, 1_000))
        index.put(rows, vectors[rows], [f"g{i % 3}" for i in rows.tolist()], bulk=True)
    assert sum(len(g.rows) - g.size for g in index._groups) > 0  # growth left spare rows
    assert index.settle_lists(None) == "63 lists made over 1,000 rows"
    assert 0 < index.lists_bytes < 1_000 * 16  # less than the codes: the lists hold row numbers
    assert all(len(g.codes) == len(g.rows) == g.size for g in index._groups)
    assert _each_row_finds_itself_first(index, vectors[:1_000])
    index.put(np.asarray([1_000]), vectors[[1_000]], ["g0"])  # a trimmed group still grows
    assert index.search(vectors[1_000], 1)[0].tolist() == [1_000]


def test_a_search_through_lists_reads_the_probed_lists_and_more_when_filtered() -> None:
    """An unfiltered search finds exactly the best rows of the ``probes`` lists nearest to the
    question; a filter that leaves few of those rows makes it read more lists, not return less."""
    rng = np.random.default_rng(12)
    vectors = rng.standard_normal((2_000, 16)).astype(np.float32)
    index = VectorIndex(16, exact_max_rows=100)
    index.put(np.arange(2_000), vectors, ["g"] * 2_000)
    index.probes = 2
    lists = index._lists
    assert lists is not None and lists.count == 89
    query = rng.standard_normal(16).astype(np.float32)
    code = quantise(query.reshape(1, -1))[0]
    centroid_cosines = _unit(lists.centroids) @ _unit(code[None])[0]
    probed = np.argsort(-centroid_cosines)[:2]
    inside = np.flatnonzero(np.isin(lists.lists_of(np.arange(2_000)), probed))
    cosines_inside = _unit(quantise(vectors[inside])) @ _unit(code[None])[0]
    rows, _ = index.search(query, 5)
    assert set(rows.tolist()) == set(inside[np.argsort(-cosines_inside)[:5]].tolist())
    allowed = np.zeros(2_000, dtype=bool)
    allowed[np.setdiff1d(np.arange(0, 2_000, 2), inside)] = True  # none of the probed lists' rows
    rows, _ = index.search(query, 5, allowed)
    assert len(rows) == 5 and allowed[rows].all()


def test_lists_are_made_anew_once_the_rows_outgrow_what_they_were_trained_on() -> None:
    rng = np.random.default_rng(13)
    vectors = rng.standard_normal((2_100, 16)).astype(np.float32)
    index = VectorIndex(16, exact_max_rows=100)
    index.put(np.arange(101), vectors[:101], ["g"] * 101)  # just past the exact size: lists
    assert index._lists is not None and (index._lists.count, index._lists.trained_rows) == (20, 101)
    index.put(np.arange(101, 404), vectors[101:404], ["g"] * 303)  # four times: still the same
    assert index._lists.count == 20
    index.put(np.arange(404, 2_100), vectors[404:], ["g"] * 1_696)
    assert (index._lists.count, index._lists.trained_rows) == (91, 2_100)
    assert _each_row_finds_itself_first(index, vectors)


def _unit(codes: np.ndarray) -> np.ndarray:
    floats = codes.astype(np.float32)
    return floats / np.linalg.norm(floats, axis=1, keepdims=True)


def test_saved_lists_are_adopted_by_key_keeping_only_rows_whose_codes_did_not_change(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(8)
    keys = [f"k{i}" for i in range(400)]
    vectors = rng.standard_normal((400, 16)).astype(np.float32)
    first = _bulk_loaded(keys, vectors)
    assert first.settle_lists(None) == "40 lists made over 400 rows"
    (tmp_path / "index").mkdir(mode=0o700)
    former = [tmp_path / "index" / "memories.usearch", tmp_path / "index" / "memories.nodes.npz"]
    for path in former:  # a graph saved by an earlier version (format 1)
        path.write_bytes(b"graph")
    (tmp_path / "index" / "memories.json").write_text('{"format": 1, "model": "model-a", "dim": 16}')
    snapshot = ListsSnapshot(tmp_path / "index", "memories", "model-a")
    assert snapshot.read(_rows_of(keys), 16) is None
    assert snapshot.write(first, keys) == 400
    assert (tmp_path / "index").stat().st_mode & 0o777 == 0o700
    assert not any(path.exists() for path in former)

    # The next run: rows in another order, four keys gone, one vector changed, three keys new.
    later_keys = [k for k in reversed(keys) if k not in {"k3", "k50", "k51", "k399"}] + ["n1", "n2", "n3"]
    by_key = dict(zip(keys, vectors, strict=True))
    by_key["k7"] = rng.standard_normal(16).astype(np.float32)
    later_vectors = np.stack(
        [by_key[k] if k in by_key else rng.standard_normal(16).astype(np.float32) for k in later_keys]
    )
    later = _bulk_loaded(later_keys, later_vectors)
    saved = snapshot.read(_rows_of(later_keys), 16)
    assert saved is not None
    assert later.settle_lists(saved) == "saved lists adopted: 395 rows kept, 5 dropped, 4 added"
    assert later.has_lists and _each_row_finds_itself_first(later, later_vectors)

    # Made with another model, or not the bytes that were saved: not read, and lists are made.
    assert ListsSnapshot(tmp_path / "index", "memories", "model-b").read(_rows_of([]), 16) is None
    lists_file = tmp_path / "index" / "memories.lists.npz"
    data = bytearray(lists_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    lists_file.write_bytes(bytes(data))
    assert snapshot.read(_rows_of(later_keys), 16) is None
    rebuilt = _bulk_loaded(later_keys, later_vectors)
    assert rebuilt.settle_lists(None) == "39 lists made over 399 rows"
    assert _each_row_finds_itself_first(rebuilt, later_vectors)


def test_a_save_cut_short_leaves_no_snapshot_and_every_row_still_unsaved(tmp_path: Path) -> None:
    rng = np.random.default_rng(14)
    keys = [f"k{i}" for i in range(400)]
    index = _bulk_loaded(keys, rng.standard_normal((400, 16)).astype(np.float32))
    index.settle_lists(None)
    snapshot = ListsSnapshot(tmp_path, "memories", "model-a")
    with pytest.raises(IndexError):  # keys for only ten rows: the save stops after the lists' file
        snapshot.write(index, keys[:10])
    assert index.unsaved == 400  # so the save at exit tries again
    assert snapshot.read(_rows_of(keys), 16) is None


def test_saved_lists_mostly_stale_are_made_anew_not_patched(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    keys = [f"k{i}" for i in range(300)]
    vectors = rng.standard_normal((300, 16)).astype(np.float32)
    first = _bulk_loaded(keys, vectors)
    first.settle_lists(None)
    snapshot = ListsSnapshot(tmp_path, "passages", "model-a")
    snapshot.write(first, keys)
    changed = vectors.copy()
    changed[:100] = rng.standard_normal((100, 16))  # a third of the rows: centroids of what is gone
    later = _bulk_loaded(keys, changed)
    saved = snapshot.read(_rows_of(keys), 16)
    assert later.settle_lists(saved) == "34 lists made over 300 rows"
    assert _each_row_finds_itself_first(later, changed)


def test_lists_are_saved_again_only_once_a_tenth_of_their_rows_changed(tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    now = datetime(2026, 11, 30, tzinfo=UTC)

    def documents(keys: list[str]) -> list[Document]:
        return [
            Document(key=k, owner=k, text=k, namespace="ns", kind="fact", status=CURRENT, time=now)
            for k in keys
        ]

    index = SearchIndex(engine_module.Weights())
    first = [f"k{i}" for i in range(20_100)]  # past the size where search goes through lists
    index.add(documents(first), bulk=True)
    index.put_vectors(first, rng.standard_normal((len(first), 8)).astype(np.float32), bulk=True)
    snapshot = ListsSnapshot(tmp_path, "memories", "model-a")
    assert index.finish_bulk(snapshot) == "283 lists made over 20,100 rows; saved"
    saved_at = (tmp_path / "memories.json").stat().st_mtime_ns
    more = [f"n{i}" for i in range(2_000)]  # written while the daemon runs: under a tenth
    index.add(documents(more))
    index.put_vectors(more, rng.standard_normal((len(more), 8)).astype(np.float32))
    assert index.save_lists(snapshot) == 0 and (tmp_path / "memories.json").stat().st_mtime_ns == saved_at
    last = [f"m{i}" for i in range(500)]  # now past a tenth of the index
    index.add(documents(last))
    index.put_vectors(last, rng.standard_normal((len(last), 8)).astype(np.float32))
    assert index.save_lists(snapshot) == 22_600
    assert index.save_lists(snapshot) == 0  # nothing changed since


def test_two_saved_rows_naming_one_key_give_it_one_entry(tmp_path: Path) -> None:
    # A document re-added with the same text leaves its retired row's vector behind: were both
    # saved rows to take the key's row, its list would hold it twice.
    rng = np.random.default_rng(10)
    keys = [f"k{i}" for i in range(200)]
    vectors = rng.standard_normal((200, 16)).astype(np.float32)
    vectors[5] = vectors[6]
    first = _bulk_loaded(keys, vectors)
    first.settle_lists(None)
    snapshot = ListsSnapshot(tmp_path, "memories", "model-a")
    snapshot.write(first, [*keys[:5], "k6", *keys[6:]])
    later_keys = [k for k in keys if k != "k5"]
    later_vectors = np.delete(vectors, 5, axis=0)
    later = _bulk_loaded(later_keys, later_vectors)
    saved = snapshot.read(_rows_of(later_keys), 16)
    assert later.settle_lists(saved) == "saved lists adopted: 199 rows kept, 1 dropped, 0 added"
    rows, _ = later.search(later_vectors[5], 3)
    assert rows[0] == 5 and len(set(rows.tolist())) == 3


def test_candidate_search_reads_few_postings_yet_finds_the_exact_best(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each common term is read by its POOL_PER_TERM best postings only; a row outside every
    term's head scores at most the sum of the terms' first unread contributions, so when that
    bound is below the 200th best score the pool holds every row at or above it, and the search
    returns an exact top 200. Which of the rows tied at the cut it returns is not defined (here
    dozens of documents share each (tf, length)), so the test compares scores, not rows."""
    monkeypatch.setattr(lexical, "DENSE_MAX_ROWS", 10_000)  # the pruned path, on a small index
    rng = random.Random(9)
    docs = [[rng.choice(WORDS) for _ in range(rng.randint(1, 12))] for _ in range(30_000)]
    index = LexicalIndex()
    index.add(docs[:25_000])
    index.add(docs[25_000:])  # past a tenth of the base: folded in, the heads built again
    for query in (["gateway"], ["deploy", "thursday", "v2"], ["cache", "retry"]):
        rows, scores = index.score(query)
        # Common terms (in ~11,000 documents each) are read only by their 5,000 best postings.
        pool = index.candidates(query, None, len(rows))
        assert len(pool) <= lexical.POOL_PER_TERM * len(query) < len(rows)
        unread_bound = 0.0
        for term in query:
            term_scores = np.sort(index.score([term])[1])[::-1]
            assert len(term_scores) > lexical.POOL_PER_TERM
            unread_bound += float(term_scores[lexical.POOL_PER_TERM])
        cut = float(np.sort(scores)[::-1][199])
        margin = 1e-5 * cut  # float rounding between the two scoring paths, not a recall allowance
        assert unread_bound < cut - margin  # so this search must be exact, ties aside
        found = index.candidates(query, None, 200)
        assert len(found) == 200 and len(set(found.tolist())) == 200
        exact = dict(zip(rows.tolist(), scores.tolist(), strict=True))
        assert {r for r, s in exact.items() if s > cut + margin} <= set(found.tolist())
        assert min(exact[r] for r in found.tolist()) >= cut - margin
        expected = [exact[r] for r in found.tolist()]
        np.testing.assert_allclose(index.score_rows(query, found), expected, rtol=1e-5)


def test_candidate_search_reads_the_best_of_a_large_recent_segment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A term common in the recent segment too is read there by its best postings: the short
    documents that hold every query term are found, each once, with their exact scores."""
    monkeypatch.setattr(lexical, "DENSE_MAX_ROWS", 10_000)
    monkeypatch.setattr(lexical, "POOL_PER_TERM", 1_500)
    rng = random.Random(4)
    docs = [[rng.choice(WORDS) for _ in range(rng.randint(3, 12))] for _ in range(40_000)]
    planted = sorted(rng.sample(range(36_000, 40_000), 20))
    for row in planted:
        docs[row] = ["gateway", "deploy", "cache"] * 2
    index = LexicalIndex()
    index.add(docs[:36_000])
    index.add(docs[36_000:])  # 4,000 recent rows: each word is in > 1,500 of them
    for word in ("gateway", "deploy", "cache"):
        assert (index.score([word])[0] >= 36_000).sum() > 1_500  # rows holding the word
    for query in (["gateway", "deploy"], ["cache", "deploy", "gateway"]):
        rows, scores = index.score(query)
        exact = dict(zip(rows.tolist(), scores.tolist(), strict=True))
        assert set(planted) <= set(rows[np.argsort(-scores, kind="stable")[:100]].tolist())
        found = index.candidates(query, None, 100)
        assert len(found) == 100 and len(set(found.tolist())) == 100
        assert set(planted) <= set(found.tolist())
        np.testing.assert_allclose(
            index.score_rows(query, found), [exact[r] for r in found.tolist()], rtol=1e-5
        )
        allowed = np.zeros(40_000, dtype=bool)
        allowed[planted[::2]] = True
        allowed[:1_000] = True
        narrowed = index.candidates(query, allowed, 100)
        assert allowed[narrowed].all() and set(planted[::2]) <= set(narrowed.tolist())


def test_vector_search_on_a_second_thread_ranks_as_on_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(2)
    np_rng = np.random.default_rng(2)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 10))) for _ in range(2_000)]
    index = SearchIndex()
    index.add([_document(f"k{i:04d}", t) for i, t in enumerate(texts)])
    index.put_vectors(
        [f"k{i:04d}" for i in range(2_000)], np_rng.standard_normal((2_000, 16)).astype(np.float32)
    )
    query = SearchQuery(
        terms=analyse("gateway deploy cache", NOW).terms,
        vector=np_rng.standard_normal(16).astype(np.float32),
        limit=50,
    )
    alone = index.search(query)
    monkeypatch.setattr(engine_module, "PARALLEL_MIN_ROWS", 0)
    assert index.search(query) == alone
    assert any(t.name.startswith("mnemo-vectors") for t in threading.enumerate())
