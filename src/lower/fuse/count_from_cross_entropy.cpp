// A cross_entropy's backward needs the number of labels that count (not ignore_index); the
// forward's finishing dispatch sums exactly that. Where a cross_entropy_backward reads the same
// logits and labels as a cross_entropy with the same ignore_index, it reads the forward's count
// instead of counting again in a dispatch of its own.
#include "lower/fuse/pass.hpp"

namespace meganeura::lower {

void count_from_cross_entropy(PassContext& c, Grouping& groups) {
  static const Pattern forward = node(Op::CrossEntropy, {var("logits"), var("labels")});
  static const Pattern backward = node(Op::CrossEntropyBackward, {var("logits"), var("labels"), var("dloss")});
  for (int b = 0; b < c.g.size(); ++b) {
    const auto mb = match(c.g, b, backward);
    if (!mb || !groups.alone(b)) continue;
    for (int f = 0; f < b; ++f) {
      const auto mf = match(c.g, f, forward);
      if (!mf || groups.owner(f) < 0 || (*mf)["logits"] != (*mb)["logits"] || (*mf)["labels"] != (*mb)["labels"] ||
          c.node(f).attrs.ignore_index != c.node(b).attrs.ignore_index)
        continue;
      groups.share(groups.owner(b), f, FusedAs::CountFrom);
      break;
    }
  }
}

}  // namespace meganeura::lower
