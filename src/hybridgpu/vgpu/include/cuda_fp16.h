// cuda_fp16.h for the virtual GPU: __half and its conversions come from cuda_shim.h, which
// g++ includes before the kernel source.
#pragma once
