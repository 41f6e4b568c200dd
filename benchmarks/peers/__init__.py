"""Peer tools ported from their sources, scored beside hcep on the same logs (docs/semantics.md section 9)."""
