"""The arena: whole sessions through the real hosts, with mnemo on and off (docs/benchmarks/arena.md)."""
