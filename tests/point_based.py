"""The point-based framework, for the tests' older imports: it lives in :mod:`oracles.point_based` (the benchmarks
race the engine against it too)."""

from oracles.point_based import PointBasedMatcher as PointBasedMatcher
from oracles.point_based import expand as expand
from oracles.point_based import point_based as point_based
