"""What every ported heuristic returns (``HeuristicResult``) and shares (``Heuristic``, its configuration)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from benchmarks.peers.drelephant.config import DEFAULT_PARAMS, HDFS_BLOCK_SIZE_DEFAULT
from benchmarks.peers.drelephant.data import ApplicationData
from benchmarks.peers.drelephant.severity import Severity


@dataclass
class HeuristicResult:
    """``HeuristicResult``: the heuristic's name, severity, score and its details (name -> text, as shown)."""

    heuristic: str
    severity: Severity
    score: int
    details: dict[str, str] = field(default_factory=dict)


class Heuristic:
    """A heuristic: ``apply`` returns None where the Java returns null (e.g. a job that did not succeed)."""

    name: str = ""

    def __init__(
        self,
        params: Mapping[str, str] | None = None,
        *,
        hdfs_block_size: int = HDFS_BLOCK_SIZE_DEFAULT,
        name: str | None = None,
    ) -> None:
        if name is not None:
            self.name = name
        self.params: Mapping[str, str] = DEFAULT_PARAMS.get(self.name, {}) if params is None else params
        self.hdfs_block_size = hdfs_block_size

    def apply(self, data: ApplicationData) -> HeuristicResult | None:
        raise NotImplementedError
