"""kernels_triton."""
