"""kubeflow-training's ``configuration`` module: kubernetes.client's, which upstream's generated one copies.

Importing it imports the Kubernetes client; ``trainop.sdk`` itself loads it only on first use.
"""

from kubernetes.client.configuration import Configuration

__all__ = ["Configuration"]
