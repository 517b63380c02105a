"""Package discovery for the design card's layout (see pyproject.toml).

The top-level folders are installed under one namespace (``fabric/`` as
``slotnet.fabric``, ...); every sub-package below them is found here, so a new scheme
package needs no edit to any list.
"""

from setuptools import find_packages, setup

ROOTS = ("fabric", "nodes", "schemes", "orchestrator")

packages = ["slotnet"] + [f"slotnet.{root}" for root in ROOTS]
packages += [f"slotnet.{root}.{sub}" for root in ROOTS for sub in find_packages(root)]
setup(packages=packages)
