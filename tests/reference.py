"""The brute-force reference, for the tests' older imports: it lives in :mod:`oracles.reference` (shared with the
benchmarks, which import nothing of the tests)."""

from oracles.reference import Returns as Returns
from oracles.reference import Signature as Signature
from oracles.reference import evaluate as evaluate
from oracles.reference import holds as holds
from oracles.reference import reference_any as reference_any
from oracles.reference import reference_nfa as reference_nfa
