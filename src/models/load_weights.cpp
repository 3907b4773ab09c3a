#include "meganeura/load_weights.hpp"

#include <string>
#include <vector>

namespace meganeura::models {

void load_weights(Session& session, const Graph& g, const Checkpoint& checkpoint) {
  std::vector<std::string> names;
  for (const Node& n : g.nodes())
    if (n.op == Op::Parameter) names.push_back(n.name);
  session.set_parameters(checkpoint, names);
}

}  // namespace meganeura::models
