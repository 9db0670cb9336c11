"""Training: ``ctrlkit train`` fine-tunes a backbone (full or LoRA) with a controller's inputs.

- :mod:`.trainer`: :func:`ctrlkit.train` itself (the data, the optimizer loop, the saved model);
- :mod:`.schedules`: the learning-rate schedules it steps.
"""
