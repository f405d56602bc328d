// A 3×3, stride-1, padding-1 convolution of channels-last tensors in float64
// with bias, optional residual and ReLU: the reference of the layer1
// kernel's test and of its qualification (kernels/conv3x3_c32.h states the
// arithmetic).
#ifndef DIARIZATION_TESTING_CONV3X3_REFERENCE_H_
#define DIARIZATION_TESTING_CONV3X3_REFERENCE_H_

#include <vector>

namespace diarization::testing {

// x and residual (may be null): (n, h, w, c); oihw: PyTorch's (c, c, 3, 3)
// weight; bias: (c). Returns (n, h, w, c): act(bias[k] + Σ_{dy,dx,j}
// oihw[k,j,dy,dx] · x[b, i+dy−1, l+dx−1, j] (+ residual)) with x = 0
// outside, act = max(0, ·) when `relu`. When `scale` is not null it gets,
// per output, |bias| + Σ|w·x| (+ |residual|): the magnitude error bounds
// are relative to.
std::vector<double> Conv3x3Nhwc(const std::vector<float>& x,
                                const std::vector<float>& oihw,
                                const std::vector<float>& bias,
                                const std::vector<float>* residual, bool relu,
                                int n, int h, int w, int c,
                                std::vector<double>* scale = nullptr);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_CONV3X3_REFERENCE_H_
