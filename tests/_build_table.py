"""The modules setup.py builds, read from its source (not imported: setup.py
runs setup() when imported)."""

import ast


def build_table(setup_py):
    """Module names of setup.py's EXTENSIONS table and its SHARED_UTILITY
    module: what an installed package or a wheel must hold compiled."""
    values = {}
    for node in ast.parse(setup_py.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)):
            values[node.targets[0].id] = node.value
    extensions = ast.literal_eval(values["EXTENSIONS"])
    return sorted(extensions) + [ast.literal_eval(values["SHARED_UTILITY"])]
