"""Schema as numbered migrations; the store applies those above the recorded version.

Rules: ``ORDER BY`` holds only immutable identity (a ReplacingMergeTree deduplicates only within
its sorting key); a migration is never edited once released, a new one is added instead. The SQL
runs unchanged on embedded chDB and on a ClickHouse server.
"""

from __future__ import annotations

from dataclasses import dataclass

VERSION_TABLE = "mnemo_schema_versions"

CREATE_VERSION_TABLE = f"""
CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (
    version UInt32,
    name String,
    applied_at DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree ORDER BY version
"""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "episodes, memories, entities",
        (
            # Immutable; a re-sent id is skipped on insert, and the engine folds any duplicate
            # that slips past (several daemons against one server) on merge and under FINAL.
            """
            CREATE TABLE IF NOT EXISTS episodes (
                id String,
                kind LowCardinality(String),
                text String,
                who String,
                role LowCardinality(String),
                namespace LowCardinality(String),
                session String,
                turn Nullable(UInt32),
                time DateTime64(3, 'UTC'),
                received_at DateTime64(3, 'UTC'),
                client LowCardinality(String),
                workspace String,
                cwd String,
                branch String,
                host LowCardinality(String),
                INDEX episodes_session session TYPE bloom_filter GRANULARITY 4
            ) ENGINE = ReplacingMergeTree ORDER BY id
            """,
            # One row per version; the highest version is the memory's current state.
            # embedding: raw little-endian float32 bytes ('' until embedded), so loading a
            # matrix back is one buffer copy.
            """
            CREATE TABLE IF NOT EXISTS memories (
                id String,
                version UInt64,
                type LowCardinality(String),
                status LowCardinality(String),
                namespace LowCardinality(String),
                content String,
                what String,
                who String,
                when_text String,
                when_start Nullable(DateTime64(3, 'UTC')),
                when_end Nullable(DateTime64(3, 'UTC')),
                where_text String,
                why String,
                how String,
                entities Array(Tuple(name String, role String)),
                sources Array(String),
                origin LowCardinality(String),
                has_human_backing Bool,
                confidence Float32,
                seen_count UInt32,
                injections UInt32,
                uses UInt32,
                non_uses UInt32,
                is_suppressed Bool,
                created_at DateTime64(3, 'UTC'),
                updated_at DateTime64(3, 'UTC'),
                valid_from DateTime64(3, 'UTC'),
                valid_to Nullable(DateTime64(3, 'UTC')),
                closed_by String,
                status_reason String,
                embedding String
            ) ENGINE = ReplacingMergeTree(version) ORDER BY id
            """,
            """
            CREATE TABLE IF NOT EXISTS entities (
                id String,
                version UInt64,
                name String,
                aliases Array(String),
                created_at DateTime64(3, 'UTC'),
                updated_at DateTime64(3, 'UTC')
            ) ENGINE = ReplacingMergeTree(version) ORDER BY id
            """,
        ),
    ),
    Migration(
        2,
        "embeddings by model",
        (
            # One vector per (model, owner, part): owner is a memory id or an episode id, part the
            # passage number (0 for memories). Vectors of different models never mix; switching
            # models adds rows for the new one. vector: raw little-endian float32 bytes.
            """
            CREATE TABLE IF NOT EXISTS embeddings (
                model LowCardinality(String),
                owner String,
                part UInt16,
                vector String,
                created_at DateTime64(3, 'UTC')
            ) ENGINE = ReplacingMergeTree ORDER BY (model, owner, part)
            """,
        ),
    ),
    Migration(
        3,
        "language model spend",
        (
            # One row per model call, summed on read (per UTC day, per model): appends from
            # several processes need no coordination. purpose: what the call was for.
            """
            CREATE TABLE IF NOT EXISTS model_usage (
                day Date,
                at DateTime64(3, 'UTC'),
                model LowCardinality(String),
                purpose LowCardinality(String),
                prompt_tokens UInt32,
                completion_tokens UInt32
            ) ENGINE = MergeTree ORDER BY (day, at)
            """,
        ),
    ),
    Migration(
        4,
        "distillation batches and the judge log",
        (
            # The writer's unit of work: a pinned stretch of one session's episodes (by arrival),
            # recorded as started before the model is called and done after its memory rows are
            # in. A session's cursor is its last finished batch's end.
            """
            CREATE TABLE IF NOT EXISTS distill_batches (
                id String,
                version UInt64,
                session String,
                namespace String,
                first_received DateTime64(3, 'UTC'),
                first_episode String,
                last_received DateTime64(3, 'UTC'),
                last_episode String,
                episodes UInt32,
                status LowCardinality(String),
                error String,
                memories UInt32,
                updated_at DateTime64(3, 'UTC')
            ) ENGINE = ReplacingMergeTree(version) ORDER BY id
            """,
            # Every memory row a batch writes carries the batch id: all of a batch's rows go in
            # one insert, so finding one of them means the batch was applied.
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS distill_batch String DEFAULT ''",
            # One row per judged memory: what was asked, the probabilities, the guard, the action.
            # A redone batch writes the same (batch, seq) keys again, folded on merge and FINAL.
            """
            CREATE TABLE IF NOT EXISTS judge_log (
                batch String,
                seq UInt32,
                at DateTime64(3, 'UTC'),
                session String,
                namespace String,
                memory String,
                action LowCardinality(String),
                target String,
                closes Array(String),
                reason String,
                detail String
            ) ENGINE = ReplacingMergeTree ORDER BY (batch, seq)
            """,
        ),
    ),
    Migration(
        5,
        "the writer lease",
        (
            # One row per claim or renewal; the newest version is the lease. ClickHouse has no
            # compare-and-swap: a claimant writes, waits, and reads back who won (mnemo.distill.lease).
            """
            CREATE TABLE IF NOT EXISTS writer_lease (
                name LowCardinality(String),
                holder String,
                token UInt64,
                expires_at DateTime64(3, 'UTC'),
                version UInt64
            ) ENGINE = ReplacingMergeTree(version) ORDER BY name
            """,
        ),
    ),
    Migration(
        6,
        "hook sessions, injections and usage verdicts",
        (
            # One row per change of a session seen through the hooks; the newest version is it.
            """
            CREATE TABLE IF NOT EXISTS sessions (
                id String,
                client LowCardinality(String),
                person String,
                workspace String,
                cwd String,
                transcript String,
                started_at DateTime64(3, 'UTC'),
                ended_at Nullable(DateTime64(3, 'UTC')),
                end_reason String,
                version UInt64
            ) ENGINE = ReplacingMergeTree(version) ORDER BY id
            """,
            # What was added to a session's context: one row per memory per block (memory '' is
            # the block's frame), with the tokens it cost; blocks are numbered in each session.
            """
            CREATE TABLE IF NOT EXISTS injections (
                session String,
                block UInt32,
                turn UInt32,
                memory String,
                event LowCardinality(String),
                person String,
                tokens UInt32,
                at DateTime64(3, 'UTC')
            ) ENGINE = ReplacingMergeTree ORDER BY (session, block, memory)
            """,
            # Whether an injected memory was used in the turn's answer.
            """
            CREATE TABLE IF NOT EXISTS usage_verdicts (
                memory String,
                session String,
                turn UInt32,
                person String,
                verdict LowCardinality(String),
                probability Float32,
                method LowCardinality(String),
                at DateTime64(3, 'UTC')
            ) ENGINE = ReplacingMergeTree ORDER BY (memory, session, turn)
            """,
        ),
    ),
    Migration(
        7,
        "the curated sets of keep",
        (
            # Every version of each curated set (scope 'workspace:<id>' for a project,
            # 'person:<name>' for a user), all kept: the newest is the set, the rest its history.
            """
            CREATE TABLE IF NOT EXISTS kept (
                owner String,
                version UInt64,
                entries Array(String),
                action LowCardinality(String),
                by String,
                at DateTime64(3, 'UTC')
            ) ENGINE = MergeTree ORDER BY (owner, version)
            """,
        ),
    ),
    Migration(
        8,
        "a batch keeps its extraction",
        (
            # The model's validated extraction (JSON), stored before the judge runs: a batch redone
            # after a spent token cap or a stop judges it again without extracting twice.
            "ALTER TABLE distill_batches ADD COLUMN IF NOT EXISTS extraction String DEFAULT ''",
        ),
    ),
    Migration(
        9,
        "memory versions carry their commit time",
        (
            # The store's own clock at the insert (never a client's): the order in which every
            # daemon's index follows what the others wrote (mnemo.daemon.following). Existing rows
            # get the migration's time, once: a default not materialised would be read as "now".
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS committed_at DateTime64(6, 'UTC') "
            "DEFAULT now64(6)",
            "ALTER TABLE memories MATERIALIZE COLUMN committed_at SETTINGS mutations_sync = 2",
        ),
    ),
    Migration(
        10,
        "the writer's staged commits",
        (
            # A writer's batch on a shared server is staged here, then copied into memories only if
            # its lease is still current (mnemo.store.memories.put_memories_fenced); kept a day.
            "CREATE TABLE IF NOT EXISTS memories_staged AS memories "
            "ENGINE = MergeTree ORDER BY (distill_batch, id) TTL toDateTime(committed_at) + INTERVAL 1 DAY",
        ),
    ),
    Migration(
        11,
        "batch versions by the store's clock",
        (
            # The newest row of a batch is its state: stamped by the store, so that two writers
            # whose clocks disagree (a takeover) cannot leave an older state looking newer.
            "ALTER TABLE distill_batches MODIFY COLUMN version UInt64 "
            "DEFAULT toUnixTimestamp64Nano(now64(9))",
        ),
    ),
    Migration(
        12,
        "memories anchored to code",
        (
            # The files and commit a memory is about (mnemo.code.anchors), as JSON; '' for none.
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS code String DEFAULT ''",
            "ALTER TABLE memories_staged ADD COLUMN IF NOT EXISTS code String DEFAULT ''",
        ),
    ),
    Migration(
        13,
        "every memory version kept",
        (
            # memories folds a memory's versions into its newest when parts merge (its sorting key
            # is the id alone): the view copies every version written from now on, whatever wrote
            # it (an insert, the writer's fenced INSERT … SELECT), into a table keyed by (id,
            # version). Versions written before this migration are read from memories itself,
            # those not merged yet (mnemo.store.history). A column added to memories later must be
            # added here too, and the view made again: its SELECT * was expanded when it was made.
            "CREATE TABLE IF NOT EXISTS memory_history AS memories "
            "ENGINE = ReplacingMergeTree ORDER BY (id, version)",
            "CREATE MATERIALIZED VIEW IF NOT EXISTS memory_history_copy TO memory_history "
            "AS SELECT * FROM memories",
        ),
    ),
    Migration(
        14,
        "a candidate names the memory it replaces",
        (
            # A candidate proposed in place of a memory (mnemo.code.proposal): approving it closes
            # that one. The history copy's view is made again to carry the column (migration 13);
            # on a shared server, a version another daemon writes between the view's drop and its
            # making is not copied (its memories row stays, and history reads memories too).
            "ALTER TABLE memory_history ADD COLUMN IF NOT EXISTS replaces String DEFAULT ''",
            "ALTER TABLE memories_staged ADD COLUMN IF NOT EXISTS replaces String DEFAULT ''",
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS replaces String DEFAULT ''",
            "DROP VIEW IF EXISTS memory_history_copy",
            "CREATE MATERIALIZED VIEW IF NOT EXISTS memory_history_copy TO memory_history "
            "AS SELECT * FROM memories",
        ),
    ),
    Migration(
        15,
        "every row stamped with who wrote it",
        # The user the server authenticated for the insert (mnemo.store.authorship): a client
        # cannot give it (an INSERT naming a MATERIALIZED column is refused) and SELECT * leaves
        # it out, so the history view and the fenced copy stamp their own rows. Rows written
        # before read '' (the expression has no user outside an insert), as do their merges.
        # A memory's versions fold per writer (the stamp joins the sorting key, which takes only
        # a column added in the same ALTER and with no expression yet), so a forged newer
        # version never merges away the genuine one.
        (
            "ALTER TABLE memories ADD COLUMN IF NOT EXISTS written_by LowCardinality(String), "
            "MODIFY ORDER BY (id, written_by)",
            "ALTER TABLE memory_history ADD COLUMN IF NOT EXISTS written_by LowCardinality(String), "
            "MODIFY ORDER BY (id, version, written_by)",
            *(
                f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS written_by LowCardinality(String) "
                "MATERIALIZED currentUser()"
                for table in (
                    "memories_staged",
                    "episodes",
                    "distill_batches",
                    "judge_log",
                    "kept",
                    "sessions",
                    "injections",
                    "usage_verdicts",
                )
            ),
            "ALTER TABLE memories MODIFY COLUMN written_by LowCardinality(String) MATERIALIZED currentUser()",
            "ALTER TABLE memory_history MODIFY COLUMN written_by LowCardinality(String) "
            "MATERIALIZED currentUser()",
        ),
    ),
    Migration(
        16,
        "episodes carry their commit time",
        (
            # As memories do (migration 9): the order in which every daemon's index follows the
            # episodes the others recorded (mnemo.daemon.following). Existing rows get the
            # migration's time, once.
            "ALTER TABLE episodes ADD COLUMN IF NOT EXISTS committed_at DateTime64(6, 'UTC') "
            "DEFAULT now64(6)",
            "ALTER TABLE episodes MATERIALIZE COLUMN committed_at SETTINGS mutations_sync = 2",
        ),
    ),
)
