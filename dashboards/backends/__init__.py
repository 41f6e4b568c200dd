"""Readers of the places match records and events live; each hands plain frames to :mod:`dashboards.source`.

A backend has a ``name``, a ``version()`` that changes when its data changes (so the dashboard re-reads only then)
and ``load()`` returning ``{"matches", "events", "alerts", "stats"}`` pandas frames (empty when it has none), in the
normal form of :mod:`dashboards.records`.  :mod:`dashboards.backends.metrics` is apart: it scrapes the live service.
"""
