"""The fast path for linear models: local steps and whole rounds of logistic regression, compiled.

When it is taken
    The vectorized client engine (:mod:`fedbench.engine.clients.vectorized`) decides, per chunk of
    clients or per run of rounds, and falls back to its generic (vmapped autograd) path otherwise:

    - *local steps* (:meth:`~.linear_steps.LinearSteps.run`, CPU): the model is ``binary_logreg`` or
      ``logreg`` (:data:`~.linear_steps.LINEAR_MODELS`), the algorithm's ``client_step`` is affine in
      its state and the minibatch gradient (:func:`~.forms.affine_form` reads it off the
      algorithm itself: FedAvg, FedAc and its variants, Mb-SGD, Mb-Ac-SGD, ...), the chunk has no
      held-out pass, augmentation or padded steps, and the job is long enough to repay numba's start;
    - *whole rounds* (:meth:`~.linear_steps.LinearSteps.rounds` on CPU, :mod:`~.tensor_rounds` with
      the Triton kernels of :mod:`~.round_kernels` on CUDA): in addition, full participation, K local
      steps drawn with replacement, stateless clients, and ``client_init``, ``client_final`` and
      ``server_update`` linear too (:func:`~.forms.round_form`). This is the FedAc regime
      (Yuan & Ma, "Federated Accelerated Stochastic Gradient Descent", NeurIPS 2020, §5).

What it guarantees
    The generic path's results to float rounding: every metrics column and the final server state
    equal the generic engine's to 1e-10 relative (float64; only the summation order differs), and
    bit for bit the same whatever the stacking, chunking, thread count or resume point
    (tests/engine/linear_fast/test_linear_steps.py, test_tensor_rounds.py). The rows drawn are the
    engine's own: :mod:`~.keyed_integers` gives bit for bit what :mod:`fedbench.rng` draws per key;
    :mod:`~.lane_math` gives the same exp and log1p whether LLVM vectorizes a loop or not;
    :mod:`~.lane_vectors` and :mod:`~.prefetch` are the loops' vector code and cache hints.

Its modules, one job each
    :mod:`~.linear_steps`: :class:`~.linear_steps.LinearSteps`, what the engine calls on CPU;
    :mod:`~.forms`: the update rules read off the algorithm; :mod:`~.rows`: the inputs as rows;
    :mod:`~.logits`: the model's logits and gradient; :mod:`~.step_kernels`: a chunk's local steps;
    :mod:`~.cpu_rounds` and :mod:`~.round_items`: whole rounds on CPU, and a round's work item;
    :mod:`~.evaluation`: many cells evaluated in one pass; :mod:`~.tensor_rounds` and
    :mod:`~.round_kernels`: whole rounds on CUDA.

How to add a model
    Give it a gradient in its logits written out in :mod:`~.logits` (beside
    ``_loss_and_logit_grads``), add its apply function to :data:`~.linear_steps.LINEAR_MODELS`, and
    add it to the equality tests against the generic path; the update rules need nothing: they are
    read off the algorithms.
"""
