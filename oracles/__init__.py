"""The independent references the engine is judged against (docs/semantics.md sections 1-3), written from the
semantics and not from the engine's code: ``reference`` (brute force over every signature and every NFA run),
``possible_worlds`` (confidences by enumerating the worlds), ``point_based`` (the imprecise-timestamp paper's
point-based framework).  The tests and the benchmarks both use them, so they live in neither; they read only the
engine's events and parsed queries, never a plan or an evaluator (an import contract)."""
