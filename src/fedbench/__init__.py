"""fedbench: reproduce and compare federated optimization algorithms.

Library layout (one job per subpackage):

- ``data``        datasets (prepare, on-disk store) and partitioners
- ``models``      models as pure functions of a parameter dict
- ``algorithms``  one module per algorithm family, FedJAX-style pure functions
- ``engine``      the round loop: keyed randomness, client sampling, local training, evaluation
- ``metrics``     the results schema and communication accounting
- ``analysis``    tables and plots from ``results/metrics/<experiment>.parquet``
- ``config``      checks a workflow config and expands it into training cells
- ``integrity``   checks a results folder's files before any job and repairs damaged ones
                  (``filecheck``: the cheap whole-file checks it uses)
"""

__version__ = "0.1.0"
