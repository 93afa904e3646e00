# Prepare a dataset once: download/read or generate it into resources/datasets/<id>-<digest>/
# (fedbench.layout: the digest is that of its resolved parameters, so a config file that gives the
# id other parameters prepares another directory and leaves this one alone).
# params = the dataset's resolved config, and the code version of its reader or generator
# (fedbench.codeversion.dataset_version), so editing e.g. fedbench/data/idx.py re-prepares MNIST
# and EMNIST (and reruns their partitions and cells).
# data.mirror and data.trust_mirror_checksums are read at run time (runtime only). A dataset that
# cannot be obtained or read fails the job with one message on stderr (which files, from where,
# how to set data.mirror) and leaves nothing under its directory.
# A source that reads a user's local file (libsvm_file: path, test_path) has that file as the
# job's input: a changed file (newer mtime, or another path) re-prepares the dataset, and its
# size and sha256 are recorded in meta.json (raw_files). Relative paths are relative to the
# directory Snakemake runs in, where the config check found them.
# (dataset_local_files: rules/common.smk, since snakemake --lint wants no functions among rules.)


rule prepare_dataset:
    # On the submitting node: downloads need the internet that cluster compute nodes often lack.
    localrule: True
    input:
        dataset_local_files,
    output:
        meta=f"{DATASET_DIR}/meta.json",
    params:
        dataset=dataset_id,
        cfg=dataset_params,
        code=dataset_code_version,
    log:
        "results/logs/prepare_dataset/{data}.log",
    script:
        "../workflow/scripts/prepare_dataset.py"
