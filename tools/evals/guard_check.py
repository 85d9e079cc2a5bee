"""Both error rates of the deterministic guard on the labelled pairs.

- changes let through: pairs that differ in a quantity, version, identifier or negation which
  the guard did not block (a judge could then merge them) — must be 0;
- duplicates blocked: real paraphrases the guard would keep apart even when the judge says
  "same" (the cost: two copies of one memory) — target ≤ 20 %.

    python -m tools.evals.guard_check [tests/data/guard_pairs.jsonl]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mnemo.distill.guard import compare
from tools import REPO

DEFAULT = REPO / "tests" / "data" / "guard_pairs.jsonl"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pairs", type=Path, nargs="?", default=DEFAULT)
    args = parser.parse_args()
    pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
    changes = [p for p in pairs if p["label"] == "change"]
    duplicates = [p for p in pairs if p["label"] == "duplicate"]
    let_through = [p for p in changes if not compare(p["a"], p["b"]).blocks]
    blocked = [p for p in duplicates if compare(p["a"], p["b"]).blocks]
    for kind in sorted({p["kind"] for p in changes}):
        of_kind = [p for p in changes if p["kind"] == kind]
        caught = sum(compare(p["a"], p["b"]).blocks for p in of_kind)
        print(f"  {kind:<11} changes blocked {caught}/{len(of_kind)}")
    through_share = len(let_through) / max(1, len(changes))
    blocked_share = len(blocked) / max(1, len(duplicates))
    print(f"changes let through: {len(let_through)}/{len(changes)} ({through_share:.0%})")
    print(f"duplicates blocked:  {len(blocked)}/{len(duplicates)} ({blocked_share:.0%})")
    for p in let_through:
        print(f"  LET THROUGH: {p['a']!r} / {p['b']!r}")
    for p in blocked:
        print(f"  BLOCKED: {p['a']!r} / {p['b']!r}: {'; '.join(compare(p['a'], p['b']).reasons)}")


if __name__ == "__main__":
    main()
