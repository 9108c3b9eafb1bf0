"""kernels_cuda."""
