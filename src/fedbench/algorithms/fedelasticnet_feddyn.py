"""FedElasticNet for FedDyn (Kim et al., "Communication-Efficient and Drift-Robust Federated
Learning via Elastic Net", Algorithm 3, eqs. (10)-(12), Lemma B.2; arXiv 2022). The paper's best
method.

Client state g_k (g_k⁰ = 0); server state θ and h (h⁰ = 0); λ2 is FedDyn's α. Client k ∈ P_t:

    θ_k^t ≈ argmin_θ L_k(θ) − ⟨g_k^{t−1}, θ⟩ + (λ2/2)‖θ − θ^{t−1}‖²₂ + λ1‖θ − θ^{t−1}‖₁      (10)
    local step:  θ ← θ − η_l ( ∇L_k(θ; b) − g_k^{t−1} + λ2 (θ − θ^{t−1}) + λ1 sign(θ − θ^{t−1}) )
    Δ̂_k = θ_k^t − θ^{t−1} with |Δ̂_k(i)| ≤ ε set to 0;  send Δ̂_k
    g_k^t = g_k^{t−1} − λ2 Δ̂_k − λ1 sign(Δ̂_k)                                                (11)

Server, with m the number of clients, rebuilding θ_k^t = θ^{t−1} + Δ̂_k from the message:

    h^t = h^{t−1} − (λ2/m) Σ_{k∈P_t} Δ̂_k − (λ1/m) Σ_{k∈P_t} sign(Δ̂_k)
    θ^t = (1/|P_t|) Σ_{k∈P_t} θ_k^t − h^t/λ2

so h^t = (1/m) Σ_{k∈[m]} g_k^t after every round (Lemma B.2; tested). With λ1 = 0 and ε = 0 this
is FedDyn (:mod:`.feddyn`) with α = λ2, up to float rounding of θ^{t−1} + (θ_k − θ^{t−1}) (the
server here receives Δ_k, FedDyn's receives θ_k).

Hyperparameters: ``lambda1`` (1e-4), ``lambda2`` (= FedDyn α, 1e-2, must be > 0), ``epsilon``
(5e-3): Table 5's CIFAR-10 row.

Decisions on the points the paper leaves open:

1. sign(0) = 0 (``torch.sign``), in the local step and in (11) and h: a coordinate the client did
   not send (Δ̂ = 0) contributes no sign term.
2. g_k and h are updated from the **thresholded** Δ̂_k, on the client and on the server alike, so
   the client's state is a function of what it transmitted and Lemma B.2 (h = mean_k g_k) holds
   exactly. (Algorithm 3 writes θ_k^t, which the server only knows through Δ̂_k.)
3. (SCAFFOLD's Δc: not applicable.)
4. The server averages θ_k^t uniformly over P_t, as FedDyn and the paper do.
5. Client sampling is the engine's. 6. λ1 and ε are plain hyperparameters.

The local step reuses FedDyn's (λ2 θ applied as SGD weight decay, as the FedDyn code does; see
:mod:`.feddyn`): the ℓ1 sign term is added to the clipped direction. FedDyn's per-client α scaling
of the reference code is not applied, for λ2 nor λ1 (the paper does not say whether λ1 is scaled).
Communication: this algorithm sends Δ̂_k; plain FedDyn sends θ_k (the paper tabulates FedDyn's
entropy both ways; that is a metrics convention, not an algorithm change).
"""

from __future__ import annotations

from fedbench.algorithms import feddyn
from fedbench.algorithms.feddyn import broadcast
from fedbench.algorithms.hparams import hparam, number
from fedbench.algorithms.local import elastic_net_direction
from fedbench.tree import Tree, tree_add, tree_axpy, tree_mean, tree_sign, tree_sub, tree_sum, tree_threshold

HPARAMS: dict[str, float] = {"lambda1": 1e-4, "lambda2": 1e-2, "epsilon": 5e-3}
BOUNDS: dict[str, str] = {"lambda1": "[0, inf)", "lambda2": "[0, inf)", "epsilon": "[0, inf)"}

__all__ = ["BOUNDS", "HPARAMS", "broadcast", "client_final", "client_init", "client_step", "server_init",
           "server_update"]


def _dyn(hparams: dict) -> dict:
    """hparams with FedDyn's name for λ2 (``alpha``), for the reused FedDyn helpers."""
    return {**hparams, "alpha": number(hparam(hparams, HPARAMS, "lambda2"))}


def server_init(params: Tree, hparams: dict, num_clients: int) -> dict:
    """ServerState ``{"params": θ⁰, "h": 0, "num_clients": m}`` (FedDyn's)."""
    return feddyn.server_init(params, _dyn(hparams), num_clients)


def client_init(server_state: dict, client_state: dict | None, hparams: dict) -> dict:
    """FedDyn's step state (g_k, the linear part −g_k − λ2 θ^{t−1}) plus the anchor θ^{t−1}."""
    state = feddyn.client_init(server_state, client_state, _dyn(hparams))
    return {**state, "global_params": server_state["params"]}


def client_step(step_state: dict, batch, hparams: dict, grad_fn) -> dict:
    """θ ← θ − η_l (clip(∇L_k − g_k − λ2 θ^{t−1} + λ1 sign(θ − θ^{t−1})) + (λ2 + weight_decay) θ)."""
    x, y = batch
    params = step_state["params"]
    grads, loss = grad_fn(params, x, y)
    direction = elastic_net_direction(tree_add(grads, step_state["linear"]), params, step_state["global_params"],
                                      number(hparam(hparams, HPARAMS, "lambda1")), 0.0)
    return feddyn.dyn_sgd(step_state, direction, loss, _dyn(hparams))


def client_final(server_state: dict, step_state: dict, hparams: dict) -> tuple[dict, dict]:
    """Eq. (11) on the thresholded Δ̂_k. Message ``{"delta": Δ̂_k}``; client state ``{"g": g_k^t}``."""
    lambda1, lambda2, epsilon = (float(hparam(hparams, HPARAMS, k)) for k in ("lambda1", "lambda2", "epsilon"))
    delta = tree_threshold(tree_sub(step_state["params"], server_state["params"]), epsilon)
    g_new = tree_axpy(-lambda1, tree_sign(delta), tree_axpy(-lambda2, delta, step_state["g"]))
    return {"delta": delta}, {"g": g_new}


def server_update(server_state: dict, messages: list[dict], weights, hparams: dict) -> dict:
    """h ← h − (λ2/m) Σ Δ̂_k − (λ1/m) Σ sign(Δ̂_k);  θ ← mean_k (θ^{t−1} + Δ̂_k) − h/λ2."""
    lambda1, lambda2 = (float(hparam(hparams, HPARAMS, k)) for k in ("lambda1", "lambda2"))
    feddyn._alpha(_dyn(hparams))
    theta = server_state["params"]
    m = server_state["num_clients"]
    deltas = [msg["delta"] for msg in messages]
    h = tree_axpy(-lambda2 / m, tree_sum(deltas), server_state["h"])
    h = tree_axpy(-lambda1 / m, tree_sum([tree_sign(d) for d in deltas]), h)
    thetas = [tree_add(theta, d) for d in deltas]
    return {**server_state, "params": tree_axpy(-1.0 / lambda2, h, tree_mean(thetas)), "h": h}
