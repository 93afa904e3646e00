"""Exact theory of the LocalUpdate family on quadratics, as pure numpy functions.

Charles & Konečný, "Convergence and Accuracy Trade-Offs in Federated Learning and Meta-Learning"
(AISTATS 2021). Symbols: γ client learning rate, η server learning rate, α proximal strength,
Θ = (θ_1, …, θ_K) the non-negative weights a client puts on its K local gradients (Θ_{1:K} =
FedAvg/FedProx, Θ_K = FOMAML-type, Θ_{2K+1} = MAML with K inner steps), μ ≤ L the spectral bounds
of the client Hessians A_i, κ₀ = L/μ.

Modules:

- :mod:`fedbench.theory.quadratic`: the federated quadratic model; Θ helpers; the distortion
  matrix Q_i (eq. 6) and its eigenvalues q(λ) (Lemma 9); the surrogate loss, its Hessian
  E[Q_i A_i], its minimizer x*(α, γ, Θ) (Theorem 1, Lemma 11); the true minimizer x*; the
  constants (L̃, μ̃) of Lemma 10 and the condition bound κ = L̃/μ̃ (eq. 9); the Lemma-5 constants a, b.
- :mod:`fedbench.theory.rates`: the server rate ρ(κ) of Table 2 for gradient descent, Nesterov and
  heavy ball, their tuned (η, β), the suboptimality Δ(κ) (eq. 17) and its Lemma-5 form.
- :mod:`fedbench.theory.closed_forms`: φ (Θ_{1:K}, Lemma 3, eqs. 10/33) and ψ (Θ_K, Lemma 4, eq. 12),
  the closed-form κ of eqs. (11) and (13) behind the analytic frontiers (Figs. 1–4, 9), and the
  (κ, Δ) of a Θ_K spectrum beyond Lemma 4's threshold (the simulated frontiers, Figs. 5, 7, 8, 10).
- :mod:`fedbench.theory.limits`: κ and x*(α, γ, Θ_{1:K}) as K → ∞, κ as γ → 1/(L + α), the limit of
  Fig. 4's MAML branch, and the cusp K of the simulated Θ_K frontier.
- :mod:`fedbench.theory.bounds`: ‖x*(α, γ, Θ) − x*‖ bounds (Theorem 6, Lemma 5, Lemma 12, Theorem 4),
  Corollary 1, and the mean-absolute-deviation inequalities (Theorem 5, Corollary 2).

- :mod:`fedbench.theory.minimax`: federated descent–ascent on quadratic saddle problems (Sharma, Panda
  & Joshi, "Federated Minimax Optimization With Client Heterogeneity", TMLR 2023): the exact round
  map and fixed points of Local SGDA(+)(M) and Fed-Norm-SGDA(+), the saddles of Σ p_i ‖a_i‖₁ f_i (the
  mismatched objective) and Σ p_i f_i, and ‖∇Φ‖.

A frontier point is ``rates.frontier_point(L / mu, closed_forms.kappa_full(mu, L, alpha, gamma, K), server)``.
"""
