"""The possible-worlds oracle, for the tests' older imports: it lives in :mod:`oracles.possible_worlds`."""

from oracles.possible_worlds import possible_worlds as possible_worlds
