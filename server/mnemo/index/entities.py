"""Which known entities a text names: an Aho-Corasick automaton over folded names and aliases.

Matching is case- and accent-insensitive and respects word boundaries ("pg" matches "why pg?"
but not "upgrade"). Where two names overlap, the longer one wins ("api gateway" over "gateway").
"""

from __future__ import annotations

from collections.abc import Iterable

import ahocorasick

from mnemo.index.text import fold


def entity_key(name: str) -> str:
    """The identity of an entity: its folded, space-normalised name ("Nomad " → "nomad")."""
    return " ".join(fold(name).split())


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


class EntityMatcher:
    """Immutable once built: ``find`` is a pure function of the automaton and the text."""

    def __init__(self, names: Iterable[tuple[str, Iterable[str]]]) -> None:
        """``names``: (entity key, every surface form: the name and its aliases)."""
        self._automaton = ahocorasick.Automaton()
        self.size = 0
        for key, forms in names:
            for form in forms:
                folded = entity_key(form)
                if folded:
                    _, existing = self._automaton.get(folded, ("", ()))
                    keys = existing if key in existing else (*existing, key)
                    self._automaton.add_word(folded, (folded, keys))
                    self.size += 1
        if self.size:
            self._automaton.make_automaton()

    def find(self, text: str) -> list[str]:
        """Keys of the entities named in ``text``, in order of first mention, without repeats."""
        if not self.size:
            return []
        folded = " ".join(fold(text).split())
        matches: list[tuple[int, int, tuple[str, ...]]] = []
        for end, (form, keys) in self._automaton.iter(folded):
            start = end - len(form) + 1
            before = folded[start - 1] if start > 0 else " "
            after = folded[end + 1] if end + 1 < len(folded) else " "
            if _is_word_char(before) or _is_word_char(after):
                continue
            matches.append((start, end, keys))
        # Longest match first at each place; drop matches inside an already kept one.
        matches.sort(key=lambda m: (m[0], -(m[1] - m[0])))
        kept: dict[str, None] = {}
        covered_until = -1
        for start, end, keys in matches:
            if start <= covered_until and end <= covered_until:
                continue
            covered_until = max(covered_until, end)
            kept.update(dict.fromkeys(keys))
        return list(kept)
