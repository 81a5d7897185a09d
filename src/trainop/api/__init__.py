"""The ``kubeflow.org/v1`` API: the six job kinds as pydantic models, and what turns text into them.

``load`` parses YAML/JSON into models, ``defaults`` fills in what the apiserver and upstream's webhooks
would, ``validation`` rejects what upstream rejects, each error with its field path (``errors``);
``crds`` generates manifests/crds from the models. The bottom layer: pure, it imports nothing of ours.
"""
