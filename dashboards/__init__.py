"""Dashboards over the match store.  Not implemented yet."""
