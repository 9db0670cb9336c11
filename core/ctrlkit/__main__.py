"""``python -m ctrlkit`` and the ``ctrlkit`` command (``ctrlkit.__main__:main``)."""

from .interrupted import exit_interrupted


def main():
    try:  # a Ctrl-C while the CLI's modules load ends as one in a command does, without a traceback
        from .cli import main as cli_main
    except KeyboardInterrupt:
        exit_interrupted()
    cli_main()


if __name__ == "__main__":
    main()
