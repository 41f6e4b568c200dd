"""Ganglia collector tests: XML parser, derivation, RRD history, and live gmond/gmetad (see conftest.py)."""
