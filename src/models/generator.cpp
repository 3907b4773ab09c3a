// Generator: prefill and decode as two programs of one session over shared weights and caches.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <set>

#include "meganeura/error.hpp"
#include "meganeura/llama.hpp"
#include "runtime/persistent_decode.hpp"
#include "trace/trace.hpp"
#include "util/env.hpp"
#include "util/log_topic.hpp"

namespace meganeura::models {

namespace {

// One path of the model (prefill or decode) over `seq` tokens: inputs <name>.ids [1, seq],
// <name>.positions [seq], <name>.start [1], <name>.last [1] (the row whose logits come out);
// output <name>.logits [1, 1, vocab].
void add_path(Graph& g, const Llama& model, const std::vector<Llama::Cache>& caches, const std::string& name,
              int64_t seq) {
  Tensor ids = g.input(name + ".ids", {1, seq}, i32);
  Tensor positions = g.input(name + ".positions", {seq}, i32);
  Tensor start = g.input(name + ".start", {1}, i32);
  Tensor last = g.input(name + ".last", {1}, i32);
  Tensor hidden = model.forward_cached(ids, positions, start, caches);
  auto scope = g.scope("lm_head");
  g.output(name + ".logits", model.head(gather(hidden, last, 1)));
}

}  // namespace

Generator::Generator(const LlamaConfig& config, const GeneratorOptions& options)
    : config_(config), options_(options), graph_(std::make_unique<Graph>()), session_([&] {
        if (options.max_seq < 1 || options.prefill_chunk < 1)
          throw Error("Generator: max_seq and prefill_chunk must be positive");
        // Slack for the padded tail of the last prefill chunk; rope tables cover every slot.
        const int64_t slots = options.max_seq + options.prefill_chunk;
        LlamaConfig c = config;
        c.max_position_embeddings = std::max(c.max_position_embeddings, slots);
        Graph& g = *graph_;
        Llama model(g, c);
        rope_cos_ = model.rope.cos_table.id();
        rope_sin_ = model.rope.sin_table.id();
        std::vector<Llama::Cache> caches;
        for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
          const Shape s = model.cache_shape(1, slots);
          caches.push_back({g.state("cache.layers." + std::to_string(l) + ".k", s),
                            g.state("cache.layers." + std::to_string(l) + ".v", s)});
        }
        add_path(g, model, caches, "prefill", options.prefill_chunk);
        add_path(g, model, caches, "decode", 1);
        SessionOptions so = options.session;
        so.programs = {{"prefill.logits"}, {"decode.logits"}};
        return build_inference_session(g, so);
      }()) {
  if (options.persistent) start_persistent();
}

Generator::~Generator() = default;

namespace {

std::vector<float> first_floats(const Node& n, size_t count) {
  std::vector<float> v(count);
  std::memcpy(v.data(), n.constant.data(), std::min(n.constant.size(), count * 4));
  return v;
}

}  // namespace

void Generator::start_persistent() {
  // Where the device cannot take it, or no grid was resident, the decode program decodes.
  const bool log = util::log_topic("persistent");
  const std::string wanted = util::env_choice("MEGANEURA_PERSISTENT", {"0", "1"});
  if (wanted == "0") return;
  if (wanted.empty() && PersistentDecoder::slower_than_program(session_)) {
    if (log) std::fprintf(stderr, "meganeura: persistent decoding off on a CPU (MEGANEURA_PERSISTENT=1 forces it)\n");
    return;
  }
  const Graph& g = *graph_;
  std::set<std::string, std::less<>> named;
  for (int id = 0; id < g.size(); ++id)
    if (g.node(id).op == Op::Parameter || g.node(id).op == Op::State) named.insert(g.node(id).name);
  auto present = [&](const std::string& name) { return named.count(name) ? name : std::string(); };
  const LlamaConfig& c = config_;
  PersistentDecodeModel m;
  m.hidden = c.hidden_size;
  m.heads = c.num_attention_heads;
  m.kv_heads = c.num_key_value_heads;
  m.head_dim = c.head_dim;
  m.ffn = c.intermediate_size;
  m.vocab = c.vocab_size;
  m.window = c.sliding_window;
  m.slots = options_.max_seq + options_.prefill_chunk;
  m.eps = static_cast<float>(c.rms_norm_eps);
  m.embed = present("model.embed_tokens.weight");
  m.final_norm = present("model.norm.weight");
  m.lm_head = c.tie_word_embeddings ? m.embed : present("lm_head.weight");
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".", a = p + "self_attn.", f = p + "mlp.";
    const std::string cache = "cache.layers." + std::to_string(l) + ".";
    m.layers.push_back({present(p + "input_layernorm.weight"), present(a + "q_proj.weight"),
                        present(a + "k_proj.weight"), present(a + "v_proj.weight"), present(a + "q_proj.bias"),
                        present(a + "k_proj.bias"), present(a + "v_proj.bias"), present(a + "o_proj.weight"),
                        present(a + "o_proj.bias"), present(p + "post_attention_layernorm.weight"),
                        present(f + "gate_proj.weight"), present(f + "up_proj.weight"), present(f + "down_proj.weight"),
                        present(f + "gate_proj.bias"), present(f + "up_proj.bias"), present(f + "down_proj.bias"),
                        present(cache + "k"), present(cache + "v")});
  }
  const auto table = static_cast<size_t>(m.slots * m.head_dim);
  m.cos = first_floats(g.node(rope_cos_), table);
  m.sin = first_floats(g.node(rope_sin_), table);
  try {
    persistent_ = std::make_unique<PersistentDecoder>(session_, m);
    if (log)
      std::fprintf(stderr, "meganeura: persistent decoding on %u workgroups, %s weights%s%s\n", persistent_->grid(),
                   persistent_->weights().c_str(), persistent_->why_f32_weights().empty() ? "" : ": ",
                   persistent_->why_f32_weights().c_str());
  } catch (const Error& e) {  // the device cannot take it, or no grid was resident
    if (log) std::fprintf(stderr, "meganeura: persistent decoding off: %s\n", e.what());
  }
}

std::vector<std::pair<std::string, double>> Generator::decode_profile() const {
  return logits_persistent_ ? persistent_->profile() : session_.profile(1);
}

uint32_t Generator::persistent_grid() const { return persistent_ ? persistent_->grid() : 0; }

std::string Generator::persistent_weights() const { return persistent_ ? persistent_->weights() : std::string(); }

void Generator::arm_persistent_timeout_for_test() {
  if (persistent_) persistent_->arm_timeout_for_test();
}

void Generator::load(const Checkpoint& checkpoint) { load_weights(session_, *graph_, checkpoint); }

static HostTensor one_i32(int64_t v) { return HostTensor::i32s({1}, std::vector<int32_t>{static_cast<int32_t>(v)}); }

std::vector<float> Generator::prefill(const std::vector<int32_t>& prompt) {
  if (prompt.empty()) throw Error("Generator::prefill: the prompt is empty (start it with the BOS token, if any)");
  if (static_cast<int64_t>(prompt.size()) > options_.max_seq)
    throw Error("Generator::prefill: the prompt has " + std::to_string(prompt.size()) + " tokens, more than max_seq " +
                std::to_string(options_.max_seq));
  const int64_t chunk = options_.prefill_chunk;
  trace::Scope scope("Generator prefill", {{"tokens", static_cast<int64_t>(prompt.size())}}, true);
  std::vector<float> logits;
  for (int64_t begin = 0; begin < static_cast<int64_t>(prompt.size()); begin += chunk) {
    const int64_t n = std::min<int64_t>(chunk, static_cast<int64_t>(prompt.size()) - begin);
    std::vector<int32_t> ids(static_cast<size_t>(chunk), 0), positions(static_cast<size_t>(chunk));
    std::copy(prompt.begin() + begin, prompt.begin() + begin + n, ids.begin());
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(begin));
    session_.set_input("prefill.ids", HostTensor::i32s({1, chunk}, ids));
    session_.set_input("prefill.positions", HostTensor::i32s({chunk}, positions));
    session_.set_input("prefill.start", one_i32(begin));
    session_.set_input("prefill.last", one_i32(n - 1));
    session_.run(0);
    position_ = begin + n;
  }
  return session_.read_output("prefill.logits").to_f32();
}

std::vector<float> Generator::decode(int32_t token) {
  advance(token);
  return logits_persistent_ ? persistent_->logits() : session_.read_output("decode.logits").to_f32();
}

void Generator::advance(int32_t token) {
  if (position_ == 0) throw Error("Generator::decode before prefill()");
  if (position_ >= options_.max_seq)
    throw Error("Generator::decode: the sequence is at max_seq (" + std::to_string(options_.max_seq) + " tokens)");
  trace::Scope scope("Generator decode", {{"position", position_}}, true);
  logits_persistent_ = false;
  if (persistent_) {
    if (persistent_->step(token, position_)) {
      logits_persistent_ = true;
      ++position_;
      return;
    }
    persistent_.reset();  // a grid barrier's wait ran out: the program redoes the step, and the rest
  }
  session_.set_input("decode.ids", HostTensor::i32s({1, 1}, std::vector<int32_t>{token}));
  session_.set_input("decode.positions", one_i32(position_));
  session_.set_input("decode.start", one_i32(position_));
  session_.set_input("decode.last", one_i32(0));
  session_.run(1);
  ++position_;
}

int32_t sample_token(const std::vector<float>& logits, const SamplingOptions& o, std::mt19937_64& rng) {
  if (logits.empty()) throw Error("sample_token: no logits");
  if (o.temperature <= 0.0f)  // greedy: the first maximum, as torch.argmax
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Most likely first, ties by id; with top_k only the first k need their order (a decode step
  // over a 49152-token vocabulary should not sort it all).
  auto likelier = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  size_t keep = o.top_k > 0 ? std::min<size_t>(static_cast<size_t>(o.top_k), order.size()) : order.size();
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(), likelier);
  std::vector<double> p(keep);
  const double top = logits[static_cast<size_t>(order[0])];
  double sum = 0;
  for (size_t i = 0; i < keep; ++i)
    sum += p[i] = std::exp((logits[static_cast<size_t>(order[i])] - top) / o.temperature);
  if (o.top_p < 1.0f) {  // the smallest prefix whose probability reaches top_p
    double mass = 0;
    size_t n = 0;
    while (n < keep && mass < o.top_p * sum) mass += p[n++];
    keep = std::max<size_t>(n, 1);
    sum = mass;
  }
  std::uniform_real_distribution<double> u(0.0, sum);
  double r = u(rng);
  for (size_t i = 0; i < keep; ++i)
    if ((r -= p[i]) < 0) return order[i];
  return order[keep - 1];
}

}  // namespace meganeura::models
