"""``python -m hybridgpu`` (and the ``hybridgpu`` script): with no command it prints help;
``python -m hybridgpu bench`` is the main job (see ``hybridgpu.bench``), ``python -m hybridgpu
gpucheck`` the one-call check of a GPU machine (see ``hybridgpu.gpucheck``)."""

import sys

from .bench import main

if __name__ == "__main__":
    sys.exit(main())
