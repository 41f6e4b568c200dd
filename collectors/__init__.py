"""Collectors: raw Hadoop logs and Ganglia metrics -> hcep events (semantics sections 1 and 7).  Not implemented yet."""
