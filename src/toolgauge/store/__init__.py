"""The run store: runs, samples, model calls, scores and the response cache, via SQLAlchemy."""

from toolgauge.store.store import RunInfo, SampleRecord, Store, default_store_url, open_store

__all__ = ["RunInfo", "SampleRecord", "Store", "default_store_url", "open_store"]
