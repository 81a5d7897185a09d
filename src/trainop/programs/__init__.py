"""Programs that run inside a job's processes: kubeflow-training's storage initializer and its
Hugging Face LLM trainer, written here with upstream's arguments and on-disk layouts, so they are
interchangeable with upstream's two images (the local backend maps those image names to these modules).

They import nothing else of trainop (this package is the bottom layer) and load the heavy libraries
(transformers, peft, datasets, boto3: the ``finetune`` extra) only when they run.
"""
