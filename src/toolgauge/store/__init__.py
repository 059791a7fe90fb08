"""The run store: runs, samples, model calls, scores and the response cache, via SQLAlchemy."""

from toolgauge.store.lease import LockHolder
from toolgauge.store.store import RunInfo, SampleRecord, SampleState, Store, default_store_url, open_store

__all__ = ["LockHolder", "RunInfo", "SampleRecord", "SampleState", "Store", "default_store_url", "open_store"]
