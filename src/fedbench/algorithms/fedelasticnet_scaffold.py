"""FedElasticNet for SCAFFOLD (Kim et al., "Communication-Efficient and Drift-Robust Federated
Learning via Elastic Net", Algorithm 2, eqs. (5)-(7); arXiv 2022).

SCAFFOLD (:mod:`.scaffold`) with the elastic-net terms in the local step,

    θ_k ← θ_k − η_l ( ∇L_k(θ_k; b) − c_k^{t−1} + c^{t−1} + λ2 (θ_k − θ^{t−1}) + λ1 sign(θ_k − θ^{t−1}) )   (7)

and the transmitted model update ε-thresholded: Δ_k(i) = 0 where |Δ_k(i)| ≤ ε. The control
variate update (6), Δc_k and both server updates are SCAFFOLD's, reused unchanged:

    c_k^t = c_k^{t−1} − c^{t−1} + (θ^{t−1} − θ_k)/(K η_l);   send (Δ_k thresholded, Δc_k)
    θ^t = θ^{t−1} + η_g (1/|P_t|) Σ Δ_k;   c^t = c^{t−1} + (1/m) Σ Δc_k

With λ1 = λ2 = 0 and ε = 0 this is exactly SCAFFOLD (bitwise).

Hyperparameters: ``server_lr`` (η_g, 1), ``lambda1`` (λ1, 1e-4), ``lambda2`` (λ2, 0: "we can
remove the ℓ2-norm regularizer", Table 5 uses 0 everywhere although Algorithm 2's header says
λ2 > 0), ``epsilon`` (ε, 1e-4). Defaults are Table 5's CIFAR-10 row.

Decisions on the points the paper leaves open:

1. sign(0) = 0 (``torch.sign``).
2. c_k^t is computed from the client's actual local model θ_k (eq. (6) as printed), not from the
   thresholded Δ_k: c_k estimates the client's gradient and the thresholding is a property of
   the channel. The paper's invariant c = (1/m) Σ_k c_k still holds exactly, since Δc_k is sent.
3. Δc_k is sent **dense** (not thresholded): the paper only thresholds Δ_k, and Table 2's
   Algorithm 2 counts (86–100% of SCAFFOLD's 2d per client) fit sparsifying only the Δ_k half.
   So the uplink non-zeros per client are ‖Δ_k‖₀ + ‖Δc_k‖₀ ≈ ‖Δ_k‖₀ + d.
4. The model update is SCAFFOLD's unweighted mean over P_t (the paper's eq. for SCAFFOLD).
5. Client sampling is the engine's. 6. λ1 and ε are plain hyperparameters.
"""

from __future__ import annotations

from fedbench.algorithms import scaffold
from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import advance, elastic_net_direction, sgd_step
from fedbench.algorithms.scaffold import broadcast, server_init, server_update
from fedbench.tree import tree_add, tree_threshold

HPARAMS: dict[str, float] = {"server_lr": 1.0, "lambda1": 1e-4, "lambda2": 0.0, "epsilon": 1e-4}
BOUNDS: dict[str, str] = {"server_lr": "(0, inf)", "lambda1": "[0, inf)", "lambda2": "[0, inf)", "epsilon": "[0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """SCAFFOLD's step state plus the anchor θ^{t−1} (``"global_params"``) for the elastic net."""
    state = scaffold.client_init(server_state, client_state, hparams)
    return {**state, "global_params": server_state["params"]}


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """Eq. (7)."""
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    lambda1, lambda2 = (number(hparam(hparams, HPARAMS, k)) for k in ("lambda1", "lambda2"))
    direction = elastic_net_direction(tree_add(grads, step_state["correction"]), params,
                                      step_state["global_params"], lambda1, lambda2)
    return advance(step_state, sgd_step(params, direction, hparams), loss)


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, dict]:
    """SCAFFOLD's eq. (6); message ``{"delta": Δ_k thresholded at ε, "delta_c": Δc_k (dense)}``."""
    message, client_state = scaffold.client_final(server_state, step_state, hparams)
    epsilon = float(hparam(hparams, HPARAMS, "epsilon"))
    return {**message, "delta": tree_threshold(message["delta"], epsilon)}, client_state
