# F* of the ℓ2-regularized logistic objective, once per (prepared dataset, λ) that a `binary_logreg` cell
# trains with (λ = its local.weight_decay > 0): the minimum over the dataset's training split,
# solved deterministically to ‖∇F‖ ≤ 1e-12 (fedbench.metrics.optimum.solve_optimum). Rule collect
# turns each such cell's train_objective into `suboptimality` = F(w) − F* (FedAc's metric).
# params: λ and the solver's code version. The training jobs do not read F*: re-solving it never
# retrains a cell. (The cells' (dataset, λ) keys, OPTIMA, and the job's resources: rules/common.smk.)


rule optimum:
    input:
        meta=f"{DATASET_DIR}/meta.json",
    output:
        json="results/optimum/{data}/l2={lam}.json",
        w="results/optimum/{data}/l2={lam}.w.npy",
    wildcard_constraints:
        lam=r"[0-9][0-9.e+-]*",
    params:
        lam=lambda wc: float(wc.lam),
        code=code_version(["fedbench.metrics.optimum"], within="fedbench.metrics"),
    resources:
        runtime=optimum_resource("runtime"),
        mem_mb=optimum_resource("mem_mb"),
        cpus_per_task=optimum_resource("cpus_per_task"),
    log:
        "results/logs/optimum/{data}/l2={lam}.log",
    script:
        "../workflow/scripts/optimum.py"
