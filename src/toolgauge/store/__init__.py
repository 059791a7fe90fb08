"""The run store: runs, samples, model calls with their transcripts, scores and the response cache, via SQLAlchemy."""

from toolgauge.store.lease import LockHolder
from toolgauge.store.store import RunInfo, SampleRecord, SampleState, Store, default_store_url, open_store
from toolgauge.store.transcripts import ModelCallRecord

__all__ = [
    "LockHolder",
    "ModelCallRecord",
    "RunInfo",
    "SampleRecord",
    "SampleState",
    "Store",
    "default_store_url",
    "open_store",
]
