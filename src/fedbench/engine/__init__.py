"""fedbench.engine: the round loop (:mod:`.loop`), client sampling (:mod:`.sampling`), keyed
randomness (:mod:`.rng`), minibatch indices (:mod:`.batches`), evaluation (:mod:`.evaluate`) and
the two client engines: the sequential reference (:mod:`.local`) and the vectorized engine
(:mod:`.vectorized`, the default; its docstring says how a new algorithm gets vectorized for free).
"""
