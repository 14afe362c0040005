"""``python -m hybridgpu`` (and the ``hybridgpu`` script): with no command it prints help;
``python -m hybridgpu bench`` is the main job (see ``hybridgpu.bench``), ``python -m hybridgpu
gpucheck`` the one-call check of a GPU machine (see ``hybridgpu.gpucheck``)."""

import sys


def main(argv=None):
    """Dispatch ``gpucheck`` to ``hybridgpu.gpucheck``, everything else to ``hybridgpu.bench``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gpucheck"]:
        from .gpucheck import main as gpucheck_main

        return gpucheck_main(argv[1:])
    from .bench import main as bench_main

    return bench_main(argv)


if __name__ == "__main__":
    sys.exit(main())
