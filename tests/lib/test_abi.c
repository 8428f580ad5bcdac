/*
 * The ABI of libsched, frozen: the size, alignment and member offsets of
 * every struct that crosses the library's boundary (libsched.h, mig.h,
 * migrate.h, policy_sdk.h) on the LP64 ABIs of x86-64 and aarch64, the
 * _INIT macros, the run-time version check, and the "fill only the
 * caller's version" rule. A change of layout fails here loudly until this
 * file is updated on purpose, together with the version rules of
 * libsched/README.md ("ABI and compatibility"):
 * - FIXED structs (array elements) never change: size and every offset.
 * - APPENDED structs (a leading version) may only grow at the end, with a
 *   version bump: every offset listed here stays; the size is the one
 *   listed while the version is the one listed, and larger once it grew.
 * - GROWS: lsched_node, stepped by the library's record size
 *   (lsched_view.node_size): members are only appended.
 * - AT_AFTER: members behind an embedded appendable struct (the request
 *   in lsched_running, a placement in lsched_move) move with its size.
 * tests/cli_install.sh also builds and runs this program against the
 * installed headers and library.
 */
#include <libsched/libsched.h>
#include <libsched/migrate.h>
#include <libsched/policy_sdk.h>

#include <stdalign.h>
#include <stddef.h>
#include <string.h>

#include "minitest.h"

#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
#define LAYOUT_FROZEN 1
#else
#define LAYOUT_FROZEN 0
#endif

#define FIXED(T, size, align)                                                  \
  do {                                                                         \
    MT_EQ(sizeof(T), size);                                                    \
    MT_EQ(alignof(T), align);                                                  \
  } while (0)
#define APPENDED(T, VER, ver, size, align)                                     \
  do {                                                                         \
    MT_GE(VER, ver);                                                           \
    if ((VER) == (ver))                                                        \
      MT_EQ(sizeof(T), size);                                                  \
    else                                                                       \
      MT_ASSERT_MSG(sizeof(T) > (size), #T " grew its version but not its "  \
                    "size");                                                   \
    MT_EQ(alignof(T), align);                                                  \
  } while (0)
#define GROWS(T, size, align)                                                  \
  do {                                                                         \
    MT_GE(sizeof(T), size);                                                    \
    MT_EQ(alignof(T), align);                                                  \
  } while (0)
#define AT(T, m, off) MT_EQ(offsetof(T, m), off)
#define AT_AFTER(T, m, emb, E, delta)                                          \
  MT_EQ(offsetof(T, m), offsetof(T, emb) + sizeof(E) + (delta))

static void layout_allocator(void) {
  FIXED(lsched_allocator, 32, 8);
  AT(lsched_allocator, alloc, 0);
  AT(lsched_allocator, realloc, 8);
  AT(lsched_allocator, free, 16);
  AT(lsched_allocator, user, 24);
}

static void layout_cluster_opts(void) {
  APPENDED(lsched_cluster_opts, LSCHED_CLUSTER_OPTS_VERSION, 1, 24, 8);
  AT(lsched_cluster_opts, version, 0);
  AT(lsched_cluster_opts, allocator, 8);
  AT(lsched_cluster_opts, check_invariants, 16);
}

static void layout_node_spec(void) {
  APPENDED(lsched_node_spec, LSCHED_NODE_SPEC_VERSION, 3, 72, 8);
  AT(lsched_node_spec, version, 0);
  AT(lsched_node_spec, name, 8);
  AT(lsched_node_spec, cpu_milli, 16);
  AT(lsched_node_spec, memory_mib, 24);
  AT(lsched_node_spec, gpu_count, 32);
  AT(lsched_node_spec, gpu_model, 36);
  AT(lsched_node_spec, gpu_mode, 40);
  AT(lsched_node_spec, mig_dynamic, 44);
  AT(lsched_node_spec, mig_layout, 48);
  AT(lsched_node_spec, mig_layout_count, 56);
  AT(lsched_node_spec, features, 64);
}

static void layout_node_info(void) {
  APPENDED(lsched_node_info, LSCHED_NODE_INFO_VERSION, 1, 72, 8);
  AT(lsched_node_info, version, 0);
  AT(lsched_node_info, name, 8);
  AT(lsched_node_info, cpu_milli, 16);
  AT(lsched_node_info, memory_mib, 24);
  AT(lsched_node_info, cpu_free, 32);
  AT(lsched_node_info, memory_free, 40);
  AT(lsched_node_info, gpu_count, 48);
  AT(lsched_node_info, gpu_model, 52);
  AT(lsched_node_info, gpu_mode, 56);
  AT(lsched_node_info, gpus_fully_free, 60);
  AT(lsched_node_info, gpu_milli_free, 64);
}

static void layout_totals(void) {
  APPENDED(lsched_totals, LSCHED_TOTALS_VERSION, 1, 64, 8);
  AT(lsched_totals, version, 0);
  AT(lsched_totals, nodes, 4);
  AT(lsched_totals, gpus, 8);
  AT(lsched_totals, cpu_milli, 16);
  AT(lsched_totals, cpu_free, 24);
  AT(lsched_totals, memory_mib, 32);
  AT(lsched_totals, memory_free, 40);
  AT(lsched_totals, gpu_milli, 48);
  AT(lsched_totals, gpu_milli_free, 56);
}

/* Composable pools (0.3). */
static void layout_pools(void) {
  APPENDED(lsched_pool_spec, LSCHED_POOL_SPEC_VERSION, 1, 32, 8);
  AT(lsched_pool_spec, version, 0);
  AT(lsched_pool_spec, gpus, 4);
  AT(lsched_pool_spec, max_per_host, 8);
  AT(lsched_pool_spec, hosts, 16);
  AT(lsched_pool_spec, nhosts, 24);
  AT(lsched_pool_spec, keep_attached, 28);
  APPENDED(lsched_pool_info, LSCHED_POOL_INFO_VERSION, 1, 24, 4);
  AT(lsched_pool_info, version, 0);
  AT(lsched_pool_info, gpus, 4);
  AT(lsched_pool_info, free, 8);
  AT(lsched_pool_info, slots, 12);
  AT(lsched_pool_info, nhosts, 16);
  AT(lsched_pool_info, attached, 20);
}

static void layout_request(void) {
  /* Version 5 put speed_scope in the padding behind node_allowed_count:
   * 120 bytes since version 4, no member moved. */
  APPENDED(lsched_request, LSCHED_REQUEST_VERSION, 5, 120, 8);
  AT(lsched_request, version, 0);
  AT(lsched_request, cpu_milli, 8);
  AT(lsched_request, memory_mib, 16);
  AT(lsched_request, gpu_count, 24);
  AT(lsched_request, gpu_milli, 28);
  AT(lsched_request, model_mask, 32);
  AT(lsched_request, priority, 40);
  AT(lsched_request, mig_kind, 44);
  AT(lsched_request, mig_compute_milli, 48);
  AT(lsched_request, mig_memory_mib, 56);
  AT(lsched_request, features, 64);
  AT(lsched_request, node_allowed, 72);
  AT(lsched_request, node_allowed_count, 80);
  AT(lsched_request, speed_scope, 84);
  AT(lsched_request, node_filter, 88);
  AT(lsched_request, node_filter_user, 96);
  AT(lsched_request, speed, 104);
  AT(lsched_request, speed_user, 112);
}

static void layout_placement(void) {
  APPENDED(lsched_placement, LSCHED_PLACEMENT_VERSION, 1, 48, 8);
  AT(lsched_placement, version, 0);
  AT(lsched_placement, node, 4);
  AT(lsched_placement, gpu_count, 8);
  AT(lsched_placement, gpu_milli, 12);
  AT(lsched_placement, gpu_mask, 16);
  AT(lsched_placement, cpu_milli, 24);
  AT(lsched_placement, memory_mib, 32);
  AT(lsched_placement, mig_kind, 40);
  AT(lsched_placement, mig_start, 44);
}

static void layout_observer(void) {
  APPENDED(lsched_observer, LSCHED_OBSERVER_VERSION, 2, 32, 8);
  AT(lsched_observer, version, 0);
  AT(lsched_observer, on_alloc, 8);
  AT(lsched_observer, on_release, 16);
  AT(lsched_observer, on_node_change, 24);
}

static void layout_task_type(void) {
  APPENDED(lsched_task_type, LSCHED_TASK_TYPE_VERSION, 1, 40, 8);
  AT(lsched_task_type, version, 0);
  AT(lsched_task_type, cpu_milli, 8);
  AT(lsched_task_type, gpu_count, 16);
  AT(lsched_task_type, gpu_milli, 20);
  AT(lsched_task_type, model_mask, 24);
  AT(lsched_task_type, weight, 32);
}

static void layout_frag(void) {
  APPENDED(lsched_frag, LSCHED_FRAG_VERSION, 1, 48, 8);
  AT(lsched_frag, version, 0);
  AT(lsched_frag, amount, 8);
  AT(lsched_frag, rate, 16);
  AT(lsched_frag, idle_gpu_milli, 24);
  AT(lsched_frag, amount_weighted, 32);
  AT(lsched_frag, weight_total, 40);
}

static void layout_policy_ops(void) {
  APPENDED(lsched_policy_ops, LSCHED_POLICY_OPS_VERSION, 7, 136, 8);
  AT(lsched_policy_ops, version, 0);
  AT(lsched_policy_ops, name, 8);
  AT(lsched_policy_ops, description, 16);
  AT(lsched_policy_ops, state_size, 24);
  AT(lsched_policy_ops, init, 32);
  AT(lsched_policy_ops, fini, 40);
  AT(lsched_policy_ops, set_param, 48);
  AT(lsched_policy_ops, place, 56);
  AT(lsched_policy_ops, on_alloc, 64);
  AT(lsched_policy_ops, on_release, 72);
  AT(lsched_policy_ops, set_workload, 80);
  AT(lsched_policy_ops, plan_migrations, 88);
  AT(lsched_policy_ops, set_registry, 96);
  AT(lsched_policy_ops, on_node_change, 104);
  AT(lsched_policy_ops, plan_migrations_indexed, 112);
  AT(lsched_policy_ops, flags, 120);
  AT(lsched_policy_ops, flags_of, 128);
}

static void layout_mig_instance(void) {
  FIXED(lsched_mig_instance, 8, 4);
  AT(lsched_mig_instance, kind, 0);
  AT(lsched_mig_instance, start, 4);
}

static void layout_mig_profile(void) {
  APPENDED(lsched_mig_profile, LSCHED_MIG_PROFILE_VERSION, 1, 56, 8);
  AT(lsched_mig_profile, version, 0);
  AT(lsched_mig_profile, name, 8);
  AT(lsched_mig_profile, kind, 16);
  AT(lsched_mig_profile, profile_id, 20);
  AT(lsched_mig_profile, sm_count, 24);
  AT(lsched_mig_profile, memory_gib, 32);
  AT(lsched_mig_profile, memory_mib, 40);
  AT(lsched_mig_profile, verified, 48);
}

static void layout_mig_model(void) {
  APPENDED(lsched_mig_model, LSCHED_MIG_MODEL_VERSION, 1, 48, 8);
  AT(lsched_mig_model, version, 0);
  AT(lsched_mig_model, name, 8);
  AT(lsched_mig_model, aliases, 16);
  AT(lsched_mig_model, memory_gib, 24);
  AT(lsched_mig_model, nprofiles, 32);
  AT(lsched_mig_model, profiles, 40);
}

static void layout_mig_gpu_state(void) {
  APPENDED(lsched_mig_gpu_state, LSCHED_MIG_GPU_STATE_VERSION, 1, 168, 8);
  AT(lsched_mig_gpu_state, version, 0);
  AT(lsched_mig_gpu_state, dynamic, 4);
  AT(lsched_mig_gpu_state, ninstances, 8);
  AT(lsched_mig_gpu_state, instances, 12);
  AT(lsched_mig_gpu_state, in_use, 68);
  AT(lsched_mig_gpu_state, created, 96);
  AT(lsched_mig_gpu_state, slots, 152);
  AT(lsched_mig_gpu_state, slots_used, 156);
  AT(lsched_mig_gpu_state, slices_used, 160);
}

static void layout_mig_totals(void) {
  APPENDED(lsched_mig_totals, LSCHED_MIG_TOTALS_VERSION, 1, 184, 8);
  AT(lsched_mig_totals, version, 0);
  AT(lsched_mig_totals, gpus, 4);
  AT(lsched_mig_totals, slices, 8);
  AT(lsched_mig_totals, slices_used, 16);
  AT(lsched_mig_totals, in_use, 24);
  AT(lsched_mig_totals, idle, 72);
  AT(lsched_mig_totals, unusable, 120);
  AT(lsched_mig_totals, created, 168);
  AT(lsched_mig_totals, destroyed, 176);
}

static void layout_running(void) {
  /* 168 since request version 4 (0.2.0 as released: the request grew
   * before 0.2.0 shipped, so the running record keeps version 1). */
  APPENDED(lsched_running, LSCHED_RUNNING_VERSION, 1, 168, 8);
  AT(lsched_running, version, 0);
  AT(lsched_running, id, 8);
  AT(lsched_running, request, 16);
  AT_AFTER(lsched_running, parts, request, lsched_request, 0);
  AT_AFTER(lsched_running, nparts, request, lsched_request, 8);
  AT_AFTER(lsched_running, move_cost_s, request, lsched_request, 16);
  AT_AFTER(lsched_running, moves, request, lsched_request, 24);
}

static void layout_defrag_budget(void) {
  APPENDED(lsched_defrag_budget, LSCHED_DEFRAG_BUDGET_VERSION, 1, 24, 8);
  AT(lsched_defrag_budget, version, 0);
  AT(lsched_defrag_budget, max_moves, 4);
  AT(lsched_defrag_budget, max_moves_per_job, 8);
  AT(lsched_defrag_budget, expected_wait_s, 16);
}

static void layout_move(void) {
  APPENDED(lsched_move, LSCHED_MOVE_VERSION, 1, 112, 8);
  AT(lsched_move, version, 0);
  AT(lsched_move, index, 8);
  AT(lsched_move, from, 16);
  AT_AFTER(lsched_move, to, from, lsched_placement, 0);
}

static void layout_node(void) {
  GROWS(lsched_node, 96, 8);
  AT(lsched_node, name, 0);
  AT(lsched_node, cpu_cap, 8);
  AT(lsched_node, mem_cap, 16);
  AT(lsched_node, cpu_free, 24);
  AT(lsched_node, mem_free, 32);
  AT(lsched_node, gpu_count, 40);
  AT(lsched_node, model, 44);
  AT(lsched_node, mode, 48);
  AT(lsched_node, gpu_off, 52);
  AT(lsched_node, gpus_full_free, 56);
  AT(lsched_node, gpus_nonzero_free, 60);
  AT(lsched_node, max_gpu_free, 64);
  AT(lsched_node, gpu_free_sum, 72);
  AT(lsched_node, mig_off, 80);
  AT(lsched_node, mig_fit, 84);
  AT(lsched_node, state, 85);
  AT(lsched_node, features, 88);
}

static void layout_mig_gpu_view(void) {
  FIXED(lsched_mig_gpu_view, 16, 1);
  AT(lsched_mig_gpu_view, kind_at, 0);
  AT(lsched_mig_gpu_view, busy, 8);
  AT(lsched_mig_gpu_view, occ, 9);
  AT(lsched_mig_gpu_view, occ_busy, 10);
  AT(lsched_mig_gpu_view, busy_cs, 11);
  AT(lsched_mig_gpu_view, fit, 12);
  AT(lsched_mig_gpu_view, free_cs, 13);
  AT(lsched_mig_gpu_view, dynamic, 14);
  AT(lsched_mig_gpu_view, offered, 15);
}

static void layout_view(void) {
  APPENDED(lsched_view, LSCHED_VIEW_VERSION, 1, 80, 8);
  AT(lsched_view, version, 0);
  AT(lsched_view, n, 4);
  AT(lsched_view, ngpus, 8);
  AT(lsched_view, node_size, 16);
  AT(lsched_view, nodes, 24);
  AT(lsched_view, gpu_free, 32);
  AT(lsched_view, order, 40);
  AT(lsched_view, pos_of, 48);
  AT(lsched_view, max_cpu_cap, 56);
  AT(lsched_view, max_gpu_count, 64);
  AT(lsched_view, mig_ngpus, 68);
  AT(lsched_view, mig_gpus, 72);
}

static void layout_frag_type(void) {
  FIXED(lsched_frag_type, 24, 8);
  AT(lsched_frag_type, cpu, 0);
  AT(lsched_frag_type, w, 8);
  AT(lsched_frag_type, ti, 16);
  AT(lsched_frag_type, k, 20);
}

static void layout_frag_types(void) {
  APPENDED(lsched_frag_types, LSCHED_FRAG_TYPES_VERSION, 1, 304, 8);
  AT(lsched_frag_types, version, 0);
  AT(lsched_frag_types, W, 8);
  AT(lsched_frag_types, nthr, 16);
  AT(lsched_frag_types, thr, 24);
  AT(lsched_frag_types, ft, 32);
  AT(lsched_frag_types, moff, 40);
}

static void layout_frag_cache(void) {
  APPENDED(lsched_frag_cache, LSCHED_FRAG_CACHE_VERSION, 1, 64, 8);
  AT(lsched_frag_cache, version, 0);
  AT(lsched_frag_cache, n, 4);
  AT(lsched_frag_cache, nthr, 8);
  AT(lsched_frag_cache, F, 16);
  AT(lsched_frag_cache, cnt, 24);
  AT(lsched_frag_cache, small, 32);
  AT(lsched_frag_cache, sum, 40);
  AT(lsched_frag_cache, idle, 48);
  AT(lsched_frag_cache, idle_sum, 56);
}

/* ------------------------------------------------------------- _INIT */

/* Every _INIT macro: the version its struct's VERSION says, every other
 * member zero or NULL except the documented defaults. */
static void init_macros(void) {
  lsched_cluster_opts o = LSCHED_CLUSTER_OPTS_INIT, o2;
  MT_EQ(o.version, LSCHED_CLUSTER_OPTS_VERSION);
  memset(&o2, 0xAB, sizeof o2);
  MT_EQ(lsched_cluster_opts_init(&o2, LSCHED_CLUSTER_OPTS_VERSION), LSCHED_OK);
  MT_EQ(o2.version, o.version);
  MT_ASSERT(o2.allocator == o.allocator);
  MT_EQ(o2.check_invariants, o.check_invariants);

  lsched_node_spec ns = LSCHED_NODE_SPEC_INIT;
  MT_EQ(ns.version, LSCHED_NODE_SPEC_VERSION);
  MT_EQ(ns.gpu_model, -1);
  MT_EQ(ns.gpu_mode, LSCHED_GPU_SHARED);
  MT_ASSERT(ns.name == NULL && ns.mig_layout == NULL);
  MT_EQ(ns.cpu_milli + ns.memory_mib + ns.gpu_count + ns.mig_dynamic +
            ns.mig_layout_count + (int64_t)ns.features, 0);

  lsched_node_info ni = LSCHED_NODE_INFO_INIT;
  MT_EQ(ni.version, LSCHED_NODE_INFO_VERSION);
  lsched_totals t = LSCHED_TOTALS_INIT;
  MT_EQ(t.version, LSCHED_TOTALS_VERSION);
  MT_EQ(t.nodes + t.gpus + t.cpu_milli + t.gpu_milli_free, 0);
  lsched_request r = LSCHED_REQUEST_INIT;
  MT_EQ(r.version, LSCHED_REQUEST_VERSION);
  MT_EQ(lsched_request_validate(&r), LSCHED_OK);
  MT_EQ(r.speed_scope, LSCHED_SPEED_ANY);
  MT_ASSERT(r.speed == NULL && r.speed_user == NULL && r.node_filter == NULL);
  /* speed_scope: 0..2 from version 5; an older version never reads it. */
  r.speed_scope = LSCHED_SPEED_CONSTANT;
  MT_EQ(lsched_request_validate(&r), LSCHED_OK);
  r.speed_scope = 3;
  MT_EQ(lsched_request_validate(&r), LSCHED_EINVAL);
  r.speed_scope = -1;
  MT_EQ(lsched_request_validate(&r), LSCHED_EINVAL);
  r.version = 4;
  MT_EQ(lsched_request_validate(&r), LSCHED_OK);
  lsched_placement p = LSCHED_PLACEMENT_INIT;
  MT_EQ(p.version, LSCHED_PLACEMENT_VERSION);
  MT_EQ(p.node, -1);
  MT_EQ_U(p.gpu_mask, 0);
  lsched_observer ob = LSCHED_OBSERVER_INIT;
  MT_EQ(ob.version, LSCHED_OBSERVER_VERSION);
  MT_ASSERT(!ob.on_alloc && !ob.on_release && !ob.on_node_change);
  lsched_pool_spec ps = LSCHED_POOL_SPEC_INIT;
  MT_EQ(ps.version, LSCHED_POOL_SPEC_VERSION);
  MT_ASSERT(ps.hosts == NULL);
  MT_EQ(ps.gpus + ps.max_per_host + ps.nhosts + ps.keep_attached, 0);
  lsched_pool_info pin = LSCHED_POOL_INFO_INIT;
  MT_EQ(pin.version, LSCHED_POOL_INFO_VERSION);
  MT_EQ(pin.gpus + pin.free + pin.slots + pin.nhosts + pin.attached, 0);
  lsched_task_type tt = LSCHED_TASK_TYPE_INIT;
  MT_EQ(tt.version, LSCHED_TASK_TYPE_VERSION);
  MT_EQ_U(tt.weight, 1);
  lsched_frag fr = LSCHED_FRAG_INIT;
  MT_EQ(fr.version, LSCHED_FRAG_VERSION);
  lsched_policy_ops ops = LSCHED_POLICY_OPS_INIT;
  MT_EQ(ops.version, LSCHED_POLICY_OPS_VERSION);
  MT_ASSERT(!ops.name && !ops.place && !ops.on_node_change);
  lsched_allocator al = LSCHED_ALLOCATOR_INIT;
  MT_ASSERT(!al.alloc && !al.realloc && !al.free && !al.user);
  lsched_mig_profile mp = LSCHED_MIG_PROFILE_INIT;
  MT_EQ(mp.version, LSCHED_MIG_PROFILE_VERSION);
  lsched_mig_model mm = LSCHED_MIG_MODEL_INIT;
  MT_EQ(mm.version, LSCHED_MIG_MODEL_VERSION);
  lsched_mig_gpu_state gs = LSCHED_MIG_GPU_STATE_INIT;
  MT_EQ(gs.version, LSCHED_MIG_GPU_STATE_VERSION);
  lsched_mig_totals mt = LSCHED_MIG_TOTALS_INIT;
  MT_EQ(mt.version, LSCHED_MIG_TOTALS_VERSION);
  lsched_running run = LSCHED_RUNNING_INIT;
  MT_EQ(run.version, LSCHED_RUNNING_VERSION);
  MT_EQ(run.request.version, LSCHED_REQUEST_VERSION);
  MT_ASSERT(run.parts == NULL);
  lsched_defrag_budget b = LSCHED_DEFRAG_BUDGET_INIT;
  MT_EQ(b.version, LSCHED_DEFRAG_BUDGET_VERSION);
  MT_ASSERT(b.expected_wait_s < 0);
  lsched_move mv = LSCHED_MOVE_INIT;
  MT_EQ(mv.version, LSCHED_MOVE_VERSION);
  MT_EQ(mv.from.version, LSCHED_PLACEMENT_VERSION);
  MT_EQ(mv.to.node, -1);
  lsched_view v = LSCHED_VIEW_INIT;
  MT_EQ(v.version, LSCHED_VIEW_VERSION);
  lsched_frag_types ft = LSCHED_FRAG_TYPES_INIT;
  MT_EQ(ft.version, LSCHED_FRAG_TYPES_VERSION);
  lsched_frag_cache fc = LSCHED_FRAG_CACHE_INIT;
  MT_EQ(fc.version, LSCHED_FRAG_CACHE_VERSION);
}

/* -------------------------------------------------- run-time version */

static void version_check(void) {
  MT_EQ(lsched_version_number(), LSCHED_VERSION_NUMBER);
  MT_EQ(lsched_version_check(LSCHED_VERSION_NUMBER), LSCHED_OK);
  const unsigned maj = LSCHED_VERSION_MAJOR, min = LSCHED_VERSION_MINOR;
  /* Any patch level of the same major.minor. */
  MT_EQ(lsched_version_check(maj * 10000 + min * 100 + 99), LSCHED_OK);
  MT_EQ(lsched_version_check(maj * 10000 + min * 100), LSCHED_OK);
  /* Another major never. */
  MT_EQ(lsched_version_check((maj + 1) * 10000 + min * 100), LSCHED_EVERSION);
  /* A newer minor never (its header may use what this library lacks). */
  MT_EQ(lsched_version_check(maj * 10000 + (min + 1) * 100), LSCHED_EVERSION);
  /* An older minor: only from 1.0 (0.x minors change the ABI). */
  if (min > 0)
    MT_EQ(lsched_version_check(maj * 10000 + (min - 1) * 100),
          maj == 0 ? LSCHED_EVERSION : LSCHED_OK);
}

/* ------------------------------------ structs the library fills */

/* A cluster with one shared and one dynamic MIG node, a job on each. */
static lsched_cluster *small_cluster(lsched_policy **pol,
                                     lsched_registry **reg) {
  lsched_cluster *c = NULL;
  MT_EQ(lsched_cluster_create(&c, NULL), LSCHED_OK);
  int a100 = lsched_cluster_model_id(c, "A100-SXM4-80GB", 1);
  MT_EQ(lsched_mig_use_builtin(c, a100, NULL), LSCHED_OK);
  lsched_node_spec n = LSCHED_NODE_SPEC_INIT;
  n.name = "s0";
  n.cpu_milli = 16000;
  n.memory_mib = 64000;
  n.gpu_count = 4;
  n.gpu_model = a100;
  MT_EQ(lsched_cluster_add_node(c, &n, NULL), LSCHED_OK);
  n.name = "m0";
  n.gpu_mode = LSCHED_GPU_MIG;
  n.mig_dynamic = 1;
  MT_EQ(lsched_cluster_add_node(c, &n, NULL), LSCHED_OK);
  MT_EQ(lsched_registry_create(reg, NULL), LSCHED_OK);
  MT_EQ(lsched_registry_add_builtins(*reg), LSCHED_OK);
  MT_EQ(lsched_policy_create(pol, c, lsched_registry_find(*reg, "best-fit")),
        LSCHED_OK);
  return c;
}

/* The library writes a caller's struct up to its version and never past
 * it: bytes behind the struct stay as they were, and a version outside
 * 1..current is read as 1 and reported back as such. */
struct guarded {
  unsigned char s[512];
};
#define GUARD 0xA5
static void guard_init(struct guarded *g, unsigned version) {
  memset(g, GUARD, sizeof *g);
  memcpy(g->s, &version, sizeof version);
}
static int guard_intact(const struct guarded *g, size_t from) {
  for (size_t i = from; i < sizeof g->s; i++)
    if (g->s[i] != GUARD)
      return 0;
  return 1;
}
static unsigned guard_version(const struct guarded *g) {
  unsigned v;
  memcpy(&v, g->s, sizeof v);
  return v;
}

static void fills_caller_version(void) {
  lsched_policy *pol;
  lsched_registry *reg;
  lsched_cluster *c = small_cluster(&pol, &reg);
  lsched_request r = LSCHED_REQUEST_INIT;
  r.cpu_milli = 1000;
  r.gpu_count = 1;
  r.gpu_milli = 500;
  lsched_placement p;
  memset(&p, 0xFF, sizeof p); /* garbage, version included */
  MT_EQ(lsched_policy_place(pol, &r, &p), LSCHED_OK);
  MT_EQ(p.version, LSCHED_PLACEMENT_VERSION);
  MT_EQ(lsched_alloc(c, &p), LSCHED_OK);
  lsched_request mr = LSCHED_REQUEST_INIT;
  mr.gpu_count = 1;
  mr.mig_kind = lsched_mig_kind_from_name("3g.40gb");
  lsched_placement mp;
  memset(&mp, 0xFF, sizeof mp);
  MT_EQ(lsched_pick_gpus(c, 1, &mr, LSCHED_PICK_LOWEST, &mp), LSCHED_OK);
  MT_EQ(mp.version, LSCHED_PLACEMENT_VERSION);
  MT_EQ(mp.mig_kind, LSCHED_MIG_3G);
  MT_EQ(lsched_alloc(c, &mp), LSCHED_OK);

  const unsigned versions[] = {1, 0, 9999, 0xFFFFFFFFu};
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    unsigned v = versions[i];
    struct guarded g;
    guard_init(&g, v);
    MT_EQ(lsched_cluster_node_info(c, 0, (lsched_node_info *)(void *)g.s),
          LSCHED_OK);
    MT_EQ(guard_version(&g), 1);
    MT_ASSERT(guard_intact(&g, sizeof(lsched_node_info)));
    lsched_node_info ni;
    memcpy(&ni, g.s, sizeof ni);
    MT_EQ(ni.cpu_free, 15000);
    MT_EQ(ni.gpu_milli_free, 3500);

    guard_init(&g, v);
    lsched_cluster_totals(c, (lsched_totals *)(void *)g.s);
    MT_EQ(guard_version(&g), 1);
    MT_ASSERT(guard_intact(&g, sizeof(lsched_totals)));
    lsched_totals t;
    memcpy(&t, g.s, sizeof t);
    MT_EQ(t.nodes, 2);
    MT_EQ(t.gpu_milli, 8000);
    MT_EQ(t.gpu_milli_free, 8000 - 500 - 428);

    guard_init(&g, v);
    MT_EQ(lsched_mig_gpu_get(c, 1, 0, (lsched_mig_gpu_state *)(void *)g.s),
          LSCHED_OK);
    MT_EQ(guard_version(&g), 1);
    MT_ASSERT(guard_intact(&g, sizeof(lsched_mig_gpu_state)));
    lsched_mig_gpu_state st;
    memcpy(&st, g.s, sizeof st);
    MT_EQ(st.ninstances, 1);
    MT_EQ(st.instances[0].kind, LSCHED_MIG_3G);

    guard_init(&g, v);
    lsched_mig_totals_get(c, (lsched_mig_totals *)(void *)g.s);
    MT_EQ(guard_version(&g), 1);
    MT_ASSERT(guard_intact(&g, sizeof(lsched_mig_totals)));
    lsched_mig_totals mt;
    memcpy(&mt, g.s, sizeof mt);
    MT_EQ(mt.gpus, 4);
    MT_EQ(mt.slices_used, 3);

    lsched_workload *w;
    MT_EQ(lsched_workload_create(&w, NULL), LSCHED_OK);
    lsched_task_type tt = LSCHED_TASK_TYPE_INIT;
    tt.version = v; /* read as version 1 whatever it says */
    tt.gpu_count = 1;
    tt.gpu_milli = 1000;
    MT_EQ(lsched_workload_add(w, &tt), LSCHED_OK);
    MT_EQ(lsched_workload_at(w, 0)->version, LSCHED_TASK_TYPE_VERSION);
    guard_init(&g, v);
    MT_EQ(lsched_frag_cluster(c, w, (lsched_frag *)(void *)g.s), LSCHED_OK);
    MT_EQ(guard_version(&g), 1);
    MT_ASSERT(guard_intact(&g, sizeof(lsched_frag)));
    lsched_frag fr, ref = LSCHED_FRAG_INIT;
    memcpy(&fr, g.s, sizeof fr);
    MT_EQ(lsched_frag_cluster(c, w, &ref), LSCHED_OK);
    MT_EQ(fr.amount_weighted, ref.amount_weighted);
    MT_EQ(fr.idle_gpu_milli, 3500 + 4000 - 428);
    MT_ASSERT(fr.amount == ref.amount && fr.rate == ref.rate);
    lsched_workload_destroy(w);
  }
  MT_EQ(lsched_release(c, &mp), LSCHED_OK);
  MT_EQ(lsched_release(c, &p), LSCHED_OK);
  MT_EQ(lsched_cluster_check(c), LSCHED_OK);
  lsched_policy_destroy(pol);
  lsched_registry_destroy(reg);
  lsched_cluster_destroy(c);
}

int main(void) {
  mt_begin("test_abi");
  if (LAYOUT_FROZEN) {
    MT_RUN(layout_allocator);
    MT_RUN(layout_cluster_opts);
    MT_RUN(layout_node_spec);
    MT_RUN(layout_node_info);
    MT_RUN(layout_totals);
    MT_RUN(layout_pools);
    MT_RUN(layout_request);
    MT_RUN(layout_placement);
    MT_RUN(layout_observer);
    MT_RUN(layout_task_type);
    MT_RUN(layout_frag);
    MT_RUN(layout_policy_ops);
    MT_RUN(layout_mig_instance);
    MT_RUN(layout_mig_profile);
    MT_RUN(layout_mig_model);
    MT_RUN(layout_mig_gpu_state);
    MT_RUN(layout_mig_totals);
    MT_RUN(layout_running);
    MT_RUN(layout_defrag_budget);
    MT_RUN(layout_move);
    MT_RUN(layout_node);
    MT_RUN(layout_mig_gpu_view);
    MT_RUN(layout_view);
    MT_RUN(layout_frag_type);
    MT_RUN(layout_frag_types);
    MT_RUN(layout_frag_cache);
  } else {
    printf("note: struct layouts are frozen for LP64 x86-64/aarch64 only\n");
  }
  MT_RUN(init_macros);
  MT_RUN(version_check);
  MT_RUN(fills_caller_version);
  return mt_finish();
}
