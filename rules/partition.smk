# Split a prepared dataset among clients, once per (dataset, partition id, seed); the partition
# is shared by every experiment and algorithm that uses it. params = the resolved partition
# config, so changing e.g. the Dirichlet alpha rebuilds it (and reruns the cells that use it), and
# the partitioners' code version (fedbench.codeversion.partition_version): editing
# fedbench/data/partition.py rebuilds every partition. (The heatmap's plotting code is not in it.)


rule partition:
    localrule: True  # light: not worth a cluster job
    input:
        meta="resources/datasets/{dataset}/meta.json",
    output:
        partition=f"{PARTITION_DIR}/partition.parquet",
        counts=f"{PARTITION_DIR}/class_counts.parquet",
        heatmap=report(
            f"{PARTITION_DIR}/heatmap.png",
            caption="../workflow/report/partition.rst",
            category="Partitions",
            subcategory="{dataset}",
            labels={"dataset": "{dataset}", "partition": "{partition}", "seed": "{seed}"},
        ),
    params:
        cfg=partition_params,
        code=partition_code_version,
    log:
        "results/logs/partition/{dataset}/{partition}/seed={seed}.log",
    script:
        "../workflow/scripts/partition.py"
