"""What the tests share, shipped in the package so every test layer can use it: job builders
(``builders``: ``pytorch_job("a").master(1).workers(3)``), the example manifests (``examples``) and
the real test control plane (``testenv``: etcd, kube-apiserver, kwok from hack/testenv).

Nothing under src imports this package (tests/unit/test_layers.py checks it).
"""
