"""The writer's model work: distilling episodes into memories and judging them.

- ``llm``     the one door to a language model: an OpenAI-compatible endpoint through the
              ``openai`` client (the only module that imports it), metered and capped;
- ``meter``   tokens spent per UTC day and per model, and the daily cap;
- ``decide``  the decision model: closed questions answered with one option token, probabilities
              from the option tokens' log-probabilities, normalised and calibrated;
- ``extract`` a stretch of a session → validated six-W memory proposals (the strict prompt,
              pydantic, bounded retries, the rule that an unbacked decision is a fact);
- ``guard``   the deterministic rule that vetoes treating two memories as one when they differ in
              a quantity, version, identifier or negation (no model involved);
- ``judge``   what a new memory does to the current ones near it: merge, close, add, or stay in
              the episodes — the decision model's answers, the 0.6 rule and the guard;
- ``writer``  sessions distilled batch by batch past their cursor, so that a stop anywhere means
              redo, never loss or duplicates (run by :mod:`mnemo.daemon.distilling`);
- ``lease``   the writer lease: only its holder distils; a writer that lost it writes nothing.
"""
