# Split a prepared dataset among clients, once per (prepared dataset, partition, seed); the
# partition is shared by every experiment and algorithm that uses it, in whichever config file.
# Its directory, results/partitions/<id>-<digest>/<partition id>-<digest>/seed=<s>/
# (fedbench.layout), is named by the dataset's and the partition's resolved parameters, so a
# partition id given other parameters elsewhere (another config file) is another directory.
# params = the resolved partition config and the partitioners' code version
# (fedbench.codeversion.partition_version): editing fedbench/data/partition.py rebuilds every
# partition. (The heatmap's plotting code is not in it.)


rule partition:
    localrule: True  # light: not worth a cluster job
    input:
        meta=f"{DATASET_DIR}/meta.json",
    output:
        partition=f"{PARTITION_DIR}/partition.parquet",
        counts=f"{PARTITION_DIR}/class_counts.parquet",
        heatmap=report(
            f"{PARTITION_DIR}/heatmap.png",
            caption="../workflow/report/partition.rst",
            category="Partitions",
            subcategory="{data}",
            labels={"dataset": "{data}", "partition": "{part}", "seed": "{seed}"},
        ),
    params:
        cfg=partition_params,
        code=partition_code_version,
    log:
        "results/logs/partition/{data}/{part}/seed={seed}.log",
    script:
        "../workflow/scripts/partition.py"
