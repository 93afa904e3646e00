"""The round loop and a cell's life: train, checkpoint, evaluate, write; which cells stack.

:func:`fedbench.engine.rounds.loop.train` runs rounds t = 1..T of one cell or of a stack of cells
in lockstep; each round it asks a client engine (:mod:`fedbench.engine.clients`) for the sampled
clients' local training and applies the server update of :mod:`~.cell`. Everything a cell owns
across rounds lives here: its checkpoints (:mod:`~.checkpoint`), its lock and the process's tie to
the workflow (:mod:`~.lifetime`), its evaluation (:mod:`~.evaluate`) and its files (:mod:`~.output`).
"""
