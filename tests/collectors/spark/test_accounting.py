"""The test oracle's own rule for which stages Spark ran (``planted.count_jobs``), over a stand-in for the JVM's status
tracker: the live tests lean on it, and a zero-task retry once slipped through it (CI, stop 36)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tests.collectors.spark.planted import count_jobs


@dataclass
class Stage:
    attempt: int
    submitted: int
    tasks: int = 0
    completed: int = 0
    failed: int = 0

    def submissionTime(self) -> int:  # noqa: N802 - the JVM's names
        return self.submitted

    def currentAttemptId(self) -> int:  # noqa: N802
        return self.attempt

    def numTasks(self) -> int:  # noqa: N802
        return self.tasks

    def numCompletedTasks(self) -> int:  # noqa: N802
        return self.completed

    def numFailedTasks(self) -> int:  # noqa: N802
        return self.failed


@dataclass
class Job:
    stages: list[int]

    def stageIds(self) -> list[int]:  # noqa: N802
        return self.stages

    def status(self) -> str:
        return "SUCCEEDED"


@dataclass
class Tracker:
    jobs: dict[int, Job]
    stages: dict[int, Stage] = field(default_factory=dict)

    def getJobIdsForGroup(self, group: str) -> list[int]:  # noqa: N802
        return list(self.jobs)

    def getJobInfo(self, job_id: int) -> Job:  # noqa: N802
        return self.jobs[job_id]

    def getStageInfo(self, stage_id: int) -> Stage | None:  # noqa: N802
        return self.stages.get(stage_id)


def test_a_submitted_attempt_without_tasks_counts_and_a_skipped_stage_does_not() -> None:
    tracker = Tracker(
        jobs={0: Job([0, 1]), 1: Job([2, 3, 4])},
        stages={
            0: Stage(attempt=1, submitted=1_700_000_000_000),  # resubmitted, every partition already recomputed
            1: Stage(attempt=1, submitted=1_700_000_000_500, tasks=4, completed=4),
            2: Stage(attempt=0, submitted=0, tasks=2),  # skipped: its shuffle output was reused
            4: Stage(attempt=0, submitted=1_700_000_001_000, tasks=2, completed=1, failed=1),
        },
    )
    counted = count_jobs(tracker, "g")
    assert counted["jobs"] == {
        0: {"status": "SUCCEEDED", "stages": [0, 1]},
        1: {"status": "SUCCEEDED", "stages": [2, 3, 4]},
    }
    assert counted["stages"] == {
        0: {"attempt": 1, "num_tasks": 0, "completed": 0, "failed": 0},
        1: {"attempt": 1, "num_tasks": 4, "completed": 4, "failed": 0},
        4: {"attempt": 0, "num_tasks": 2, "completed": 1, "failed": 1},
    }
