"""Build settings shared by the CUDA backend's packages."""

# The copts of the CUDA backend's C++ targets, one definition for
# engine/models/cuda and its subpackages.
CUDA_COPTS = ["-Wno-deprecated-declarations"]
