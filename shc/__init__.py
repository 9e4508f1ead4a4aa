"""shc: deep hashing with semantic hash centers (Chen et al., ACM TOIS 2025).

One module per concept:

- ``shc.similarity``  stage 1: class-similarity matrices (data-dependent, text, labels)
- ``shc.centers``     stage 2: hash-center generators (random, CSQ, MDS, SHC) and their quality
- ``shc.models``      backbones and hash heads
- ``shc.losses``      training objectives, one per method, registered by name
- ``shc.methods``     a method = a loss + its centers/codebook + head options + published defaults
- ``shc.train``       the single training loop every method plugs into
- ``shc.metrics``     Hamming-ranking retrieval metrics (mAP@K, P@K, R@K, PR curves)
- ``shc.data``        dataset registry and loaders
- ``shc.pipeline``    the three stages as cached, resumable steps, and the presets
- ``shc.results``     finished runs read into frames, paper-layout tables, curves and example retrievals
- ``shc.plots``, ``shc.reports``  figures and the papermill batch runner

Submodules are imported on demand so that ``import shc`` stays cheap.
"""

__version__ = "0.1.0"
