"""``mnemo import``: episodes from a JSONL file (:mod:`.jsonl`), or from the hosts' own
transcripts (:mod:`.transcripts`), sent to the daemon in bounded batches (:mod:`.batching`)."""
