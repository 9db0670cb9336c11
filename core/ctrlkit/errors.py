"""Exceptions the library raises; the CLI prints each as one line."""


class CtrlkitError(Exception):
    """Base class: a problem with the user's input or setup, reported without a traceback."""


class UnknownComponentError(CtrlkitError, KeyError):
    """A name that no installed plugin registered."""

    def __str__(self):  # KeyError would quote the message
        return self.args[0]


class DuplicateComponentError(CtrlkitError):
    """Two plugins registered the same name."""


class OptionError(CtrlkitError, ValueError):
    """An unknown option, or a value of the wrong type."""


class PluginLoadError(CtrlkitError):
    """A plugin failed to load (an error while CTRLKIT_STRICT_PLUGINS=1), or a component it
    registered cannot be imported, refuses its registration, or fails to be created."""


class ConfigurationError(CtrlkitError):
    """Components that cannot work together (caught before any work starts)."""


class DatasetError(CtrlkitError, ValueError):
    """Bad input data; the message names the file, line and field."""
