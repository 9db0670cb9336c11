"""A griffe extension for the Python API pages (mkdocs.yml names it): ctrlkit's docstrings are
plain prose that sometimes names another object Sphinx's way (:func:`ctrlkit.run`,
:class:`Example`); Markdown has no such roles, so each becomes inline code (`ctrlkit.run`)
instead of showing its colons. The sources stay as they are."""

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|obj|exc|const):`~?([^`]+)`")


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = ROLE.sub(r"``\1``", obj.docstring.value)
