"""The NFA files the SASE++ side of ``benchmarks/peers/sasepp.py`` runs, and why each is written as it is.

What the authors' engine (github.com/haopeng/sase-advanced, ``HadoopUsecasePreciseUI``) can run, read from its code:

- **A Kleene state leaves only for an event of its own type unless postponing is on.**  Without postponing,
  ``Engine.checkPredicateOptimized`` returns "no" as soon as the event's type differs from the *current* state's type,
  before it tries the proceed edge; so ``SEQ(JobStart, MapPeriod+, JobFinish)`` never reaches ``JobFinish`` (the first
  run's 0 matches for Q1/Q2).  The postponing path (``evaluateEventPostponeOptimizedForSkipTillAny``, the SASE++
  paper's "Postponing") tries the next state first: the Kleene rows run with it on (argument 4 of the UI).
- **``jobId`` cannot be a partition attribute.**  ``HadoopEvent.getAttributeByName`` knows ``nodeNumber``,
  ``taskId``, ``attemptId``, ``numberOfSegments``, ``value``, ``originalEventId`` and returns -1 for anything else, so
  ``partitionAttribute = jobId`` put every event in one partition (977 jobs' runs all fed every event: Q4flat's
  timeout).  The converter writes the job number in the ``numberOfSegments`` column too (a merge count the pack never
  reads) and the per-job rows partition on it.
- **Without a partition attribute, postponed runs lose their clones.**  The non-partitioned postponing loop evaluates
  ``activeRuns`` only, but the runs it clones go to ``addRunByPartition`` (the per-partition map that loop never
  reads): a proceed into a state that is not the last one is dropped (Q5: 0 matches) and a singleton state keeps only
  its first candidate.  Q5 and Q6 therefore name a partition attribute every event has the same value of:
  ``attemptId`` (0 on our Hadoop lines; ``GangliaEvent.getAttributeByName`` answers 0 for a name it lacks), so all
  events share one partition and the partitioned loop, which keeps the clones, runs.  The ``task_id`` equality stays a
  predicate, as in the authors' files: Ganglia events carry no task.
- **A trailing Kleene state cannot end an NFA.**  ``checkProceedOptimized`` reads ``getStates(current + 1)``: on the
  last state that is past the array (the first run's ``ArrayIndexOutOfBoundsException`` on Q4).  Q4's records (the
  growing prefix of a job's ``DataIO``) are written the way the authors' ``4.dataactivity.nfa`` writes them:
  ``SEQ(JobStart a, HadoopDataActivity+ b[], HadoopDataActivity c)`` under skip-till-any-match, collapsed: the run that
  collects the job's ``DataIO`` is cloned to the final state at every ``DataIO`` after the first, one collapsed match
  per prefix of two or more events (our Q4 also writes the one-event prefix: one record more per job with a
  ``DataIO``).  Each match copies the whole prefix, so its cost is quadratic in a job's ``DataIO`` count.
- **Skip-till-next-match does not split a run** (``evaluateEventOptimizedForSkipTillNext``): an event that satisfies
  both the take and the proceed formula proceeds, and the proceed is not checked against the window.  Ours
  (docs/semantics.md section 4) splits the run (the taking branch finds the reducer's later slow pulls too) and applies
  the window to every event.
  So SASE++'s Q3 is the *first* slow pull of each reducer (plus those whose slow pull comes after the window): Q3 is
  compared as ``first``.
- **Values are Java ints**: ``AVG`` is the truncated integer mean (``ValueVectorElementAvg``), so Q3's
  ``value / 2 > AVG($2.value)`` can differ from our ``c.period > 2 * avg(b[].period)`` when the mean is not whole ms.
  The converter writes ``PullPeriod`` values in half-milliseconds: every value is then even, ``value / 2`` a whole
  number n, and for a whole n, ``n > floor(mean)`` exactly when ``n > mean``: the authors' predicate computes ours.
- **Windows**: SASE++ keeps an event when ``ts - first <= W``, docs/semantics.md section 2 when
  ``t_last - t_first < W``; the NFA files say ``W - 1`` ms (Balance samples fall on whole 15 s, so spans of exactly
  10 minutes occur).
"""

from __future__ import annotations

from dataclasses import dataclass

DAY, TEN_MIN = 86_400_000, 600_000
#: The column the job number is also written to (``jobId`` is parsed but not readable by the engine).
JOB = "numberOfSegments"
#: An attribute of the same value on every event: one partition (see the module text).
ONE_PARTITION = "attemptId"


@dataclass(frozen=True)
class Row:
    """One line of the side-by-side: the NFA file, the UI's flags, our query, and how the counts compare.

    ``compare``: ``records`` (SASE++ matches = our records), ``extends`` (SASE++ matches = our records that extend an
    earlier record of their run: the prefixes of two or more events), ``distinct`` (the distinct ``taskId`` of the
    ``ReduceStart`` in SASE++'s printed matches = our records, one per ``task_id``: SASE++ reports every combination of
    the surrounding events, ours ``output: distinct``), ``first`` (SASE++'s printed matches that span less than the
    window = our first record of each run, by its first event)."""

    nfa: str
    postpone: bool
    collapsed: bool
    ours: str
    compare: str
    form: str


def _nfa(strategy: str, window: int, partition: str, *states: str) -> str:
    """The NFA file: ``window`` ms as SPEC's ``< window`` (SASE++ keeps ``<=``)."""
    head = f"selectionStrategy = {strategy} | timeWindow = {window - 1} | partitionAttribute = {partition}"
    return "\n".join([head, *(f"State={i} & {s}" for i, s in enumerate(states, 1)), "end", ""])


def _kleene(event: str, take: str = "") -> str:
    take = f" & {take}" if take else ""
    return f"type = kleeneClosure & eventtype = {event} | edgetype = begin | edgetype = take{take} | edgetype = proceed"


def _one(event: str, pred: str = "") -> str:
    return f"type = normal & eventtype = {event} | edgetype = begin" + (f" & {pred}" if pred else "")


ANY, NEXT = "skip-till-any-match", "skip-till-next-match"
ROWS: dict[str, Row] = {
    "Q1": Row(
        _nfa(ANY, DAY, JOB, _one("JobStart"), _kleene("MapPeriod"), _one("JobFinish")),
        True,
        True,
        "Q1",
        "records",
        "SEQ(JobStart, MapPeriod+, JobFinish) per job, any, postponing, collapsed",
    ),
    "Q2": Row(
        _nfa(ANY, DAY, JOB, _one("JobStart"), _kleene("ReducePeriod"), _one("JobFinish")),
        True,
        True,
        "Q2",
        "records",
        "SEQ(JobStart, ReducePeriod+, JobFinish) per job, any, postponing, collapsed",
    ),
    "Q3": Row(
        _nfa(
            NEXT,
            TEN_MIN,
            "taskId",
            _one("ReduceStart"),
            _kleene("PullPeriod"),
            _one("PullPeriod", "value / 2 > AVG($2.value)"),
        ),
        False,
        False,
        "Q3",
        "first",
        "SEQ(ReduceStart, PullPeriod+, PullPeriod c) per task, next, c.value / 2 > AVG",
    ),
    "Q4": Row(
        _nfa(
            ANY,
            DAY,
            JOB,
            _one("JobStart"),
            _kleene("HadoopDataActivity"),
            _one("HadoopDataActivity"),
        ),
        True,
        True,
        "Q4",
        "extends",
        "SEQ(JobStart, HadoopDataActivity+, HadoopDataActivity) per job, any, postponing, collapsed: one per prefix",
    ),
    "Q4flat": Row(
        _nfa(ANY, DAY, JOB, _one("JobStart"), _one("HadoopDataActivity")),
        False,
        False,
        "Q4",
        "records",
        "SEQ(JobStart, HadoopDataActivity) per job, any: one per DataIO",
    ),
    "Q5": Row(
        _nfa(
            ANY,
            TEN_MIN,
            ONE_PARTITION,
            _one("balance", "value == 1"),
            _one("ReduceStart"),
            "type = kleeneClosure & eventtype = balance | edgetype = begin & value == 0 | edgetype = take & value == 0"
            " | edgetype = proceed",
            _one("ReduceFinish", "taskId == $2.taskId"),
            _one("balance", "value == 1"),
        ),
        True,
        True,
        "Q5",
        "distinct",
        "SEQ(balance=1, ReduceStart, balance=0 +, ReduceFinish, balance=1), any, postponing, collapsed",
    ),
    "Q6": Row(
        _nfa(
            ANY,
            TEN_MIN,
            ONE_PARTITION,
            _one("ReduceStart"),
            _kleene("balance-standarddeviation", "value >= $previous.value"),
            _one("ReduceFinish", "taskId == $1.taskId"),
        ),
        True,
        True,
        "Q6",
        "distinct",
        "SEQ(ReduceStart, balance-standarddeviation+, ReduceFinish), any, postponing, collapsed",
    ),
}
