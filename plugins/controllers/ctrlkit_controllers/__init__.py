"""Controllers for ctrlkit, registered through the ``ctrlkit`` entry point group."""
