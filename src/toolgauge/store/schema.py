"""Table definitions. JSON is stored as text so SQLite and PostgreSQL behave the same."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

# 1: the first store. 2: transcripts (model_calls.role and the request's blob hashes, the blobs table).
# 3: sweeps (the sweeps and sweep_cells tables).
# The viewer's verdict tables (view_unit_sets, view_units) are a derived cache, not a version: a toolgauge of
# schema 3 ignores them (it never reads them) and the viewer creates them where they are missing.
SCHEMA_VERSION = 3

metadata = MetaData()

meta = Table(
    "toolgauge_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("benchmark", String(64), nullable=False),
    Column("model", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("config", Text, nullable=False),
    Column("n_samples", Integer, nullable=False, default=0),
    Column("created_at", Float, nullable=False),
    Column("finished_at", Float),
    Column("summary", Text),
)

samples = Table(
    "samples",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id"), primary_key=True),
    Column("sample_key", String(255), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("result", Text),
    Column("error", Text),
    Column("latency_s", Float),
    Column("finished_at", Float, nullable=False),
)

# One row per model call. A call of an extra role (agent, judge) is stored under "<sample>#<role>".
# The request is stored by reference: messages_hash is the blob of its last message (a chain, see
# blobs), tools_hash and options_hash the blobs of its tool list and options; NULL where no transcript
# was stored (a store of schema 1). response is the AssistantTurn's JSON (secrets masked).
model_calls = Table(
    "model_calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), ForeignKey("runs.id"), nullable=False),
    Column("sample_key", String(255), nullable=False),
    Column("step", Integer, nullable=False),
    Column("role", String(64), nullable=False, default="model", server_default="model"),
    Column("request_hash", String(64)),
    Column("messages_hash", String(32)),
    Column("tools_hash", String(32)),
    Column("options_hash", String(32)),
    Column("response", Text),
    Column("error", Text),
    Column("input_tokens", Integer, nullable=False, default=0),
    Column("output_tokens", Integer, nullable=False, default=0),
    Column("latency_s", Float, nullable=False, default=0.0),
    Column("attempts", Integer, nullable=False, default=1),
    Column("cached", Boolean, nullable=False, default=False),
    Column("created_at", Float, nullable=False),
    # A sample's calls are read together (transcripts, resume); run_id alone is its leftmost prefix.
    Index("ix_model_calls_run_sample", "run_id", "sample_key"),
)

# Content-addressed JSON, zlib-compressed unless that is not smaller; the key is a 128-bit digest
# of the JSON, in hex (store/transcripts.py). Written once, shared by every call, sample and run
# that sends the same content; never deleted. Three kinds, told apart by the column that points at
# them: a tool list, generation options, and a message-chain node {"m": message, "p": the hash of
# the node before it, or null}. A request's messages are the chain that ends at
# model_calls.messages_hash, so a dialogue's shared prefix is stored once.
blobs = Table(
    "blobs",
    metadata,
    Column("hash", String(32), primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

scores = Table(
    "scores",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id"), primary_key=True),
    Column("scope", String(128), primary_key=True),
    Column("metric", String(128), primary_key=True),
    Column("value", Float),
)

response_cache = Table(
    "response_cache",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("model", Text, nullable=False),
    Column("response", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)

# One row per run being run right now: the lease that keeps a second process from resuming it.
# Inserting the row is the atomic "acquire" (primary key); the holder refreshes heartbeat_at as it writes.
run_locks = Table(
    "run_locks",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("owner", String(64), nullable=False),
    Column("hostname", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    # Start time of the pid (Linux clock ticks since boot), so a reused pid is not taken for the holder.
    Column("pid_started", Text),
    Column("acquired_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
)


# One row per ``toolgauge sweep``: the sweep file as given (its text; a resume must name the same sweep) and
# how it ended: running, finished, finished_with_errors (some cell did not finish), interrupted.
sweeps = Table(
    "sweeps",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("file", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("status", String(32), nullable=False),
)

# One row per cell (model x benchmark) of a sweep, all written with the sweep. ``run_id`` is given out with
# the sweep and the run made under that id when the cell first starts (so a resume finds it); ``status`` is
# pending, running, or the run's final status (finished, finished_with_errors, failed, interrupted).
sweep_cells = Table(
    "sweep_cells",
    metadata,
    Column("sweep_id", String(64), ForeignKey("sweeps.id"), primary_key=True),
    Column("cell", Integer, primary_key=True),
    Column("model", Text, nullable=False),
    Column("benchmark", String(64), nullable=False),
    Column("run_id", String(64), nullable=False, unique=True),
    Column("status", String(32), nullable=False),
    Column("error", Text),
)


# A sample's named steps, saved as each finishes so that a resumed sample does not redo them (``EpisodeContext.
# checkpoint`` and ``save_step``; ToolGate's gates). ``value`` is the step's JSON (secrets masked);
# ``calls_through`` is the id of the sample's last model call (any role) when the step was saved, None when it had
# made none: a resume keeps those calls (the step's, and its predecessors') and forgets the later ones. No schema
# version: a store without the table has no saved step, and a toolgauge that does not know it never reads it.
sample_steps = Table(
    "sample_steps",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("sample_key", String(255), primary_key=True),
    Column("step", String(255), primary_key=True),
    Column("value", Text, nullable=False),
    Column("calls_through", Integer),
    Column("created_at", Float, nullable=False),
)


# The viewer's verdicts, kept so it pages them from the store instead of holding a run's in memory. Derived
# data: rebuilt from the stored outputs whenever ``key`` (what they were computed from: the run's status,
# finish time and sample count, and the toolgauge that scored them) no longer matches. One row per run: the
# current generation of its units, and their counts by verdict and error class (JSON) so a page never counts
# 100,000 rows.
view_unit_sets = Table(
    "view_unit_sets",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("gen", Integer, nullable=False),
    Column("key", Text, nullable=False),
    Column("units", Integer, nullable=False),
    Column("verdicts", Text, nullable=False),
    Column("error_classes", Text, nullable=False),
    Column("note", Text),
    # The chart of the failing units per error class (SVG), drawn once with the verdicts.
    Column("error_chart", Text),
    Column("created_at", Float, nullable=False),
)

# One row per scored unit (every epoch's), in the run's unit order (``seq``). ``score`` is the SampleScore's
# JSON with secrets masked, packed as blobs are (zlib unless that is not smaller); the columns beside it are
# what the sample list filters on.
view_units = Table(
    "view_units",
    metadata,
    Column("run_id", String(64), primary_key=True),
    Column("gen", Integer, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("unit_id", Text, nullable=False),
    Column("sample_key", String(255), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("error_class", Text),
    Column("score", LargeBinary, nullable=False),
    # A sample's units in order (its page; its first unit, for previous and next).
    Index("ix_view_units_sample", "run_id", "gen", "sample_key", "seq"),
    # The sample list's filters: a page of one verdict or error class reads its rows only, counts in the index;
    # an id search scans the ids in the index, not the rows.
    Index("ix_view_units_verdict", "run_id", "gen", "verdict", "error_class", "seq"),
    Index("ix_view_units_class", "run_id", "gen", "error_class", "seq"),
    Index("ix_view_units_id", "run_id", "gen", "unit_id", "seq"),
)

# A run's display name (``--name``) and tags (``--tag KEY=VALUE``, a JSON object), one row per labelled run
# (store/run_meta.py). Optional: a run without labels has no row, and a toolgauge that does not know the table
# ignores it, so it is not a schema version; it is created where missing, like every table here.
run_labels = Table(
    "run_labels",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id"), primary_key=True),
    Column("name", Text),
    Column("tags", Text, nullable=False),
)
