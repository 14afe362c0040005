"""``python -m hybridgpu bench`` (see ``hybridgpu.bench``) and ``python -m hybridgpu gpucheck``
(see ``hybridgpu.gpucheck``)."""

import sys

if __name__ == "__main__":
    if sys.argv[1:2] == ["gpucheck"]:
        from .gpucheck import main as gpucheck_main

        sys.exit(gpucheck_main(sys.argv[2:]))
    from .bench import main

    sys.exit(main())
