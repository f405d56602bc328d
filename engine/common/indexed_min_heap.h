// Indexed binary min-heap with decrease/increase-key over caller-owned
// arrays: the structure scipy's fast_linkage uses, with its sift rules, so
// equal keys resolve as scipy's do. One home for those rules: the host's
// centroid linkage (ahc.cc) and the GPU's (kernels/centroid_linkage.cu, one
// thread of the block) both run this code, which their bit-for-bit equality
// relies on. Plain C++; under nvcc its members are also device functions.
#ifndef DIARIZATION_ENGINE_COMMON_INDEXED_MIN_HEAP_H_
#define DIARIZATION_ENGINE_COMMON_INDEXED_MIN_HEAP_H_

#if defined(__CUDACC__)
#define DIARIZATION_HOST_DEVICE __host__ __device__
#else
#define DIARIZATION_HOST_DEVICE
#endif

namespace diarization {

struct IndexedMinHeap {
  double* values = nullptr;  // by key
  int* heap = nullptr;       // heap position -> key
  int* pos = nullptr;        // key -> heap position
  int size = 0;

  // heap and pos hold the identity over `size` keys; values are set.
  DIARIZATION_HOST_DEVICE void Heapify() {
    for (int i = size / 2 - 1; i >= 0; --i) SiftDown(i);
  }
  DIARIZATION_HOST_DEVICE int top_key() const { return heap[0]; }
  DIARIZATION_HOST_DEVICE double top_value() const { return values[heap[0]]; }
  DIARIZATION_HOST_DEVICE void RemoveMin() {
    Swap(0, size - 1);
    --size;
    SiftDown(0);
  }
  DIARIZATION_HOST_DEVICE void ChangeValue(int key, double value) {
    const int i = pos[key];
    const double old = values[key];
    values[key] = value;
    if (value < old) {
      SiftUp(i);
    } else {
      SiftDown(i);
    }
  }

 private:
  DIARIZATION_HOST_DEVICE void Swap(int i, int j) {
    const int a = heap[i], b = heap[j];
    heap[i] = b;
    heap[j] = a;
    pos[b] = i;
    pos[a] = j;
  }
  DIARIZATION_HOST_DEVICE void SiftUp(int i) {
    while (i > 0) {
      const int parent = (i - 1) >> 1;
      if (values[heap[parent]] <= values[heap[i]]) break;
      Swap(i, parent);
      i = parent;
    }
  }
  DIARIZATION_HOST_DEVICE void SiftDown(int i) {
    for (int child = 2 * i + 1; child < size; child = 2 * i + 1) {
      if (child + 1 < size && values[heap[child + 1]] < values[heap[child]]) {
        ++child;
      }
      if (values[heap[i]] <= values[heap[child]]) break;
      Swap(i, child);
      i = child;
    }
  }
};

}  // namespace diarization

#undef DIARIZATION_HOST_DEVICE

#endif  // DIARIZATION_ENGINE_COMMON_INDEXED_MIN_HEAP_H_
