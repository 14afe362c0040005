"""``python -m hybridgpu`` (and the ``hybridgpu`` script): with no command it prints help;
``python -m hybridgpu bench`` is the main job (see ``hybridgpu.bench``)."""

import sys

from .bench import main

if __name__ == "__main__":
    sys.exit(main())
