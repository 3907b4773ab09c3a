#version 450
#ifdef VMM
#pragma use_vulkan_memory_model
#extension GL_KHR_memory_scope_semantics : require
#endif
// The sync probe's kernel (probe.cpp): a chain of GEMV phases y = W x, each phase reading the
// previous one's output, as a decoding step's products do. A workgroup stages x in shared memory
// and computes 8 outputs a tile, a subgroup each.
//   PERSISTENT 0: one dispatch a phase (push constant `first`), ordered by the host's barriers.
//   PERSISTENT 1: one dispatch for all phases; each workgroup walks the tiles of a phase with a
//                 stride of the grid, arrives at the phase's counter (zeroed before the
//                 dispatch), and before its first tile of the next phase waits until every
//                 workgroup of the grid arrived. A grid that is not co-resident times out (a
//                 flag after the counters) instead of hanging.
//   PERSISTENT 2: one dispatch a phase as in 0, with no barriers between them: each workgroup waits
//                 until every workgroup of the previous phase's dispatch arrived at its counter
//                 (which relies on the device launching one dispatch's workgroups before the
//                 next's; a wait that never ends times out as above).
//   PREFETCH:     the first PREFETCH 16-byte weight loads of a lane's column are issued before
//                 the wait (weights do not depend on the previous phase), so that the wait and
//                 the loads' latency overlap.
// On lavapipe only a grid of one workgroup is meaningful: llvmpipe ends any loop after 65535
// iterations, spin loops included, so a wait longer than that falls through.
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint PERSISTENT = 0u;
layout(constant_id = 2) const uint PREFETCH = 0u;

struct Phase {
  uint k, n, w_at, pad;  // K (a multiple of 4, at most kMaxK), N, W's first vec4
};
layout(std430, binding = 0) readonly buffer Phases { Phase phases[]; };
layout(std430, binding = 1) readonly buffer Weights { vec4 w[]; };
// The activations are written by one workgroup and read by others, in the same dispatch or one
// not separated from it by a barrier. Three builds:
//   gemv_phases.spv        coherent: every load past L1;
//   gemv_phases_plain.spv  (ACTS_PLAIN) plain loads, which may hit stale lines of an SM's L1;
//   gemv_phases_vmm.spv    (VMM) the Vulkan memory model: nonprivate loads (cached), made visible
//                          by the wait's acquire at device scope (MakeVisible), and the outputs
//                          made available by the arrival's release (MakeAvailable).
#if defined(VMM)
#define ACTS_QUALIFIER nonprivate
#elif defined(ACTS_PLAIN)
#define ACTS_QUALIFIER
#else
#define ACTS_QUALIFIER coherent
#endif
layout(std430, binding = 2) ACTS_QUALIFIER buffer Activations { float act[]; };  // two halves of kHalf, alternating
#ifdef VMM
layout(std430, binding = 3) buffer Counters { uint arrived[]; };  // atomics only
#else
layout(std430, binding = 3) coherent buffer Counters { uint arrived[]; };  // [phase], then the timeout flag
#endif
layout(push_constant) uniform Push { uint first, count, grid, timeout_at; } pc;

const uint kHalf = 16384u, kMaxK = 8192u;
const uint kSpinLimit = 1u << 20;  // ~0.5 s of spinning: a grid that was not co-resident

shared vec4 xs[kMaxK / 4u];
shared uint timed_out;

#ifdef VMM
const int kAvailableVisible = gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible;
const int kBufferShared = gl_StorageSemanticsBuffer | gl_StorageSemanticsShared;
void workgroup_barrier() {
  controlBarrier(gl_ScopeWorkgroup, gl_ScopeWorkgroup, gl_StorageSemanticsShared, kAvailableVisible);
}
void device_barrier() {  // the workgroup's writes available, and others' visible, at device scope
  controlBarrier(gl_ScopeWorkgroup, gl_ScopeDevice, kBufferShared, kAvailableVisible);
}
uint load_counter(uint i) {
  return atomicLoad(arrived[i], gl_ScopeDevice, gl_StorageSemanticsBuffer,
                    gl_SemanticsAcquire | gl_SemanticsMakeVisible);
}
void count_in(uint i) {
  atomicAdd(arrived[i], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelease | gl_SemanticsMakeAvailable);
}
void store_counter(uint i, uint v) {
  atomicStore(arrived[i], v, gl_ScopeDevice, gl_StorageSemanticsBuffer, gl_SemanticsRelaxed);
}
void set_timed_out(uint v) {
  atomicStore(timed_out, v, gl_ScopeWorkgroup, gl_StorageSemanticsShared, gl_SemanticsRelaxed);
}
bool is_timed_out() {
  return atomicLoad(timed_out, gl_ScopeWorkgroup, gl_StorageSemanticsShared, gl_SemanticsRelaxed) != 0u;
}
#else
void workgroup_barrier() { barrier(); }
void device_barrier() {
  memoryBarrierBuffer();
  barrier();
}
uint load_counter(uint i) { return arrived[i]; }  // coherent: each read goes to memory
void count_in(uint i) { atomicAdd(arrived[i], 1u); }
void store_counter(uint i, uint v) { arrived[i] = v; }
void set_timed_out(uint v) { timed_out = v; }
bool is_timed_out() { return timed_out != 0u; }
#endif
vec4 early[PREFETCH > 0u ? PREFETCH : 1u];  // the first weight loads of this lane's column

void prefetch(Phase ph, uint tile) {
  const uint n = tile * 8u + gl_SubgroupID, k4 = ph.k / 4u, row = ph.w_at + n * k4;
  for (uint j = 0u; j < PREFETCH; ++j) {
    const uint i = gl_SubgroupInvocationID + j * gl_SubgroupSize;
    early[j] = n < ph.n && i < k4 ? w[row + i] : vec4(0.0f);
  }
}

// Outputs tile * 8 ... of the phase; `prefetched`: early[] holds this tile's first loads.
void gemv_tile(Phase ph, uint tile, uint in_at, uint out_at, bool prefetched) {
  const uint k4 = ph.k / 4u;
  for (uint i = gl_LocalInvocationIndex; i < k4; i += gl_WorkGroupSize.x) {
    const uint x = in_at + 4u * i;
    xs[i] = vec4(act[x], act[x + 1u], act[x + 2u], act[x + 3u]);
  }
  workgroup_barrier();
  const uint n = tile * 8u + gl_SubgroupID, row = ph.w_at + n * k4;
  if (n < ph.n) {
    float sum = 0.0f;
    uint i = gl_SubgroupInvocationID;
    if (prefetched)
      for (uint j = 0u; j < PREFETCH; ++j, i += gl_SubgroupSize)
        if (i < k4) sum += dot(xs[i], early[j]);
    for (; i < k4; i += gl_SubgroupSize) sum += dot(xs[i], w[row + i]);
    sum = subgroupAdd(sum);
    // The weights are 1e-3: each output is the mean of its inputs plus one, so that a phase that
    // read a stale input would leave a smaller number at the end of the chain.
    if (subgroupElect()) act[out_at + n] = sum * 1000.0f / float(ph.k) + 1.0f;
  }
  workgroup_barrier();
}

// This workgroup's outputs of phase p are written: count it in.
void arrive(uint p) {
  device_barrier();  // the outputs written before the count
  if (gl_LocalInvocationIndex == 0u) count_in(p);
}

// `count` workgroups have arrived at phase p; false after a timeout.
bool wait_for(uint p, uint count) {
  if (gl_LocalInvocationIndex == 0u) {
    set_timed_out(0u);
    uint spins = 0u;
    while (load_counter(p) < count) {
      // Another workgroup's timeout ends every wait (a late one's within 256 spins).
      if (((++spins & 255u) == 0u && load_counter(pc.timeout_at) != 0u) || spins == kSpinLimit) {
        store_counter(pc.timeout_at, 1u);
        set_timed_out(1u);
        break;
      }
    }
  }
  device_barrier();  // the other workgroups' outputs read after their counts
  return !is_timed_out();  // one answer for the whole workgroup
}

void main() {
  for (uint p = pc.first; p < pc.first + pc.count; ++p) {
    const Phase ph = phases[p];
    const uint in_at = (p & 1u) * kHalf, out_at = kHalf - in_at, tiles = (ph.n + 7u) / 8u;
    const uint first = gl_WorkGroupID.x;  // this workgroup's first tile
    const bool early_loads = PREFETCH > 0u && first < tiles;
    if (early_loads) prefetch(ph, first);
    if (PERSISTENT == 0u) {
      gemv_tile(ph, first, in_at, out_at, early_loads);
      return;
    }
    if (PERSISTENT == 2u) {
      if (p > 0u && !wait_for(p - 1u, (phases[p - 1u].n + 7u) / 8u)) return;
      gemv_tile(ph, first, in_at, out_at, early_loads);
      arrive(p);
      return;
    }
    if (p > pc.first && !wait_for(p - 1u, pc.grid)) return;
    for (uint t = first; t < tiles; t += pc.grid) gemv_tile(ph, t, in_at, out_at, early_loads && t == first);
    arrive(p);
  }
}
