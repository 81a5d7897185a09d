"""trainop: Kubeflow kubeflow.org/v1 training jobs on one machine or on Kubernetes."""

__version__ = "0.1.0"
