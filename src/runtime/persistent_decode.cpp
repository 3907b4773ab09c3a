#include "runtime/persistent_decode.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/decode_step_abi.hpp"
#include "kernels/kernel_abi.hpp"
#include "runtime/decode_weights_copy.hpp"
#include "runtime/session_impl.hpp"
#include "util/align.hpp"
#include "util/env.hpp"
#include "vulkan/executable.hpp"

namespace meganeura {
namespace {

using kernels::DecodeStepParams;

// The decoder's own buffers; with f16 weights, their jobs and then a buffer a layer and one for
// the LM head.
enum : uint32_t { kParams, kStatus, kTable, kSync, kStep, kScratch, kZero, kReadback, kJobs, kWeights };
constexpr uint64_t kWeightsParamsAt = 256;  // DecodeWeightsParams in kParams, after the step's

// Polls of a grid barrier before it gives up: a step's (far beyond any phase's legitimate wait,
// well inside the fence timeout) and the co-residency probe's (each wave of a grid too large
// to be resident waits this long).
constexpr uint32_t kStepSpins = 1u << 22, kProbeSpins = 1u << 14;

// Offsets in the decoder's scratch buffer: what a step writes, and the rotary tables.
struct Scratch {
  uint64_t x = 0, q = 0, partial = 0, h = 0, logits = 0, cos = 0, sin = 0, bytes = 0;
};
Scratch scratch_layout(const PersistentDecodeModel& m) {
  Scratch s;
  uint64_t at = 0;
  auto take = [&](uint64_t floats) {
    const uint64_t here = at;
    at += util::align_up(floats * 4, 256);
    return here;
  };
  s.x = take(static_cast<uint64_t>(m.hidden));
  s.q = take(static_cast<uint64_t>(m.heads * m.head_dim));
  s.partial = take(static_cast<uint64_t>(m.heads) * kernels::kDecodeAttnBlocks * static_cast<uint64_t>(m.head_dim + 2));
  s.h = take(static_cast<uint64_t>(m.ffn));
  s.logits = take(static_cast<uint64_t>(m.vocab));
  s.cos = take(static_cast<uint64_t>(m.slots * m.head_dim));
  s.sin = take(static_cast<uint64_t>(m.slots * m.head_dim));
  s.bytes = at;
  return s;
}

uint32_t stage_floats(const PersistentDecodeModel& m) {
  const int64_t n = std::max({m.hidden, m.heads * m.head_dim, m.ffn});
  return static_cast<uint32_t>((n + 3) / 4 * 4);
}

// decode_step.comp's shared memory: the staged vector, a q row and a chunk's probabilities a
// subgroup, the workgroup reductions' words (common.glsl), the grid flag.
uint64_t shared_bytes(const PersistentDecodeModel& m, uint32_t subgroup) {
  const uint64_t warps = kernels::kWorkgroupSize / subgroup;
  return 4 * (uint64_t{stage_floats(m)} + warps * static_cast<uint64_t>(m.head_dim) + warps * subgroup +
              kernels::kWorkgroupSize + 16 + 1);
}

// The grids to try, largest first: MEGANEURA_PERSISTENT_GRID where set; one workgroup on a CPU
// (llvmpipe runs workgroups one after another on few threads); a workgroup an SM where the
// device says how many it has; else powers of two down to 32.
std::vector<uint32_t> grid_candidates(const DeviceInfo& info) {
  const uint64_t forced = util::env_number("MEGANEURA_PERSISTENT_GRID", 65535, 0, "a number of workgroups");
  if (forced > 0) return {static_cast<uint32_t>(forced)};
  if (info.type == "CPU") return {1};
  if (info.multiprocessors > 0) return {info.multiprocessors};
  return {256, 128, 64, 32};
}

std::vector<plan::Command> step_list(uint32_t grid, const Scratch& s, const PersistentDecodeModel& m,
                                     uint64_t table_bytes, uint32_t subgroup, bool f16) {
  plan::Dispatch d;
  d.kernel = kernels::Kernel::DecodeStep;
  d.spec = {subgroup, stage_floats(m), static_cast<uint32_t>(m.head_dim), f16 ? 1u : 0u};
  d.params = {kParams, 0, sizeof(DecodeStepParams)};
  d.tensors = {{kTable, 0, table_bytes}, {kSync, 0, 8}, {kStep, 0, 8}};
  d.groups = {grid, 1, 1};
  d.label = "decode_step (persistent, " + std::to_string(grid) + " workgroups, " + (f16 ? "f16" : "f32") + " weights)";
  const uint64_t logits = static_cast<uint64_t>(m.vocab) * 4;
  using B = plan::Barrier;
  return {B{B::ComputeToCompute},  // the session's programs wrote the caches
          plan::Copy{{kZero, 0, 8}, {kSync, 0, 8}},
          B{B::TransferToCompute},
          d,
          B{B::ComputeToCompute},  // the session's programs read the caches next
          B{B::ComputeToTransfer},
          plan::Copy{{kScratch, s.logits, logits}, {kReadback, 0, logits}},
          B{B::TransferToHost}};
}

}  // namespace

struct PersistentDecoder::Impl {
  Session::Impl* session = nullptr;
  PersistentDecodeModel model;
  Scratch scratch;
  std::vector<uint32_t> grids;  // one command list each
  size_t list = 0;              // the one in use
  std::unique_ptr<vk::Executable> exe;
  plan::Program program;  // exe's commands, for the trace
  DecodeStepParams params{};
  uint32_t diagnostics = 0;            // MEGANEURA_PERSISTENT_DIAG: flags that skip phases (timing only)
  std::string f32_why;                 // why the weights are read as f32; "" where they are f16
  DecodeWeightsCopy f16;               // where the f16 weights are (no matrices where f32)
  size_t weights_list = 0;             // the command list that writes them
  uint64_t weights_of = ~uint64_t{0};  // the session's parameter_writes they were made from

  void write_params(uint32_t flags, uint32_t spins) {
    params.flags = flags | diagnostics;
    params.spin_limit = spins;
    exe->write({kParams, 0, sizeof(params)}, std::as_bytes(std::span(&params, 1)));
  }
  kernels::Status take_status() {
    auto* st = static_cast<kernels::Status*>(exe->mapped(kStatus));
    kernels::Status s = *st;
    std::memset(st, 0, sizeof(*st));
    return s;
  }
  // Where the session keeps the parameter or state `name` ("": absent, 0), checked to be f32 [floats].
  uint64_t address(const std::string& name, uint64_t floats) const {
    if (name.empty()) return 0;
    const auto& params = session->parameters;
    auto it = params.find(name);
    if (it == params.end()) {
      it = session->states.find(name);
      if (it == session->states.end()) throw Error("persistent decoding: the session has no \"" + name + "\"");
    }
    const plan::Slice s = session->planned.tensor.at(static_cast<size_t>(it->second.tensor));
    if (it->second.dtype != f32 || s.size != floats * 4)
      throw Error("persistent decoding: \"" + name + "\" is " + std::string(dtype_name(it->second.dtype)) + " " +
                  shape_str(it->second.shape) + ", not f32 of " + std::to_string(floats) + " values");
    return session->exe->device_address(s);
  }
  std::vector<uint64_t> table() const;
  uint64_t copy_address(const DecodeWeightsCopy::Matrix& w) const {
    return exe->device_address({w.buffer, w.offset, w.bytes()});
  }
  // Rounds the weights to f16 again where a parameter was written since.
  void refresh_weights();
  // The program and executable, with the f16 copy where `f16` has matrices; their constants written.
  void build(uint32_t subgroup);
  void probe();
};

std::vector<uint64_t> PersistentDecoder::Impl::table() const {
  using namespace kernels;
  const PersistentDecodeModel& m = model;
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  const uint64_t h = u(m.hidden), d = u(m.head_dim), q = u(m.heads) * d, kv = u(m.kv_heads) * d, f = u(m.ffn);
  const uint64_t own = exe->device_address({kScratch, 0, scratch.bytes});
  std::vector<uint64_t> t(kDecodeGlobals + m.layers.size() * kDecodeLayerEntries, 0);
  t[kDecodeEmbed] = address(m.embed, u(m.vocab) * h);
  t[kDecodeFinalNorm] = address(m.final_norm, h);
  t[kDecodeLmHead] = address(m.lm_head, u(m.vocab) * h);
  t[kDecodeCos] = own + scratch.cos;
  t[kDecodeSin] = own + scratch.sin;
  t[kDecodeX] = own + scratch.x;
  t[kDecodeQ] = own + scratch.q;
  t[kDecodePartial] = own + scratch.partial;
  t[kDecodeH] = own + scratch.h;
  t[kDecodeLogits] = own + scratch.logits;
  for (size_t l = 0; l < m.layers.size(); ++l) {
    const PersistentDecodeModel::Layer& L = m.layers[l];
    uint64_t* e = t.data() + kDecodeGlobals + l * kDecodeLayerEntries;
    e[kDecodeLn1] = address(L.ln1, h);
    e[kDecodeWq] = address(L.wq, q * h);
    e[kDecodeWk] = address(L.wk, kv * h);
    e[kDecodeWv] = address(L.wv, kv * h);
    e[kDecodeBq] = address(L.bq, q);
    e[kDecodeBk] = address(L.bk, kv);
    e[kDecodeBv] = address(L.bv, kv);
    e[kDecodeWo] = address(L.wo, h * q);
    e[kDecodeBo] = address(L.bo, h);
    e[kDecodeLn2] = address(L.ln2, h);
    e[kDecodeWgate] = address(L.wgate, f * h);
    e[kDecodeWup] = address(L.wup, f * h);
    e[kDecodeWdown] = address(L.wdown, h * f);
    e[kDecodeBgate] = address(L.bgate, f);
    e[kDecodeBup] = address(L.bup, f);
    e[kDecodeBdown] = address(L.bdown, h);
    e[kDecodeKCache] = address(L.k_cache, u(m.slots) * kv);
    e[kDecodeVCache] = address(L.v_cache, u(m.slots) * kv);
  }
  // With f16 weights the matrices are read from their copies instead.
  for (const DecodeWeightsCopy::Matrix& w : f16.matrices) t[w.table_entry] = copy_address(w);
  return t;
}

void PersistentDecoder::Impl::refresh_weights() {
  if (f16.matrices.empty() || weights_of == session->parameter_writes) return;
  run_traced(*exe, program, weights_list, "persistent decoding's weights to f16",
             {{"session", static_cast<int64_t>(session->trace_hold->id())}});
  weights_of = session->parameter_writes;
}

void PersistentDecoder::Impl::build(uint32_t subgroup) {
  const PersistentDecodeModel& m = model;
  const uint64_t table_bytes = (kernels::kDecodeGlobals + m.layers.size() * kernels::kDecodeLayerEntries) * 8;
  const bool f16_weights = !f16.matrices.empty();
  plan::Program p;
  p.buffers = {
      {"persistent decoding's params", kWeightsParamsAt + 256, plan::Memory::DeviceLocal},
      {"persistent decoding's status block", sizeof(kernels::Status), plan::Memory::HostShared},
      {"persistent decoding's address table", table_bytes, plan::Memory::DeviceLocal},
      {"persistent decoding's barrier counters", 8, plan::Memory::DeviceLocal},
      {"persistent decoding's token and position", 8, plan::Memory::HostShared},
      {"persistent decoding's scratch", scratch.bytes, plan::Memory::DeviceLocal},
      {"persistent decoding's zeros", 8, plan::Memory::DeviceLocal},
      {"persistent decoding's logits", static_cast<uint64_t>(m.vocab) * 4, plan::Memory::Readback},
      {"persistent decoding's f16 jobs", std::max<uint64_t>(f16.matrices.size() * 32, 32), plan::Memory::DeviceLocal}};
  for (size_t i = 0; i < f16.buffer_bytes.size(); ++i)
    p.buffers.push_back({i + 1 < f16.buffer_bytes.size()
                             ? "persistent decoding's f16 weights of layer " + std::to_string(i)
                             : std::string("persistent decoding's f16 LM head"),
                         f16.buffer_bytes[i], plan::Memory::DeviceLocal});
  p.status_buffer = kStatus;
  p.commands = step_list(grids[0], scratch, m, table_bytes, subgroup, f16_weights);
  for (size_t i = 1; i < grids.size(); ++i)
    p.extra.push_back(step_list(grids[i], scratch, m, table_bytes, subgroup, f16_weights));
  if (f16_weights) {
    p.extra.push_back(f16.commands({kParams, kWeightsParamsAt, sizeof(kernels::DecodeWeightsParams)},
                                   {kJobs, 0, f16.matrices.size() * 32}, subgroup));
    weights_list = p.extra.size();  // extra list i is list 1 + i
  }
  // Timestamps where the session has them (SessionOptions::profile, MEGANEURA_TRACE): the trace
  // shows the step as one GPU slice.
  exe = std::make_unique<vk::Executable>(
      session->ctx, p, vk::ExecutableOptions{.timestamps = session->options.profile || trace::global()});
  program = std::move(p);

  exe->write({kZero, 0, 8}, std::vector<std::byte>(8));
  std::memset(exe->mapped(kStatus), 0, sizeof(kernels::Status));
  exe->write({kScratch, scratch.cos, m.cos.size() * 4}, std::as_bytes(std::span(m.cos)));
  exe->write({kScratch, scratch.sin, m.sin.size() * 4}, std::as_bytes(std::span(m.sin)));
  const std::vector<uint64_t> addresses = table();
  exe->write({kTable, 0, table_bytes}, std::as_bytes(std::span(addresses)));
  if (f16_weights) {
    const std::vector<uint32_t> jobs =
        f16.jobs([&](const DecodeWeightsCopy::Matrix& w) { return address(w.name, w.rows * w.k); },
                 [&](const DecodeWeightsCopy::Matrix& w) { return copy_address(w); });
    exe->write({kJobs, 0, jobs.size() * 4}, std::as_bytes(std::span(jobs)));
    const kernels::DecodeWeightsParams wp{static_cast<uint32_t>(f16.matrices.size()), 0, 0, 0};
    exe->write({kParams, kWeightsParamsAt, sizeof(wp)}, std::as_bytes(std::span(&wp, 1)));
  }
}

// The first candidate grid whose workgroups all pass one grid barrier together.
void PersistentDecoder::Impl::probe() {
  kernels::Status s{};
  for (size_t i = 0; i < grids.size(); ++i) {
    write_params(kernels::DECODE_FLAG_PROBE, kProbeSpins);
    exe->run(i);
    s = take_status();
    if (s.code == kernels::STATUS_OK) {
      list = i;
      write_params(0, kStepSpins);
      return;
    }
  }
  throw Error("persistent decoding: no grid of " + std::to_string(grids.back()) +
              " workgroups or more was resident at once on " + session->ctx->info().name + " (status " +
              std::to_string(s.code) + ")");
}

namespace {

// Why the session's device cannot run `m` this way, or "" when it can.
std::string unsupported(const vk::Context& ctx, const PersistentDecodeModel& m) {
  const DeviceInfo& info = ctx.info();
  if (!ctx.device_addresses()) return info.name + " offers no bufferDeviceAddress";
  if (!info.subgroup_arithmetic || info.subgroup_size == 0 || kernels::kWorkgroupSize % info.subgroup_size != 0)
    return info.name + " offers no subgroup arithmetic of a size that divides the workgroup";
  if (m.layers.empty() || m.hidden % 4 || m.ffn % 4 || m.head_dim % 4 || m.heads % m.kv_heads)
    return "hidden, intermediate and head sizes must be multiples of 4, and heads a multiple of kv_heads";
  if (m.cos.size() != static_cast<size_t>(m.slots * m.head_dim) || m.sin.size() != m.cos.size())
    return "rotary tables of slots x head_dim are needed";
  const uint64_t shared = shared_bytes(m, info.subgroup_size);
  if (shared > info.shared_memory)
    return "the kernel would need " + std::to_string(shared) + " bytes of shared memory, more than the " +
           std::to_string(info.shared_memory) + " of " + info.name;
  return "";
}

}  // namespace

bool PersistentDecoder::slower_than_program(Session& session) { return impl_of(session).ctx->info().type == "CPU"; }

PersistentDecoder::PersistentDecoder(Session& session, const PersistentDecodeModel& m)
    : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.session = &impl_of(session);
  if (const std::string why = unsupported(*d.session->ctx, m); !why.empty()) throw Error("persistent decoding: " + why);
  d.model = m;
  d.scratch = scratch_layout(m);
  const auto& ctx = d.session->ctx;
  d.grids = grid_candidates(ctx->info());
  const uint32_t subgroup = ctx->info().subgroup_size;

  d.f16 = DecodeWeightsCopy::of(m, kWeights);
  d.f32_why = d.f16.why_f32(d.session->train.has_value(), ctx->max_allocation_size());
  if (!d.f32_why.empty()) d.f16 = {};
  const auto u = [](int64_t v) { return static_cast<uint32_t>(v); };
  d.params = {u(m.hidden),
              u(m.heads),
              u(m.kv_heads),
              u(m.head_dim),
              u(m.ffn),
              u(m.vocab),
              u(m.layers.size()),
              u(m.window),
              u(m.slots),
              0,
              kStepSpins,
              0,
              m.eps,
              1.0f / std::sqrt(static_cast<float>(m.head_dim)),
              0.0f,
              0.0f};
  // The executable, its constants and the probe; an allocation that fails with the f16 copy makes
  // them again without it (the copy is an option: the step then reads the f32 weights, in less
  // memory).
  try {
    d.build(subgroup);
    d.probe();
  } catch (const OutOfMemoryError& e) {
    if (d.f16.matrices.empty()) throw;
    d.f32_why = std::string("the f16 copy did not fit (") + e.what() + ")";
    d.f16 = {};
    d.build(subgroup);
    d.probe();
  }
  d.diagnostics = static_cast<uint32_t>(
      util::env_number("MEGANEURA_PERSISTENT_DIAG", 2047, 0, "a mask of decode_step.comp's SKIP_ flags"));
  if (d.diagnostics) d.write_params(0, kStepSpins);
}

PersistentDecoder::~PersistentDecoder() = default;

bool PersistentDecoder::step(int32_t token, int64_t position) {
  Impl& d = *impl_;
  if (token < 0 || token >= d.model.vocab)
    throw RuntimeDataError("decoding: token " + std::to_string(token) + " is outside the vocabulary [0, " +
                           std::to_string(d.model.vocab) + ")");
  if (position < 0 || position >= d.model.slots)
    throw RuntimeDataError("decoding: position " + std::to_string(position) + " is outside the cache's " +
                           std::to_string(d.model.slots) + " slots");
  d.refresh_weights();
  auto* in = static_cast<int32_t*>(d.exe->mapped(kStep));
  in[0] = token;
  in[1] = static_cast<int32_t>(position);
  run_traced(*d.exe, d.program, d.list, "decode step (persistent)",
             {{"session", static_cast<int64_t>(d.session->trace_hold->id())}, {"position", position}});
  const kernels::Status s = d.take_status();
  if (d.params.flags != d.diagnostics) d.write_params(0, kStepSpins);  // an armed test timeout fires once
  if (s.code == kernels::STATUS_OK) return true;
  if (s.code == kernels::STATUS_GRID_TIMEOUT) return false;
  if (s.code == kernels::STATUS_SUBGROUP_SIZE)
    throw DeviceError("the device ran the persistent decoding kernel with subgroups of " + std::to_string(s.value) +
                      ", not the " + std::to_string(s.limit) + " it reports");
  throw RuntimeDataError("the persistent decoding kernel reported status " + std::to_string(s.code));
}

std::vector<float> PersistentDecoder::logits() const {
  std::vector<float> out(static_cast<size_t>(impl_->model.vocab));
  std::memcpy(out.data(), impl_->exe->mapped(kReadback), out.size() * 4);
  return out;
}

std::vector<std::pair<std::string, double>> PersistentDecoder::profile() const {
  const Impl& d = *impl_;
  const std::vector<vk::DispatchTime> t = d.exe->dispatch_intervals_ns(d.list);
  if (t.empty()) return {};
  for (const plan::Command& c : d.program.list(d.list))
    if (const auto* dispatch = std::get_if<plan::Dispatch>(&c)) return {{dispatch->label, t[0].end_ns - t[0].begin_ns}};
  return {};
}

uint32_t PersistentDecoder::grid() const { return impl_->grids[impl_->list]; }

std::string PersistentDecoder::weights() const { return impl_->f32_why.empty() ? "f16" : "f32"; }
const std::string& PersistentDecoder::why_f32_weights() const { return impl_->f32_why; }

void PersistentDecoder::arm_timeout_for_test() { impl_->write_params(kernels::DECODE_FLAG_ONE_SHORT, 1000); }

}  // namespace meganeura
