"""Peer tools ported from their sources, scored beside hcep on the same logs (SPEC 9)."""
