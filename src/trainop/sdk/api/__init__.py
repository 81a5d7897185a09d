"""kubeflow-training's ``api`` package: ``from kubeflow.training.api.training_client import TrainingClient``
becomes ``from trainop.sdk.api.training_client import TrainingClient``."""
