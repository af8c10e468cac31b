"""Edits inside the forward pass (``featx extract --intervene``): a state at layer L changed for every token,
every layer above recomputed from it (docs/interventions.md).

``spec``     ``Intervention`` and ``parse_intervention``: what an edit is, parsed and checked without torch
``sources``  ``EditMap``: each edit's affine arithmetic from its erasers file, bundle or seed, checked
             against the loaded model (``resolve_edits``)
``directions``  a ``featx fit`` bundle's per-layer linear directions, read from its files
``apply``    ``apply_edit``: an edit's arithmetic on a tensor of states
``hooks``    ``EditHooks``: the edits applied in place by hooks on the model's blocks
``inner``    edits at a site inside a layer (``@L:SITE``): the site's module, its width, its hooks
"""

from ...lazy import lazy_exports

__all__ = ["apply", "directions", "hooks", "inner", "sources", "spec"]

__getattr__, __dir__ = lazy_exports(__name__, {name: name for name in __all__})  # each module on first use
