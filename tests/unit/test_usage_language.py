"""Memories a turn follows by its kind rather than its words — a language asked for, "explain,
don't edit" — and what the usage signal makes of them (mnemo.usage.language, mnemo.usage.manner,
mnemo.usage.signal)."""

from __future__ import annotations

import pytest

from mnemo.usage import signal
from mnemo.usage.language import asked_language, written_in
from mnemo.usage.manner import asks_no_edits
from mnemo.usage.signal import TurnActs, act_of, turn_of


@pytest.mark.parametrize(
    ("memory", "language"),
    [
        ("Reply to the person in Korean.", "ko"),
        ("Spec documents are to be written in English, not Portuguese.", "en"),
        ("The person wants the chat in English, even though code comments are in Portuguese.", "en"),
        ("Responde siempre en español.", "es"),
        ("Explique tout en français, s'il te plaît.", "fr"),
        ("We deploy on Thursdays because QA tests on Wednesday.", None),
        ("The speech model is reazonspeech (Japanese) and TTS uses Style-Bert-VITS2.", None),
    ],
)
def test_the_language_a_memory_asks_for(memory: str, language: str | None) -> None:
    assert asked_language(memory) == language


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("배포는 목요일에 진행하고, 테스트는 수요일에 합니다.", "ko"),
        ("デプロイは木曜日に行います。テストは水曜日です。", "ja"),
        ("J'ai mis à jour le fichier et les tests pour la nouvelle version du service.", "fr"),
        ("Ich habe die Datei aktualisiert und die Tests für den Dienst sind nicht rot.", "de"),
        ("I updated the file and the tests for the new version of the service.", "en"),
        ("Done.", None),
    ],
)
def test_the_language_a_text_is_written_in(text: str, language: str | None) -> None:
    assert written_in(text) == language


def test_a_language_memory_is_used_by_an_answer_in_it_and_not_by_one_in_another() -> None:
    memory = "Give explanations to the person in French."
    french = TurnActs(
        "why does the build fail?", "Le build échoue parce que la variable n'est pas définie dans le fichier."
    )
    english = TurnActs(
        "why does the build fail?", "The build fails because the variable is not set in the file."
    )
    assert signal.score(memory, french) == 1.0
    assert signal.score(memory, english) == signal.AGAINST  # not used, nor a reason to stop injecting it


def test_a_conversation_in_a_language_is_asked_for() -> None:
    assert asked_language("The person wants the conversation in Spanish.") == "es"


@pytest.mark.parametrize(
    ("memory", "asks"),
    [
        ("When the person asks a question, they want an explanation only, not changes to files.", True),
        ("Show the code in the answer rather than edit files; the person writes it themselves.", True),
        ("Cuando pregunto, explícame el método sin editar el código.", True),
        ("Never edit src/theme/tokens.ts by hand: run npm run tokens:pull.", False),
        ("Explain the failing test in the PR description.", False),
    ],
)
def test_a_memory_that_asks_to_explain_rather_than_edit(memory: str, asks: bool) -> None:
    assert asks_no_edits(memory) is asks


def test_explain_dont_edit_is_used_by_a_turn_without_edits_and_not_by_one_with_them() -> None:
    memory = (
        "When the person asks how to approach something, explain the method only and do not edit the code."
    )
    explained = turn_of("how should I cache this?", "Wrap the call in an LRU cache keyed by user id.", [])
    edit = act_of("Edit", {"file_path": "app.py", "old_string": "x", "new_string": "y"})
    edited = turn_of("how should I cache this?", "Done: added the cache.", [edit])
    assert signal.score(memory, explained) == 1.0
    assert signal.score(memory, edited) == signal.AGAINST
