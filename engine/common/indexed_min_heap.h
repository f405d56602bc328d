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
  double* values = nullptr;       // by key
  double* heap_values = nullptr;  // by heap position: values[heap[i]]
  int* heap = nullptr;            // heap position -> key
  int* pos = nullptr;             // key -> heap position
  int size = 0;

  // heap and pos hold the identity over `size` keys; values are set.
  DIARIZATION_HOST_DEVICE void Heapify() {
    for (int i = 0; i < size; ++i) heap_values[i] = values[heap[i]];
    for (int i = size / 2 - 1; i >= 0; --i) SiftDown(i);
  }
  DIARIZATION_HOST_DEVICE int top_key() const { return heap[0]; }
  DIARIZATION_HOST_DEVICE double top_value() const { return heap_values[0]; }
  DIARIZATION_HOST_DEVICE void RemoveMin() {
    // scipy's swap of the root with the last entry: the removed key stays
    // just past the heap, its position recorded.
    const int root = heap[0], last = heap[size - 1];
    const double root_value = heap_values[0];
    heap[0] = last;
    heap_values[0] = heap_values[size - 1];
    pos[last] = 0;
    heap[size - 1] = root;
    heap_values[size - 1] = root_value;
    pos[root] = size - 1;
    --size;
    SiftDown(0);
  }
  DIARIZATION_HOST_DEVICE void ChangeValue(int key, double value) {
    const int i = pos[key];
    const double old = values[key];
    values[key] = value;
    heap_values[i] = value;
    if (value < old) {
      SiftUp(i);
    } else {
      SiftDown(i);
    }
  }

 private:
  // scipy's sifts move the entry by swaps with its parent or child; here
  // the entry waits in registers while the others move into the hole it
  // leaves, and lands once: the same comparisons in the same order, so the
  // same final layout, with one dependent shared-memory read per level
  // (heap_values) instead of two (heap, then values) on the GPU.
  DIARIZATION_HOST_DEVICE void SiftUp(int i) {
    const int key = heap[i];
    const double v = heap_values[i];
    while (i > 0) {
      const int parent = (i - 1) >> 1;
      const double pv = heap_values[parent];
      if (pv <= v) break;
      const int pk = heap[parent];
      heap[i] = pk;
      heap_values[i] = pv;
      pos[pk] = i;
      i = parent;
    }
    heap[i] = key;
    heap_values[i] = v;
    pos[key] = i;
  }
  DIARIZATION_HOST_DEVICE void SiftDown(int i) {
    const int key = heap[i];
    const double v = heap_values[i];
    for (int child = 2 * i + 1; child < size; child = 2 * i + 1) {
      double cv = heap_values[child];
      if (child + 1 < size) {
        const double rv = heap_values[child + 1];
        if (rv < cv) {
          ++child;
          cv = rv;
        }
      }
      if (v <= cv) break;
      const int ck = heap[child];
      heap[i] = ck;
      heap_values[i] = cv;
      pos[ck] = i;
      i = child;
    }
    heap[i] = key;
    heap_values[i] = v;
    pos[key] = i;
  }
};

}  // namespace diarization

#undef DIARIZATION_HOST_DEVICE

#endif  // DIARIZATION_ENGINE_COMMON_INDEXED_MIN_HEAP_H_
