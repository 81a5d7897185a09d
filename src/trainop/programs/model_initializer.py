"""Kubeflow Trainer v2's model initializer on this machine: ``STORAGE_URI`` into
``<workspace>/model`` (trainop.programs.v2_initializer).

``python -m trainop.programs.model_initializer [--workspace DIR]``
"""

from trainop.programs.v2_initializer import run

if __name__ == "__main__":
    run("model")
