"""hcep's application layer: the ``hcep`` command line and (later) the services that wire collectors, the engine,
alerts and dashboards together.  Nothing here is imported by the engine."""

__version__ = "0.1.0"
