"""The ops dashboard (Streamlit): what operators of a Hadoop cluster look at all day.

``hcep dashboard`` serves :mod:`dashboards.webapp`; the views read through :class:`dashboards.source.DashboardData`,
which merges the store of ``hcep run``, JSONL match records and events, and the Parquet archive / Spark history.
See ``dashboards/README.md`` for how the views map to the queries and data sources.
"""
