#include "testing/average_linkage.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

namespace diarization::testing {

std::vector<pipeline::Merge> AverageLinkage(std::vector<double>& d, int n) {
  std::vector<pipeline::Merge> raw;
  if (n < 2) return raw;
  raw.reserve(n - 1);
  std::vector<int> size(n, 1);
  std::vector<int> live(n);
  std::iota(live.begin(), live.end(), 0);
  auto at = [&](int i, int j) -> double& {
    return i < j ? d[pipeline::CondensedIndex(n, i, j)]
                 : d[pipeline::CondensedIndex(n, j, i)];
  };
  // Nearest-neighbour chain as fastcluster's NN_chain_core runs it (the
  // linkage BUT's recipe calls): a chain of one element left after a merge
  // restarts from the smallest live index; ties keep the previous element.
  std::vector<int> chain;
  chain.reserve(n);
  for (int k = 0; k < n - 1; ++k) {
    int a = 0, b = 0;
    double best = std::numeric_limits<double>::infinity();
    if (chain.size() <= 1) {
      chain.assign(1, live[0]);
      a = live[0];
      b = live[1];
      best = at(a, b);
      for (size_t i = 2; i < live.size(); ++i) {
        if (at(a, live[i]) < best) {
          best = at(a, live[i]);
          b = live[i];
        }
      }
    } else {
      b = chain.back();
      chain.pop_back();
      a = chain.back();
      best = at(a, b);
    }
    // Grow the chain until the tip's nearest neighbour is its predecessor.
    while (true) {
      chain.push_back(b);
      int next = a;
      for (int i : live) {
        if (i == b) continue;
        if (at(i, b) < best) {
          best = at(i, b);
          next = i;
        }
      }
      a = b;
      b = next;
      if (b == chain[chain.size() - 2]) break;
    }
    // Merge the last two chain elements (a = tip, b = its predecessor).
    chain.pop_back();
    chain.pop_back();
    int x = a, y = b;
    if (x > y) std::swap(x, y);
    raw.push_back({a, b, best, size[x] + size[y]});
    const double sx = static_cast<double>(size[x]),
                 sy = static_cast<double>(size[y]);
    size[y] += size[x];
    size[x] = 0;
    live.erase(std::lower_bound(live.begin(), live.end(), x));
    const double s = sx / (sx + sy), t = sy / (sx + sy);
    for (int i : live) {
      if (i == y) continue;
      at(i, y) = s * at(i, x) + t * at(i, y);
    }
  }
  // Sort by height (stable) and relabel with union-find, as scipy `label`.
  std::vector<int> order(raw.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return raw[a].distance < raw[b].distance;
  });
  std::vector<int> parent(2 * n - 1);
  std::iota(parent.begin(), parent.end(), 0);
  std::vector<int> uf_size(2 * n - 1, 1);
  auto find = [&](int v) {
    int root = v;
    while (parent[root] != root) root = parent[root];
    while (parent[v] != root) {
      const int next = parent[v];
      parent[v] = root;
      v = next;
    }
    return root;
  };
  std::vector<pipeline::Merge> z;
  z.reserve(raw.size());
  int next_label = n;
  for (int idx : order) {
    int a = find(raw[idx].a), b = find(raw[idx].b);
    if (a > b) std::swap(a, b);
    z.push_back({a, b, raw[idx].distance, uf_size[a] + uf_size[b]});
    parent[a] = next_label;
    parent[b] = next_label;
    uf_size[next_label] = uf_size[a] + uf_size[b];
    ++next_label;
  }
  return z;
}

}  // namespace diarization::testing
