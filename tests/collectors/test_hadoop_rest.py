"""History-server REST documents (shapes from Hadoop's HistoryServerRest docs) -> the same events as .jhist."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.hadoop.deadletter import DeadLetterSink
from collectors.hadoop.rest import events_from_documents, fetch_job_events

JOB = "job_1326381300833_0002"
JOB_DOC = {
    "job": {
        "submitTime": 1326381446500,
        "startTime": 1326381446529,
        "finishTime": 1326381582106,
        "id": JOB,
        "name": "Sleep job",
        "queue": "default",
        "user": "user1",
        "state": "SUCCEEDED",
        "mapsTotal": 1,
        "mapsCompleted": 1,
        "reducesTotal": 1,
        "reducesCompleted": 1,
        "uberized": False,
        "diagnostics": "",
    }
}
MAP = {
    "taskAttempts": {
        "taskAttempt": [
            {
                "assignedContainerId": "container_1326381300833_0002_01_000002",
                "progress": 100,
                "elapsedTime": 2638,
                "state": "SUCCEEDED",
                "diagnostics": "",
                "rack": "/98.139.92.0",
                "nodeHttpAddress": "host.domain.com:8042",
                "startTime": 1326381450680,
                "id": "attempt_1326381300833_0002_m_000000_0",
                "type": "MAP",
                "finishTime": 1326381453318,
            }
        ]
    }
}
REDUCE = {
    "taskAttempts": {
        "taskAttempt": [
            {
                "elapsedMergeTime": 47,
                "shuffleFinishTime": 1326381457851,
                "assignedContainerId": "c",
                "progress": 100,
                "elapsedTime": 130217,
                "state": "SUCCEEDED",
                "diagnostics": "",
                "rack": "/r",
                "elapsedShuffleTime": 2592,
                "nodeHttpAddress": "host2.domain.com:8042",
                "startTime": 1326381455259,
                "id": "attempt_1326381300833_0002_r_000000_0",
                "type": "REDUCE",
                "finishTime": 1326381585476,
                "elapsedReduceTime": 127578,
                "mergeFinishTime": 1326381457898,
            }
        ]
    }
}
COUNTERS = {
    "jobTaskAttemptCounters": {
        "id": "attempt_1326381300833_0002_m_000000_0",
        "taskAttemptCounterGroup": [
            {
                "counterGroupName": "org.apache.hadoop.mapreduce.TaskCounter",
                "counter": [{"name": "MAP_OUTPUT_MATERIALIZED_BYTES", "value": 2235}],
            },
        ],
    }
}


def test_documents_to_events() -> None:
    events = events_from_documents(
        JOB_DOC, [MAP, REDUCE], counters={MAP["taskAttempts"]["taskAttempt"][0]["id"]: COUNTERS}
    )
    kinds = [e["type"] for e in events]
    assert kinds == ["JobStart", "Mapper", "DataIO", "ReducerStart", "JobEnd", "Reducer", "ReducerEnd"]
    mapper = events[1]
    assert (mapper["host"], mapper["period"], mapper["status"]) == ("host.domain.com", 2.638, "SUCCEEDED")
    assert events[2]["size"] == 2235 and events[0]["user"] == "user1"


def test_bad_attempts_are_dead_lettered() -> None:
    dead = DeadLetterSink.memory()
    bad = {"taskAttempts": {"taskAttempt": [{"id": "attempt_x", "state": "RUNNING"}]}}
    events = events_from_documents(JOB_DOC, [bad, "junk"], deadletter=dead)  # type: ignore[list-item]
    assert [e["type"] for e in events] == ["JobStart", "JobEnd"] and dead.count == 2
    assert events_from_documents({"job": {}}, [], deadletter=dead) == [] and dead.count == 3


def test_fetch_uses_the_rest_paths() -> None:
    base = f"http://hs:19888/ws/v1/history/mapreduce/jobs/{JOB}"
    map_task, red_task = "task_1326381300833_0002_m_000000", "task_1326381300833_0002_r_000000"
    docs = {
        base: JOB_DOC,
        f"{base}/tasks": {"tasks": {"task": [{"id": map_task, "type": "MAP"}, {"id": red_task, "type": "REDUCE"}]}},
        f"{base}/tasks/{map_task}/attempts": MAP,
        f"{base}/tasks/{red_task}/attempts": REDUCE,
        f"{base}/tasks/{map_task}/attempts/attempt_1326381300833_0002_m_000000_0/counters": COUNTERS,
    }
    events = fetch_job_events("http://hs:19888/", JOB, get=lambda url, timeout: docs[url])
    assert len(events) == 7 and sum(1 for e in events if e["type"] == "DataIO") == 1


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


def _mutate(doc: dict, key: str, value: object) -> dict:
    import copy

    doc = copy.deepcopy(doc)
    target = doc[next(iter(doc))]
    if isinstance(target, dict) and "taskAttempt" in target:
        target = target["taskAttempt"][0]
    target[key] = value
    return doc


@settings(max_examples=int(os.environ.get("HCEP_FUZZ_EXAMPLES", "80")), deadline=None)
@given(
    doc=st.sampled_from([JOB_DOC, MAP, REDUCE]),
    key=st.text(max_size=15)
    | st.sampled_from(["id", "startTime", "finishTime", "state", "nodeHttpAddress", "taskAttempt", "job", "mapsTotal"]),
    value=_json,
    junk=st.lists(_json, max_size=3),
)
def test_rest_documents_fuzz(doc: dict, key: str, value: object, junk: list) -> None:
    dead = DeadLetterSink.memory()
    mutated = _mutate(doc, key, value)
    job_doc = mutated if doc is JOB_DOC else JOB_DOC
    attempts = [mutated if doc is not JOB_DOC else MAP, *junk]
    events = events_from_documents(job_doc, attempts, deadletter=dead)  # never raises
    assert dead.count == len(dead.records)
    assert all(isinstance(e["ts"], float) for e in events)
