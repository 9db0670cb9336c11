"""An example ctrlkit plugin: the length-code controller and the novelty metric."""
