"""``hcep demo``: the live demo (``live.py``: the steps; ``services.py``: Kafka and Ganglia through the deploy
scripts; ``supervisor.py``: the child processes; ``receiver.py``: the alert webhook; ``guide.py``: what the viewer is
told) and the offline replay of a recorded trace (``replay.py``)."""
