"""fedbench.engine: training cells, round by round.

Three subpackages, by role:

- :mod:`fedbench.engine.rounds`: the round loop and a cell's life: :mod:`~.rounds.loop` (train one
  cell or a stack of cells, and the drivers that read a cell's inputs and write its files),
  :mod:`~.rounds.cell` (one cell through a run: sampling, server update, metrics rows, divergence),
  :mod:`~.rounds.checkpoint`, :mod:`~.rounds.lifetime` (one writer per cell, no orphaned training),
  :mod:`~.rounds.output` (a cell's files), :mod:`~.rounds.evaluate` (loss and accuracy of the server
  model) and :mod:`~.rounds.stacking` (which cells train together in one job);
- :mod:`fedbench.engine.clients`: step 2 of a round, the local training of the sampled clients,
  by one of two client engines behind one interface (:mod:`~.clients.interface`):
  :mod:`~.clients.sequential`, the reference, one client at a time (:mod:`~.clients.local`), and
  :mod:`~.clients.vectorized`, the default, all sampled clients at once; with what both draw and
  use: :mod:`~.clients.sampling`, :mod:`~.clients.batches`, :mod:`~.clients.holdout`,
  :mod:`~.clients.augment`, :mod:`~.clients.graphs` (CUDA graphs), :mod:`~.clients.allocator`;
- :mod:`fedbench.engine.linear_fast`: the fast path for linear (logistic-regression) models:
  whole rounds in one compiled loop (CPU, numba) or as tensor programs (CUDA), taken by the
  vectorized engine when the model and algorithm qualify, and tested to give the same bits as the
  generic path.

:mod:`fedbench.engine.spec` holds a cell's resolved spec (:class:`~.spec.CellSpec`), read by all three.
"""
