"""``python -m hybridgpu bench``: see ``hybridgpu.bench``."""

import sys

from .bench import main

if __name__ == "__main__":
    sys.exit(main())
