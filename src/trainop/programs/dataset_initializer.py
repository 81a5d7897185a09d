"""Kubeflow Trainer v2's dataset initializer on this machine: ``STORAGE_URI`` into
``<workspace>/dataset`` (trainop.programs.v2_initializer).

``python -m trainop.programs.dataset_initializer [--workspace DIR]``
"""

from trainop.programs.v2_initializer import run

if __name__ == "__main__":
    run("dataset")
