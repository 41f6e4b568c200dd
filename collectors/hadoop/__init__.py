"""Hadoop collectors: job history (.jhist), MRAppMaster and reduce-task syslogs -> hcep events (semantics section 7).

Each parser is a generator that never raises on bad input: malformed lines go to the dead-letter sink.  The collectors
know nothing of the engine; they emit plain event dicts.
"""
