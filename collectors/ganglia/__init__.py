"""Ganglia collector: gmond/gmetad XML and gmetad RRD files -> hcep events (docs/semantics.md sections 1 and 7).

Modules: :mod:`.xml` (parse dumps), :mod:`.poll` (fetch them over TCP), :mod:`.rrd` (read gmetad's RRD history),
:mod:`.derive` (Metric, LoadStd, Balance/Imbalance events).  Rejected inputs go to the project's shared dead-letter
sink, :mod:`collectors.hadoop.deadletter`.  See README.md.
"""
